package pgstore

import (
	"context"
	"testing"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/pgtest"
)

// A read failure recorded by an import (migration 0007) is voided by every
// change that could change what a read of the log gives, as verified is;
// another session's record stays.
func TestTriggersClearReadFailureOnOutsideChanges(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: one database per outside change (about 3 s); go test ./... runs it")
	}
	ctx := context.Background()
	b := (&events{}).turnStart("one").answer("a").turnStart("two").answer("b")
	invalid := b.list
	invalid[1].SurfaceOp = nil
	changes := map[string]struct{ id, sql string }{
		"update event data":    {"s", `UPDATE events SET data = '{"turn":1,"reason":{"kind":"blocked"}}' WHERE session_id = 's' AND seq = 5`},
		"insert a row":         {"s", `INSERT INTO events (session_id, seq, type, time, data) VALUES ('s', 100, 'step/end', 0, '{}')`},
		"delete a row":         {"s", `DELETE FROM events WHERE session_id = 's' AND seq = 1`},
		"update header":        {"s", `UPDATE sessions SET cwd = '/moved' WHERE id = 's'`},
		"update the torn tail": {"s", `UPDATE torn_tails SET from_seq = 5 WHERE session_id = 's'`},
		"delete the torn tail": {"s", `DELETE FROM torn_tails WHERE session_id = 's'`},
		"update damaged rest":  {"d", `UPDATE damaged_logs SET raw = '\x00' WHERE session_id = 'd'`},
		"delete damaged rest":  {"d", `DELETE FROM damaged_logs WHERE session_id = 'd'`},
	}
	url := pgtest.NewDatabase(t)
	for name, change := range changes {
		t.Run(name, func(t *testing.T) {
			s := openT(t, url)
			if _, err := s.pool.Exec(ctx, "TRUNCATE sessions CASCADE"); err != nil {
				t.Fatal(err)
			}
			tail := &backend.TornTail{FromSeq: int64(len(invalid)), Reason: "unterminated line", Raw: []byte(`{"type":"st`)}
			if _, err := s.ImportSession(ctx, header("s", nil, 1), invalid, tail); err != nil {
				t.Fatal(err)
			}
			if _, err := s.ImportSession(ctx, header("other", nil, 2), invalid, nil); err != nil {
				t.Fatal(err)
			}
			damage := backend.DamagedLog{FromSeq: 2, Reason: "unparsable committed event at line 3", Encoding: "jsonl-text", Raw: []byte("{not json}\n")}
			if _, err := s.ImportDamagedSession(ctx, header("d", nil, 3), invalid[:2], damage); err != nil {
				t.Fatal(err)
			}
			ids := []string{"s", "other", "d"}
			if got, err := s.ColdVerdicts(ctx, ids); err != nil || len(got) != 3 {
				t.Fatalf("ColdVerdicts before the change = %v, %v; want all three", got, err)
			}
			if _, err := s.pool.Exec(ctx, change.sql); err != nil {
				t.Fatal(err)
			}
			got, err := s.ColdVerdicts(ctx, ids)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := got[change.id]; ok {
				t.Errorf("%s's read failure still recorded after %q", change.id, change.sql)
			}
			if _, ok := got["other"]; !ok {
				t.Error("another session lost its recorded read failure")
			}
		})
	}
}
