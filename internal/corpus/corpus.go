// Package corpus is the live-preferred view of a session corpus that DSH's
// subagent listing enumerates: persisted headers merged with live records
// (sessions held by a running process), the candidate children of a parent in
// DSH's order, hasChildren, and the pre-order walk of descendants.
//
// It reads headers only — never an event log — and asks its header source for
// one parent's children at a time, so listing one parent never reads the
// headers of the rest of the corpus.
package corpus

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"

	"golang.org/x/text/collate"
	"golang.org/x/text/language"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/session"
)

// HeaderSource is the part of a session store the corpus reads. ChildrenOf
// must be an indexed lookup that returns every session (of any origin) whose
// parentSession is parentID.
type HeaderSource interface {
	ChildrenOf(ctx context.Context, parentID string, fn func(session.Header) error) error
	HasSubagentChild(ctx context.Context, id string) (bool, error)
}

// LiveSource reports the sessions currently held by a live process, keyed by
// session id. A nil LiveSource means nothing is live (a read-only foreign
// corpus, or a store without holders).
type LiveSource interface {
	LiveSessions(ctx context.Context) (map[string]Live, error)
}

// Live is a live holder's record of the session it runs (defined with the
// backend contract, whose LiveSessions returns it).
type Live = backend.Live

// Record is one candidate session as the ladder sees it.
type Record struct {
	Header      session.Header
	Live        *Live // nil = inactive (cold)
	HasChildren bool
	// ParentID and Depth place the record in a descendants walk; for a
	// direct-children listing ParentID is the parent and Depth is 1.
	ParentID string
	Depth    int
}

// Corpus merges a header source with live records.
type Corpus struct {
	headers HeaderSource
	live    map[string]Live
	// liveByParent indexes live records by their (live) parent so that a
	// live-only child is found without scanning.
	liveByParent map[string][]string
}

// Load takes one consistent reading of the live records. Candidates are then
// resolved against that reading, as DSH resolves them against one list call.
func Load(ctx context.Context, headers HeaderSource, live LiveSource) (*Corpus, error) {
	c := &Corpus{headers: headers, liveByParent: map[string][]string{}}
	if live != nil {
		m, err := live.LiveSessions(ctx)
		if err != nil {
			return nil, fmt.Errorf("read live sessions: %w", err)
		}
		c.live = m
		for id, l := range m {
			if p := l.Header.Parent(); p != "" {
				c.liveByParent[p] = append(c.liveByParent[p], id)
			}
		}
	}
	return c, nil
}

// HasLive reports whether any session is live in this reading.
func (c *Corpus) HasLive() bool { return len(c.live) > 0 }

// Children returns the candidate children of parent — sessions whose merged
// header has origin "subagent" and parentSession == parent — in DSH's order.
// An unknown parent has no children (not an error).
func (c *Corpus) Children(ctx context.Context, parent string) ([]Record, error) {
	nodes, err := c.childNodes(ctx, parent)
	if err != nil {
		return nil, err
	}
	out := make([]Record, 0, len(nodes))
	for _, n := range nodes {
		if n.Header.IsSubagent() {
			out = append(out, c.record(n, parent, 1))
		}
	}
	if err := c.fillHasChildren(ctx, out); err != nil {
		return nil, err
	}
	return out, nil
}

// CountChildren is how many records Children would return, counted from
// one streamed read of the headers (nothing is held).
func (c *Corpus) CountChildren(ctx context.Context, parent string) (int, error) {
	n := 0
	err := c.headers.ChildrenOf(ctx, parent, func(h session.Header) error {
		if _, live := c.live[h.ID]; !live && h.IsSubagent() {
			n++
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("list children of %s: %w", parent, err)
	}
	for _, id := range c.liveByParent[parent] {
		if c.live[id].Header.IsSubagent() {
			n++
		}
	}
	return n, nil
}

// ChildrenPages is Children a page at a time: fn gets about size records
// at once, the pages in Children's order, so that a walk of a
// 100,000-child parent holds one page of headers, not the parent. A page
// ends only where createdAt changes — ids tied on createdAt are ordered by
// localeCompare, which the store's byte order is not, so a run of ties is
// held until the store has given all of it — and may therefore exceed size
// by such a run. A header source that cannot resume (not a
// backend.ChildrenPager) gives every child in one page.
func (c *Corpus) ChildrenPages(ctx context.Context, parent string, size int, fn func([]Record) error) error {
	pager, ok := c.headers.(backend.ChildrenPager)
	if !ok {
		recs, err := c.Children(ctx, parent)
		if err != nil || len(recs) == 0 {
			return err
		}
		return fn(recs)
	}
	live := make([]node, 0, len(c.liveByParent[parent]))
	for _, id := range c.liveByParent[parent] {
		live = append(live, node{Header: c.live[id].Header})
	}
	SortHeaders(live, func(n node) session.Header { return n.Header })
	var held []node
	// flush hands fn the held and live children created before bound
	// (all of them when last).
	flush := func(bound int64, last bool) error {
		k := len(held)
		if !last {
			k = sort.Search(len(held), func(i int) bool { return held[i].Header.CreatedAt >= bound })
		}
		page := slices.Clone(held[:k])
		held = append(held[:0], held[k:]...)
		for len(live) > 0 && (last || live[0].Header.CreatedAt < bound) {
			page = append(page, live[0])
			live = live[1:]
		}
		SortHeaders(page, func(n node) session.Header { return n.Header })
		recs := make([]Record, 0, len(page))
		for _, n := range page {
			if n.Header.IsSubagent() {
				recs = append(recs, c.record(n, parent, 1))
			}
		}
		if len(recs) == 0 {
			return nil
		}
		if err := c.fillHasChildren(ctx, recs); err != nil {
			return err
		}
		return fn(recs)
	}
	var after *backend.ChildKey
	for {
		n := 0
		err := pager.ChildrenAfter(ctx, parent, after, size, func(h session.Header) error {
			n++
			after = &backend.ChildKey{CreatedAt: h.CreatedAt, ID: h.ID}
			if _, isLive := c.live[h.ID]; !isLive {
				// A live child is taken from the live records instead.
				held = append(held, node{Header: h})
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("list children of %s: %w", parent, err)
		}
		if n < size {
			return flush(0, true)
		}
		// The children sharing the page's last createdAt may go on in
		// the next page: hold them back.
		if err := flush(after.CreatedAt, false); err != nil {
			return err
		}
	}
}

// Descendants walks the tree below root in iterative pre-order (a 10,000-deep
// chain needs no recursion), through every session that has a parent:
// ordinary sessions and one-shot children are walked through, but only
// subagent-origin sessions become records. A visited set, seeded with the
// root, stops parent-link cycles. With a backend.SubtreeReader the persisted tree
// is read in one query; only a node reached through a live record alone
// (whose persisted children the query did not cover) is asked for its
// children one at a time.
func (c *Corpus) Descendants(ctx context.Context, root string) ([]Record, error) {
	kids, err := c.subtree(ctx, root)
	if err != nil {
		return nil, err
	}
	return c.DescendantsWithin(ctx, root, kids)
}

// DescendantsWithin is Descendants over a subtree the caller read itself:
// a node kids does not cover (nil kids: none) is asked for its children
// with ChildrenOf.
func (c *Corpus) DescendantsWithin(ctx context.Context, root string, kids Subtree) ([]Record, error) {
	type frame struct {
		node   session.Header
		parent string
		depth  int
	}
	visited := map[string]bool{root: true}
	var stack []frame
	push := func(parent string, depth int) error {
		nodes, err := c.childNodesFrom(ctx, kids, parent)
		if err != nil {
			return err
		}
		for i := len(nodes) - 1; i >= 0; i-- {
			stack = append(stack, frame{node: nodes[i].Header, parent: parent, depth: depth})
		}
		return nil
	}
	if err := push(root, 1); err != nil {
		return nil, err
	}
	var out []Record
	for len(stack) > 0 {
		if len(out)%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		f := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if visited[f.node.ID] {
			continue
		}
		visited[f.node.ID] = true
		if f.node.IsSubagent() {
			out = append(out, c.record(node{Header: f.node}, f.parent, f.depth))
		}
		if err := push(f.node.ID, f.depth+1); err != nil {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := c.fillHasChildrenWithin(ctx, out, kids); err != nil {
		return nil, err
	}
	return out, nil
}

// fillHasChildrenWithin is fillHasChildren for the records of a walk over
// kids: a node the subtree covers has every persisted child in it (the
// subtree holds every session below root, of any origin), so with nothing
// live its hasChildren needs no lookup.
func (c *Corpus) fillHasChildrenWithin(ctx context.Context, recs []Record, kids Subtree) error {
	if len(c.live) > 0 {
		return c.fillHasChildren(ctx, recs)
	}
	var rest []Record
	var at []int
	for i := range recs {
		children, covered := kids[recs[i].Header.ID]
		if !covered {
			rest, at = append(rest, recs[i]), append(at, i)
			continue
		}
		recs[i].HasChildren = slices.ContainsFunc(children, session.Header.IsSubagent)
	}
	if len(rest) == 0 {
		return nil
	}
	if err := c.fillHasChildren(ctx, rest); err != nil {
		return err
	}
	for k, i := range at {
		recs[i].HasChildren = rest[k].HasChildren
	}
	return nil
}

// subtree reads the persisted tree below root in one query when the header
// source can, as each covered node's persisted children; nil otherwise.
func (c *Corpus) subtree(ctx context.Context, root string) (Subtree, error) {
	src, ok := c.headers.(backend.SubtreeReader)
	if !ok {
		return nil, nil
	}
	kids := NewSubtree(root)
	err := src.SubtreeOf(ctx, root, func(h session.Header) error {
		kids.Add(h)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list descendants of %s: %w", root, err)
	}
	return kids, nil
}

// Subtree is a persisted subtree read at once: root and every session
// below it, each mapped to its persisted children (in any order).
type Subtree map[string][]session.Header

// NewSubtree starts the subtree of root.
func NewSubtree(root string) Subtree { return Subtree{root: nil} }

// Add records h as a node of the subtree and a child of its parent.
func (t Subtree) Add(h session.Header) {
	t[h.Parent()] = append(t[h.Parent()], h)
	if _, seen := t[h.ID]; !seen {
		t[h.ID] = nil
	}
}

// childNodesFrom is childNodes answered from a subtree read when it covers
// parent.
func (c *Corpus) childNodesFrom(ctx context.Context, kids Subtree, parent string) ([]node, error) {
	persisted, covered := kids[parent]
	if !covered {
		return c.childNodes(ctx, parent)
	}
	nodes := make([]node, 0, len(persisted))
	for _, h := range persisted {
		if _, live := c.live[h.ID]; !live {
			nodes = append(nodes, node{Header: h})
		}
	}
	for _, id := range c.liveByParent[parent] {
		nodes = append(nodes, node{Header: c.live[id].Header})
	}
	SortHeaders(nodes, func(n node) session.Header { return n.Header })
	return nodes, nil
}

type node struct {
	Header session.Header
}

// childNodes returns every merged record whose parentSession is parent, in
// DSH's order: createdAt ascending, then id by JavaScript localeCompare.
func (c *Corpus) childNodes(ctx context.Context, parent string) ([]node, error) {
	var nodes []node
	err := c.headers.ChildrenOf(ctx, parent, func(h session.Header) error {
		if _, live := c.live[h.ID]; live {
			// The live header replaces the persisted one; it is added below
			// if it still names this parent.
			return nil
		}
		nodes = append(nodes, node{Header: h})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list children of %s: %w", parent, err)
	}
	for _, id := range c.liveByParent[parent] {
		nodes = append(nodes, node{Header: c.live[id].Header})
	}
	SortHeaders(nodes, func(n node) session.Header { return n.Header })
	return nodes, nil
}

func (c *Corpus) record(n node, parent string, depth int) Record {
	rec := Record{Header: n.Header, ParentID: parent, Depth: depth}
	if l, ok := c.live[n.Header.ID]; ok {
		l := l
		rec.Live = &l
	}
	return rec
}

// hasChildrenBatch bounds how many ids one SubagentParents lookup carries.
const hasChildrenBatch = 10_000

// fillHasChildren sets HasChildren on every record: true iff some merged
// record has origin "subagent" and names the record as its parent. Headers
// only; no child's log is read. With a backend.SubagentParentReader the persisted
// side takes one lookup per batch of records instead of one per record.
func (c *Corpus) fillHasChildren(ctx context.Context, recs []Record) error {
	batcher, ok := c.headers.(backend.SubagentParentReader)
	if !ok {
		for i := range recs {
			has, err := c.hasChildren(ctx, recs[i].Header.ID)
			if err != nil {
				return err
			}
			recs[i].HasChildren = has
		}
		return nil
	}
	for start := 0; start < len(recs); start += hasChildrenBatch {
		batch := recs[start:min(start+hasChildrenBatch, len(recs))]
		ids := make([]string, len(batch))
		for i, r := range batch {
			ids[i] = r.Header.ID
		}
		persisted, err := batcher.SubagentParents(ctx, ids)
		if err != nil {
			return fmt.Errorf("check children of %d sessions: %w", len(ids), err)
		}
		for i := range batch {
			id := batch[i].Header.ID
			switch {
			case c.liveSubagentChild(id):
				batch[i].HasChildren = true
			case !persisted[id]:
			case len(c.live) == 0:
				batch[i].HasChildren = true
			default:
				// A live record may have replaced the persisted child
				// that made the answer true; check that id exactly.
				has, err := c.hasChildren(ctx, id)
				if err != nil {
					return err
				}
				batch[i].HasChildren = has
			}
		}
	}
	return nil
}

func (c *Corpus) liveSubagentChild(id string) bool {
	for _, lid := range c.liveByParent[id] {
		if c.live[lid].Header.IsSubagent() {
			return true
		}
	}
	return false
}

// hasChildren is true iff some merged record has origin "subagent" and names
// id as its parent. Headers only; the child's own log is never read.
func (c *Corpus) hasChildren(ctx context.Context, id string) (bool, error) {
	if c.liveSubagentChild(id) {
		return true, nil
	}
	if len(c.live) == 0 {
		has, err := c.headers.HasSubagentChild(ctx, id)
		if err != nil {
			return false, fmt.Errorf("check children of %s: %w", id, err)
		}
		return has, nil
	}
	// Live records override persisted headers, so a persisted child counts
	// only if no live record has replaced it.
	found := false
	err := c.headers.ChildrenOf(ctx, id, func(h session.Header) error {
		if _, live := c.live[h.ID]; !live && h.IsSubagent() {
			found = true
		}
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("check children of %s: %w", id, err)
	}
	return found, nil
}

// collators reuses ICU root collators: building one costs far more than
// sorting a typical sibling list, and a walk sorts one list per node. A
// Collator is not safe for concurrent use, hence the pool.
var collators = sync.Pool{New: func() any { return collate.New(language.Und) }}

// SortHeaders sorts items in DSH's candidate order: createdAt ascending, then
// id as JavaScript's String.prototype.localeCompare orders it (ICU root
// collation: case-insensitive first with lowercase before uppercase,
// punctuation before digits before letters, no numeric ordering). Ids that
// collate equal keep byte order so the result is deterministic.
func SortHeaders[T any](items []T, header func(T) session.Header) {
	if len(items) < 2 {
		return
	}
	col := collators.Get().(*collate.Collator)
	defer collators.Put(col)
	sort.SliceStable(items, func(i, j int) bool {
		a, b := header(items[i]), header(items[j])
		if a.CreatedAt != b.CreatedAt {
			return a.CreatedAt < b.CreatedAt
		}
		if c := col.CompareString(a.ID, b.ID); c != 0 {
			return c < 0
		}
		return a.ID < b.ID
	})
}
