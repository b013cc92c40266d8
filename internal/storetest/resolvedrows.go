package storetest

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/corpus"
	"github.com/dsh-project/dsh/internal/projcache"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/subagent"
)

// testResolvedRowsEqualLadder: the resolved listing rows (migration 0014)
// are the ladder's answer. After every kind of write, damage and repair —
// create, append, import clean, torn and damaged, a repairing Load, a
// resume, checkpoints put, deleted and cleared, a registry fold recorded,
// logs unverified, a grandchild created — every row the store gives as
// current equals a full recomputation (the children enumerated by
// ChildrenOf, rung 2 from CheckpointsOf, rung 3 from the logs), before and
// after RefreshResolvedRows; after it every row is current, and the
// listing the rows serve equals the ladder's, on every parent. A row
// stamped by another resolver is never read.
func testResolvedRowsEqualLadder(t *testing.T, e *env) {
	src, ok := e.b.(backend.ResolvedRowReader)
	if !ok {
		t.Skipf("%T keeps no resolved rows", e.b)
	}
	newForest(t, e)
	addCatalogs(t, e)
	stamp := subagent.ResolvedRowsStamp(subagent.NewRegistry())
	parents := func() []string {
		var ids []string
		err := e.b.ListHeaders(e.ctx, func(h session.Header) error {
			ids = append(ids, h.ID)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return append(ids, "nobody")
	}
	check := func(step string, refresh bool) {
		t.Helper()
		if refresh {
			if err := subagent.RefreshResolvedRows(e.ctx, e.b, parents()); err != nil {
				t.Fatalf("%s: RefreshResolvedRows: %v", step, err)
			}
			step += ", refreshed"
		}
		checkCatalogViews(t, e, step, refresh, parents())
		for _, parent := range parents() {
			want := fullLadder(t, e, parent)
			byID := map[string]subagent.Row{}
			for _, r := range want {
				byID[r.ID] = r
			}
			var stored []backend.ResolvedRow
			err := src.ResolvedRows(e.ctx, parent, func(r backend.ResolvedRow) error {
				stored = append(stored, r)
				return nil
			})
			if err != nil {
				t.Fatalf("%s: ResolvedRows(%s): %v", step, parent, err)
			}
			if len(stored) != len(want) {
				t.Errorf("%s: ResolvedRows(%s) gives %d rows, the ladder %d", step, parent, len(stored), len(want))
			}
			for _, r := range stored {
				w, listed := byID[r.ID]
				switch {
				case !listed:
					t.Errorf("%s: ResolvedRows(%s) gives %s, which the ladder does not list", step, parent, r.ID)
				case r.Resolver == "" && refresh:
					t.Errorf("%s: row %s is still stale", step, r.ID)
				case r.Resolver == stamp && !sameResolved(r, w):
					t.Errorf("%s: row %s is current as %s; the ladder gives %s", step, r.ID, resolvedString(r), rowString(w))
				}
			}
			got, err := subagent.NewStoreLister(e.b, e.b, 0).ListChildren(e.ctx, parent)
			if err != nil {
				t.Fatalf("%s: ListChildren(%s): %v", step, parent, err)
			}
			if len(got) != 0 || len(want) != 0 {
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s: ListChildren(%s) = %v\nthe ladder gives %v", step, parent, rowStrings(got), rowStrings(want))
				}
			}
		}
	}
	both := func(step string) {
		t.Helper()
		check(step, false)
		check(step, true)
	}
	both("the forest")

	next := func(id string) int64 {
		t.Helper()
		in := e.inspect(e.b, id)
		return int64(len(in.Events))
	}
	if err := e.b.Append(e.ctx, "c1", next("c1"), turn(next("c1"), 1)); err != nil {
		t.Fatalf("append c1: %v", err)
	}
	both("append")

	// A later descriptor appended: the identity changes, so must the row.
	d := descriptor(next("c0"), 2)
	d.Data = json.RawMessage(`{"version":2,"mode":"one-shot","provider":"spawn"}`)
	if err := e.b.Append(e.ctx, "c0", next("c0"), []session.Event{d}); err != nil {
		t.Fatalf("append c0: %v", err)
	}
	both("append a descriptor")

	// A catalog fact appended to a V4 parent: its own log, which its
	// children's rows never read.
	if err := e.b.Append(e.ctx, "q", next("q"), []session.Event{catalogFact(next("q"),
		`{"version":0,"childId":"qn","childCreatedAt":87,"mode":"continuable","label":"late"}`)}); err != nil {
		t.Fatalf("append q: %v", err)
	}
	both("a catalog fact appended")

	// The missing child arrives, damaged; then a child of it.
	qmDamage := backend.DamagedLog{FromSeq: 1, Reason: "unparsable committed event at line 2", Encoding: "jsonl-text", Raw: []byte("{not json}\n")}
	if _, err := e.b.ImportDamagedSession(e.ctx, child("qm", "q", 83), []session.Event{descriptor(0, 2)}, qmDamage); err != nil {
		t.Fatal(err)
	}
	both("a cataloged child imported damaged")
	e.create(child("qn", "q", 87), []session.Event{descriptor(0, 3)})
	both("a cataloged child created")

	if _, err := e.b.Load(e.ctx, "t1"); err != nil {
		t.Fatalf("load t1: %v", err)
	}
	both("a repairing load")

	// resume: the repairing read, then a turn appended.
	if _, err := e.b.Load(e.ctx, "m1"); err != nil {
		t.Fatalf("load m1: %v", err)
	}
	if err := e.b.Append(e.ctx, "m1", next("m1"), turn(next("m1"), 1)); err != nil {
		t.Fatalf("append m1: %v", err)
	}
	both("resume")

	h, err := e.b.Header(e.ctx, "c2")
	if err != nil {
		t.Fatal(err)
	}
	putIdentity(t, e, h, "c2-cached")
	both("a checkpoint put")

	if err := e.b.DeleteCheckpoint(e.ctx, "c1"); err != nil {
		t.Fatal(err)
	}
	both("a checkpoint deleted")

	if rf, ok := e.b.(backend.RegistryFoldRecorder); ok {
		if err := rf.RecordRegistryFold(e.ctx, "c1", []byte("unit@1\n{\"seq\":0}")); err != nil {
			t.Fatal(err)
		}
		both("a registry fold recorded")
	}
	if u, ok := e.b.(backend.Unverifier); ok {
		if err := u.UnverifyChildren(e.ctx, "p"); err != nil {
			t.Fatal(err)
		}
		both("logs unverified")
	}

	e.create(child("g2", "c1", 70), []session.Event{descriptor(0, 2)})
	both("a grandchild created")

	if _, err := e.b.ImportSession(e.ctx, child("n1", "p", 71), []session.Event{descriptor(0, 2)}, nil); err != nil {
		t.Fatal(err)
	}
	tail := &backend.TornTail{FromSeq: 1, Reason: "unterminated line", Raw: []byte(`{"type":"turn/st`)}
	if _, err := e.b.ImportSession(e.ctx, child("n2", "p", 71), []session.Event{descriptor(0, 2)}, tail); err != nil {
		t.Fatal(err)
	}
	damage := backend.DamagedLog{FromSeq: 1, Reason: "unparsable committed event at line 2", Encoding: "jsonl-text", Raw: []byte("{not json}\n")}
	if _, err := e.b.ImportDamagedSession(e.ctx, child("n3", "p", 72), []session.Event{descriptor(0, 2)}, damage); err != nil {
		t.Fatal(err)
	}
	both("imports clean, torn and damaged")

	if _, err := e.b.ClearCheckpoints(e.ctx); err != nil {
		t.Fatal(err)
	}
	both("checkpoints cleared")

	// A row another resolver stamped (another dsh's units or rules) is not
	// read: its listing is the ladder's whatever the row says.
	err = e.b.Update(e.ctx, func(tx backend.Store) error {
		w := tx.(backend.ResolvedRowWriter)
		if _, err := w.LockResolvedRows(e.ctx, []string{"c1"}, ""); err != nil {
			return err
		}
		return w.PutResolvedRows(e.ctx, []backend.ResolvedRow{{ID: "c1", Resolver: "another dsh", Kind: "diagnostic", Reason: "unavailable"}})
	})
	if err != nil {
		t.Fatal(err)
	}
	check("a row of another resolver", false)
	check("a row of another resolver", true)
}

// fullLadder is the listing of parent's children recomputed the slow way:
// enumerated by ChildrenOf and resolved by the ladder (rung 2 through
// CheckpointsOf, rung 3 reading the logs), nothing read from resolved rows.
func fullLadder(t *testing.T, e *env, parent string) []subagent.Row {
	t.Helper()
	c, err := corpus.Load(e.ctx, e.b, e.b)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := c.Children(e.ctx, parent)
	if err != nil {
		t.Fatal(err)
	}
	res, err := subagent.NewStoreLister(e.b, e.b, 0).ResolveRecords(e.ctx, recs, corpus.ScopeChildren)
	if err != nil {
		t.Fatalf("ladder of %s: %v", parent, err)
	}
	var rows []subagent.Row
	for _, r := range res {
		if r.Row != nil {
			rows = append(rows, *r.Row)
		}
	}
	return rows
}

// sameResolved reports whether a stored row says what the ladder's row
// says.
func sameResolved(r backend.ResolvedRow, w subagent.Row) bool {
	got := subagent.Row{Kind: subagent.RowKind(r.Kind), ID: r.ID}
	if got.Kind == subagent.KindChild {
		got.Mode, got.Label, got.Activity, got.HasChildren = subagent.Mode(r.Mode), r.Label, subagent.ActivityInactive, r.HasChildren
	} else {
		got.Reason = subagent.Reason(r.Reason)
	}
	return reflect.DeepEqual(got, w)
}

// putIdentity writes h's checkpoint record as dsh's writer does, holding
// the identity of a continuable descriptor labelled label.
func putIdentity(t *testing.T, e *env, h session.Header, label string) {
	t.Helper()
	reg := subagent.NewRegistry()
	fold := reg.NewFold()
	fold.Apply(session.Event{Type: session.TypeDescriptor, Seq: 0, Time: 1,
		Data: json.RawMessage(fmt.Sprintf(`{"version":2,"mode":"continuable","provider":"spawn","label":%q}`, label))})
	cp, err := fold.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	if err := projcache.NewCache(e.b, reg).Put(e.ctx, h, 0, cp); err != nil {
		t.Fatalf("checkpoint %s: %v", h.ID, err)
	}
}

func rowString(r subagent.Row) string {
	label := "<absent>"
	if r.Label != nil {
		label = fmt.Sprintf("%q", *r.Label)
	}
	return fmt.Sprintf("{%s %s reason=%s mode=%s label=%s activity=%s has=%v}", r.Kind, r.ID, r.Reason, r.Mode, label, r.Activity, r.HasChildren)
}

func rowStrings(rows []subagent.Row) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = rowString(r)
	}
	return out
}

func resolvedString(r backend.ResolvedRow) string {
	label := "<absent>"
	if r.Label != nil {
		label = fmt.Sprintf("%q", *r.Label)
	}
	return fmt.Sprintf("{%s %s reason=%s mode=%s label=%s has=%v by %q}", r.Kind, r.ID, r.Reason, r.Mode, label, r.HasChildren, r.Resolver)
}
