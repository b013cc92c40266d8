package sqlitepersist

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/sqlstore"
)

func childHeader(id, parent string, createdAt int64, subagent bool) session.Header {
	h := rootHeader(id)
	h.CreatedAt = createdAt
	h.ParentSession = ptr(parent)
	if subagent {
		h.Origin, h.DelegationDepth = ptr(session.OriginSubagent), ptr(int64(1))
	} else {
		h.SeedLength = ptr(int64(0))
	}
	return h
}

func collectIDs(t *testing.T, list func(fn func(session.Header) error) error) []string {
	t.Helper()
	var ids []string
	if err := list(func(h session.Header) error { ids = append(ids, h.ID); return nil }); err != nil {
		t.Fatal(err)
	}
	return ids
}

func TestChildrenOfOrdersByCreatedAtThenID(t *testing.T) {
	ctx := context.Background()
	s, _ := openStore(t)
	// Inserted out of order, interleaved with another parent's children.
	for _, h := range []session.Header{
		childHeader("c-late", "p", 300, true),
		childHeader("x-1", "other", 100, true),
		childHeader("c-b", "p", 200, false),
		childHeader("c-a", "p", 200, true),
		rootHeader("p"),
		childHeader("c-early", "p", 100, true),
		childHeader("grandchild", "c-a", 400, true),
	} {
		if err := s.CreateSession(ctx, h, nil); err != nil {
			t.Fatal(err)
		}
	}
	got := collectIDs(t, func(fn func(session.Header) error) error { return s.ChildrenOf(ctx, "p", fn) })
	if want := []string{"c-early", "c-a", "c-b", "c-late"}; !reflect.DeepEqual(got, want) {
		t.Errorf("ChildrenOf(p) = %v, want %v", got, want)
	}
	if got := collectIDs(t, func(fn func(session.Header) error) error { return s.ChildrenOf(ctx, "nobody", fn) }); len(got) != 0 {
		t.Errorf("ChildrenOf(nobody) = %v", got)
	}
	// The headers come back whole, straight from the covering index.
	var first session.Header
	stop := errors.New("stop")
	err := s.ChildrenOf(ctx, "p", func(h session.Header) error { first = h; return stop })
	if !errors.Is(err, stop) {
		t.Errorf("ChildrenOf did not return the callback's error: %v", err)
	}
	if want := childHeader("c-early", "p", 100, true); !reflect.DeepEqual(first, want) {
		t.Errorf("first child %+v, want %+v", first, want)
	}

	for parent, want := range map[string]bool{"p": true, "other": true, "c-a": true, "c-b": false, "nobody": false} {
		if got, err := s.HasSubagentChild(ctx, parent); err != nil || got != want {
			t.Errorf("HasSubagentChild(%s) = %v, %v; want %v", parent, got, err, want)
		}
	}
	onlyForks := rootHeader("fork-parent")
	if err := s.CreateSession(ctx, onlyForks, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateSession(ctx, childHeader("f1", "fork-parent", 1, false), nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.HasSubagentChild(ctx, "fork-parent"); got {
		t.Error("a parent with only ordinary forks reports a subagent child")
	}
	// SubagentParents is HasSubagentChild for many ids in one query.
	parents, err := s.SubagentParents(ctx, []string{"p", "other", "c-a", "c-b", "nobody", "fork-parent"})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]bool{"p": true, "other": true, "c-a": true}; !reflect.DeepEqual(parents, want) {
		t.Errorf("SubagentParents = %v, want %v", parents, want)
	}
}

func TestChildLookupsUseTheirIndexes(t *testing.T) {
	ctx := context.Background()
	s, _ := openStore(t)
	for query, index := range map[string]string{
		"SELECT " + sqlstore.HeaderColumns + " FROM sessions WHERE parent_session = ? ORDER BY created_at, id": "COVERING INDEX sessions_by_parent",
		"SELECT EXISTS (SELECT 1 FROM sessions WHERE parent_session = ? AND origin = 'subagent')":              "sessions_subagent_children",
	} {
		var plan strings.Builder
		dumpQuery(t, ctx, s, &plan, "EXPLAIN QUERY PLAN "+query, "p")
		if !strings.Contains(plan.String(), index) || strings.Contains(plan.String(), "TEMP B-TREE") {
			t.Errorf("plan for %q does not use %s without sorting:\n%s", query, index, plan.String())
		}
	}
}

func TestListHeadersStreamsInInsertionOrder(t *testing.T) {
	ctx := context.Background()
	s, _ := openStore(t)
	ids := []string{"zeta", "alpha", "mid", "beta"}
	for i, id := range ids {
		h := rootHeader(id)
		h.CreatedAt = int64(100 - i)
		if err := s.CreateSession(ctx, h, nil); err != nil {
			t.Fatal(err)
		}
	}
	got := collectIDs(t, func(fn func(session.Header) error) error { return s.ListHeaders(ctx, fn) })
	if !reflect.DeepEqual(got, ids) {
		t.Errorf("ListHeaders = %v, want insertion order %v", got, ids)
	}
	n := 0
	stop := errors.New("enough")
	err := s.ListHeaders(ctx, func(session.Header) error { n++; return stop })
	if !errors.Is(err, stop) || n != 1 {
		t.Errorf("ListHeaders after the callback failed: %d calls, %v", n, err)
	}
}

func TestViewSeesOneState(t *testing.T) {
	ctx := context.Background()
	s, _ := openStore(t)
	b := newLog().completeTurn("one")
	for _, id := range []string{"a", "b"} {
		if err := s.CreateSession(ctx, rootHeader(id), b.events); err != nil {
			t.Fatal(err)
		}
	}
	err := s.view(ctx, func(view *Store) error {
		before, err := view.Inspect(ctx, "a")
		if err != nil {
			return err
		}
		// A write committed by another connection meanwhile …
		if err := s.Append(ctx, "a", int64(len(b.events)), continueFrom(b.events).turnStart().events); err != nil {
			return err
		}
		// … is not visible in the snapshot, also not while a listing streams.
		return view.ListHeaders(ctx, func(h session.Header) error {
			ins, err := view.Inspect(ctx, h.ID)
			if err != nil {
				return err
			}
			if len(ins.Events) != len(before.Events) {
				t.Errorf("snapshot of %s sees %d events, want %d", h.ID, len(ins.Events), len(before.Events))
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	ins, err := s.Inspect(ctx, "a")
	if err != nil || len(ins.Events) != len(b.events)+1 {
		t.Errorf("after the snapshot: %d events, %v", len(ins.Events), err)
	}
	if err := s.view(ctx, func(view *Store) error {
		return view.CreateSession(ctx, rootHeader("c"), nil)
	}); err == nil {
		t.Error("a write inside a read snapshot succeeded")
	}
}

func TestUpdateIsAtomicAndNestsFailedWrites(t *testing.T) {
	ctx := context.Background()
	s, _ := openStore(t)
	boom := errors.New("boom")
	err := s.update(ctx, func(tx *Store) error {
		if err := tx.CreateSession(ctx, rootHeader("gone"), newLog().completeTurn("x").events); err != nil {
			return err
		}
		if _, err := tx.Querier().ExecContext(ctx, "CREATE TABLE scratch (x)"); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Update returned %v", err)
	}
	if _, err := s.Header(ctx, "gone"); !errors.Is(err, backend.ErrNotFound) {
		t.Errorf("rolled-back session exists: %v", err)
	}
	if _, err := s.Querier().ExecContext(ctx, "SELECT * FROM scratch"); err == nil {
		t.Error("rolled-back table exists")
	}

	// A refused write inside a transaction leaves nothing behind while the
	// transaction goes on and commits.
	b := newLog().completeTurn("x")
	err = s.update(ctx, func(tx *Store) error {
		if err := tx.CreateSession(ctx, rootHeader("kept"), b.events); err != nil {
			return err
		}
		bad := continueFrom(b.events).turnStart().events
		bad[0].Seq = 100
		if err := tx.Append(ctx, "kept", int64(len(b.events)), bad); err == nil {
			t.Error("invalid append inside Update succeeded")
		}
		if err := tx.CreateSession(ctx, rootHeader("kept"), nil); !errors.Is(err, backend.ErrDuplicate) {
			t.Errorf("duplicate inside Update: %v", err)
		}
		return tx.Append(ctx, "kept", int64(len(b.events)), continueFrom(b.events).turnStart().events)
	})
	if err != nil {
		t.Fatal(err)
	}
	ins, err := s.Inspect(ctx, "kept")
	if err != nil || len(ins.Events) != len(b.events)+1 || !ins.Verified {
		t.Fatalf("after Update: %+v, %v", ins, err)
	}
}

// SubtreeOf reads every session below a root in one query: grandchildren
// through any origin, nothing outside the tree, and a parent-link cycle
// (written behind dsh's back) ends instead of looping.
func TestSubtreeOfReadsTheWholeTreeOnce(t *testing.T) {
	ctx := context.Background()
	s, _ := openStore(t)
	for _, h := range []session.Header{
		rootHeader("p"),
		childHeader("a", "p", 100, true),
		childHeader("b", "p", 200, false),
		childHeader("a1", "a", 300, true),
		childHeader("b1", "b", 300, true),
		childHeader("b11", "b1", 400, false),
		rootHeader("q"),
		childHeader("q1", "q", 100, true),
	} {
		if err := s.CreateSession(ctx, h, nil); err != nil {
			t.Fatal(err)
		}
	}
	sorted := func(root string) []string {
		ids := collectIDs(t, func(fn func(session.Header) error) error { return s.SubtreeOf(ctx, root, fn) })
		slices.Sort(ids)
		return ids
	}
	if got, want := sorted("p"), []string{"a", "a1", "b", "b1", "b11"}; !reflect.DeepEqual(got, want) {
		t.Errorf("SubtreeOf(p) = %v, want %v", got, want)
	}
	if got := sorted("nobody"); len(got) != 0 {
		t.Errorf("SubtreeOf(nobody) = %v", got)
	}
	if _, err := s.db.ExecContext(ctx, `UPDATE sessions SET parent_session = 'b11' WHERE id = 'p'`); err != nil {
		t.Fatal(err)
	}
	if got, want := sorted("p"), []string{"a", "a1", "b", "b1", "b11", "p"}; !reflect.DeepEqual(got, want) {
		t.Errorf("SubtreeOf(p) with a cycle = %v, want %v", got, want)
	}
}
