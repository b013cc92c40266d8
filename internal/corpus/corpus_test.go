package corpus

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/dsh-project/dsh/internal/session"
)

func ptr[T any](v T) *T { return &v }

func header(id, parent string, createdAt int64, subagent bool) session.Header {
	h := session.Header{ID: id, CreatedAt: createdAt}
	if parent != "" {
		h.ParentSession = ptr(parent)
	}
	if subagent {
		h.Origin = ptr(session.OriginSubagent)
	}
	return h
}

func ids(recs []Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.Header.ID
	}
	return out
}

// Ties on createdAt are broken as JavaScript's localeCompare orders ids
// (DSH's runtime, ICU root collation), not by bytes.
func TestSortHeadersUsesLocaleCompareOrder(t *testing.T) {
	in := []string{"-x", "1a", "A", "B", "_x", "a", "a-b", "a1", "a_b", "ab", "b", "x"}
	hs := make([]session.Header, len(in))
	for i, id := range in {
		hs[i] = header(id, "p", 5, true)
	}
	SortHeaders(hs, func(h session.Header) session.Header { return h })
	var got []string
	for _, h := range hs {
		got = append(got, h.ID)
	}
	want := []string{"_x", "-x", "1a", "a", "A", "a_b", "a-b", "a1", "ab", "b", "B", "x"}
	if !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
}

// Descendants walk through ordinary sessions, stop at cycles and handle a
// 10,000-deep chain without recursion (DSH cases D4, D5, D6).
func TestDescendantsWalk(t *testing.T) {
	ctx := context.Background()
	t.Run("through ordinary sessions, pre-order", func(t *testing.T) {
		ix := NewHeaderIndex([]session.Header{
			header("a", "root", 1, true),
			header("fork", "root", 2, false),
			header("g", "a", 3, true),
			header("under-fork", "fork", 4, true),
			header("b", "root", 5, true),
		})
		c, err := Load(ctx, ix, nil)
		if err != nil {
			t.Fatal(err)
		}
		recs, err := c.Descendants(ctx, "root")
		if err != nil {
			t.Fatal(err)
		}
		if got, want := ids(recs), []string{"a", "g", "under-fork", "b"}; !slices.Equal(got, want) {
			t.Fatalf("descendants %v, want %v", got, want)
		}
		if recs[2].ParentID != "fork" || recs[2].Depth != 2 || !recs[0].HasChildren || recs[3].HasChildren {
			t.Fatalf("placement: %+v", recs)
		}
	})
	t.Run("cycle", func(t *testing.T) {
		ix := NewHeaderIndex([]session.Header{header("cycle-root", "cycle-node", 2, false), header("cycle-node", "cycle-root", 1, true)})
		c, _ := Load(ctx, ix, nil)
		recs, err := c.Descendants(ctx, "cycle-root")
		if err != nil || !slices.Equal(ids(recs), []string{"cycle-node"}) {
			t.Fatalf("cycle: %v %v", ids(recs), err)
		}
	})
	t.Run("10,000 deep", func(t *testing.T) {
		var hs []session.Header
		parent := "root"
		for i := 1; i < 10000; i++ {
			id := fmt.Sprintf("deep-%d", i)
			hs = append(hs, header(id, parent, int64(i), false))
			parent = id
		}
		hs = append(hs, header("leaf", parent, 10000, true))
		c, _ := Load(ctx, NewHeaderIndex(hs), nil)
		recs, err := c.Descendants(ctx, "root")
		if err != nil || len(recs) != 1 || recs[0].Depth != 10000 || recs[0].ParentID != "deep-9999" {
			t.Fatalf("deep chain: %+v %v", recs, err)
		}
	})
}

type liveMap map[string]Live

func (m liveMap) LiveSessions(context.Context) (map[string]Live, error) { return m, nil }

// A live record replaces the persisted header of its id wholesale, and
// live-only children are found through their live parent.
func TestLiveRecordsWinTheirID(t *testing.T) {
	ctx := context.Background()
	ix := NewHeaderIndex([]session.Header{header("moved", "p", 1, true), header("stays", "p", 2, true)})
	live := liveMap{
		"moved":     {Header: header("moved", "elsewhere", 1, true)},
		"live-only": {Header: header("live-only", "p", 3, true)},
	}
	c, err := Load(ctx, ix, live)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := c.Children(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ids(recs), []string{"stays", "live-only"}; !slices.Equal(got, want) {
		t.Fatalf("children %v, want %v", got, want)
	}
	if recs[0].Live != nil || recs[1].Live == nil {
		t.Fatalf("live flags: %+v", recs)
	}
}

// Children read a page at a time are the children read at once, at every
// page size: live records replace their persisted ids and join their live
// parent's pages in order, wherever the page boundaries and the runs of
// tied createdAt fall.
func TestChildrenPagesEqualChildren(t *testing.T) {
	ctx := context.Background()
	var hs []session.Header
	for i, id := range []string{"b", "B", "9", "_x", "a", "10", "moved", "stays", "z", "Z", "é", "e"} {
		hs = append(hs, header(id, "p", int64(10+i%4), true))
	}
	hs = append(hs, header("plain", "p", 11, false), header("grand", "B", 20, true))
	live := liveMap{
		"moved":      {Header: header("moved", "elsewhere", 11, true)},
		"stays":      {Header: header("stays", "p", 30, true)},
		"live-only":  {Header: header("live-only", "p", 12, true)},
		"live-first": {Header: header("live-first", "p", 1, true)},
	}
	c, err := Load(ctx, NewHeaderIndex(hs), live)
	if err != nil {
		t.Fatal(err)
	}
	whole, err := c.Children(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	for size := 1; size <= len(hs)+1; size++ {
		var paged []Record
		pages := 0
		err := c.ChildrenPages(ctx, "p", size, func(recs []Record) error {
			pages++
			paged = append(paged, recs...)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(paged, whole) {
			t.Fatalf("pages of %d: %v, want %v", size, ids(paged), ids(whole))
		}
		if size == 1 && pages < 4 {
			t.Fatalf("pages of 1 gave %d pages: the walk did not page", pages)
		}
	}
}

// countingIndex is a HeaderIndex counting ChildrenOf calls.
type countingIndex struct {
	*HeaderIndex
	childrenOf int
}

func (s *countingIndex) ChildrenOf(ctx context.Context, parentID string, fn func(session.Header) error) error {
	s.childrenOf++
	return s.HeaderIndex.ChildrenOf(ctx, parentID, fn)
}

// subtreeIndex is a HeaderIndex that also reads whole subtrees, counting
// the per-node ChildrenOf calls the walk still makes.
type subtreeIndex struct {
	*HeaderIndex
	childrenOf int
}

func (s *subtreeIndex) ChildrenOf(ctx context.Context, parentID string, fn func(session.Header) error) error {
	s.childrenOf++
	return s.HeaderIndex.ChildrenOf(ctx, parentID, fn)
}

func (s *subtreeIndex) SubtreeOf(ctx context.Context, root string, fn func(session.Header) error) error {
	seen := map[string]bool{}
	queue := []string{root}
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		err := s.HeaderIndex.ChildrenOf(ctx, id, func(h session.Header) error {
			if !seen[h.ID] {
				seen[h.ID] = true
				queue = append(queue, h.ID)
				return fn(h)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// Reading the persisted tree in one go gives the walk's result exactly,
// live records included: one moved out of the tree, one moved in from
// outside (whose persisted children the subtree read cannot cover, so they
// are asked for one node at a time), one live-only; and a cycle.
func TestDescendantsFromOneSubtreeRead(t *testing.T) {
	ctx := context.Background()
	headers := []session.Header{
		header("a", "root", 1, true),
		header("fork", "root", 2, false),
		header("g", "a", 3, true),
		header("under-fork", "fork", 4, true),
		header("b", "root", 5, true),
		header("leaves", "b", 6, true),
		header("leaf-kid", "leaves", 7, true),
		header("outsider", "elsewhere", 8, true),
		header("outsider-kid", "outsider", 9, true),
		header("cycle", "g", 10, true),
		header("root", "cycle", 0, false),
	}
	live := liveMap{
		"leaves":    {Header: header("leaves", "elsewhere", 6, true)},
		"outsider":  {Header: header("outsider", "a", 8, true)},
		"live-only": {Header: header("live-only", "fork", 11, true)},
	}
	counted := &countingIndex{HeaderIndex: NewHeaderIndex(headers)}
	plain, err := Load(ctx, counted, live)
	if err != nil {
		t.Fatal(err)
	}
	want, err := plain.Descendants(ctx, "root")
	if err != nil {
		t.Fatal(err)
	}
	src := &subtreeIndex{HeaderIndex: NewHeaderIndex(headers)}
	c, err := Load(ctx, src, live)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Descendants(ctx, "root")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids(got), ids(want)) || !slices.Contains(ids(got), "outsider-kid") || slices.Contains(ids(got), "leaf-kid") {
		t.Fatalf("descendants %v, want %v", ids(got), ids(want))
	}
	for i := range got {
		if got[i].ParentID != want[i].ParentID || got[i].Depth != want[i].Depth || got[i].HasChildren != want[i].HasChildren || (got[i].Live == nil) != (want[i].Live == nil) {
			t.Errorf("record %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	// The nodes of the persisted tree the walk visits (root, a, fork, g,
	// cycle, under-fork, b) are no longer asked one by one; the nodes
	// reached through a live record (outsider, outsider-kid, live-only)
	// and hasChildren still are.
	if saved := counted.childrenOf - src.childrenOf; saved != 7 {
		t.Errorf("ChildrenOf calls: %d per node, %d with one subtree read", counted.childrenOf, src.childrenOf)
	}
}
