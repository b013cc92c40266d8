package subagent

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/sqlitepersist"
)

func openTestStore(t *testing.T) *sqlitepersist.Store {
	t.Helper()
	st, err := sqlitepersist.Open(context.Background(), filepath.Join(t.TempDir(), "dsh.db"), sqlitepersist.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func childHeader(id, parent string, createdAt int64) session.Header {
	return session.Header{ID: id, CreatedAt: createdAt, Cwd: strp("/work"), ParentSession: strp(parent), Origin: strp(session.OriginSubagent)}
}

func descriptorEvent(seq int64, payload string) session.Event {
	return session.Event{Type: session.TypeDescriptor, Seq: seq, Time: 1, Data: json.RawMessage(payload)}
}

// A store-backed listing resolves a valid child through a cold read, a
// descriptor-less child as corrupt, and an ordinary fork not at all.
func TestStoreListerColdRows(t *testing.T) {
	ctx := context.Background()
	st := openTestStore(t)
	if err := st.CreateSession(ctx, session.Header{ID: "parent", CreatedAt: 1, Cwd: strp("/work")}, nil); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateSession(ctx, childHeader("b-child", "parent", 2), []session.Event{
		descriptorEvent(0, `{"version":2,"mode":"continuable","provider":"spawn","label":"work"}`),
	}); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateSession(ctx, childHeader("a-bare", "parent", 2), []session.Event{
		{Type: session.TypeTurnStart, Seq: 0, Time: 1, Data: json.RawMessage(`{"turn":1}`)},
	}); err != nil {
		t.Fatal(err)
	}
	fork := session.Header{ID: "fork", CreatedAt: 3, Cwd: strp("/work"), ParentSession: strp("parent")}
	if err := st.CreateSession(ctx, fork, nil); err != nil {
		t.Fatal(err)
	}
	rows, err := NewStoreLister(st, nil, 0).ListChildren(ctx, "parent")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 {
		t.Fatalf("rows = %+v, want 2", rows)
	}
	if rows[0].ID != "a-bare" || rows[0].Kind != KindDiagnostic || rows[0].Reason != ReasonCorrupt {
		t.Errorf("first row = %+v, want a-bare corrupt", rows[0])
	}
	if rows[1].ID != "b-child" || rows[1].Kind != KindChild || rows[1].Mode != ModeContinuable || *rows[1].Label != "work" || rows[1].Activity != ActivityInactive {
		t.Errorf("second row = %+v, want b-child continuable work inactive", rows[1])
	}
	if rows, err := NewStoreLister(st, nil, 0).ListChildren(ctx, "no-such-parent"); err != nil || len(rows) != 0 {
		t.Errorf("unknown parent: rows %v err %v, want none", rows, err)
	}
}
