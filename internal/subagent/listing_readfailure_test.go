package subagent

import (
	"errors"
	"strings"
	"testing"

	"github.com/dsh-project/dsh/internal/session"
)

// A log the store recorded as unreadable when it imported it lists as
// unavailable from that record (its log is not read and validated again),
// and the record is voided by any later change to the log: once a foreign
// write repairs the log, the next listing reads it and shows the child.
func TestRecordedReadFailureListsUnavailableUntilTheLogChanges(t *testing.T) {
	c := newCatalog(t)
	for _, id := range []string{"broken-a", "broken-b"} {
		events := childEvents(desc("fixed " + id)).events[:3]
		events[1].SurfaceOp = nil
		c.authorInvalid(id, events)
	}
	l := NewStoreLister(c.st, c.st, 0)
	res, err := l.ResolveChildren(c.ctx, "parent")
	if err != nil {
		t.Fatal(err)
	}
	expectRows(t, rowsOf(res), nil, "broken-a diagnostic unavailable", "broken-b diagnostic unavailable")
	for _, r := range res {
		// A read would fail with the validation error itself; the record
		// carries its text only.
		var invalid *session.ValidationError
		if errors.As(r.Cause, &invalid) || !strings.Contains(r.Cause.Error(), "failed validation") {
			t.Errorf("cause %v: want the recorded validation failure, not a read", r.Cause)
		}
	}

	c.exec(`UPDATE events SET surface_op = '"append"' WHERE session_id = 'broken-b' AND seq = 1`)
	res, err = l.ResolveChildren(c.ctx, "parent")
	expectRows(t, rowsOf(res), err, "broken-a diagnostic unavailable", `broken-b continuable "fixed broken-b" inactive`)
}
