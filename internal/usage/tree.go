package usage

import (
	"context"
	"errors"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/subagent"
)

// Node is one session of a parent's subtree: its own usage and its
// subtree's (itself and every node below it).
type Node struct {
	Session
	// ParentID and Depth place the node in the tree (the root: "" and 0).
	ParentID string
	Depth    int
	// Row is the listing's row for the node; nil for the root and for a
	// session the descendants walk goes through without listing it (an
	// ordinary fork), which is counted all the same.
	Row           *subagent.Row
	Subtree       Totals
	SubtreeModels []backend.ModelUsage
}

// Tree is the usage of a parent's subtree, in the listing's pre-order,
// the parent first.
type Tree struct {
	Parent string
	Nodes  []Node
}

// Walk builds the tree of parent from rows, its descendants listing (so
// the tree follows the listing rules of the chosen profile: DSH's ladder,
// or the parent's catalog under 0.1.7), reads every node's usage from src
// (see Read) and rolls each subtree up. src's headers place a session the
// walk went through without a row under its own parent.
func Walk(ctx context.Context, rows []subagent.Row, src backend.HeaderReader, parent string) (*Tree, error) {
	headers := src
	t := &Tree{Parent: parent, Nodes: []Node{{ParentID: "", Depth: 0}}}
	t.Nodes[0].ID = parent
	index := map[string]int{parent: 0}
	for i := range rows {
		row := rows[i]
		if _, dup := index[row.ID]; dup {
			continue
		}
		if err := t.placeParent(ctx, headers, index, row.ParentID, row.Depth-1); err != nil {
			return nil, err
		}
		index[row.ID] = len(t.Nodes)
		n := Node{ParentID: row.ParentID, Depth: row.Depth, Row: &row}
		n.ID = row.ID
		t.Nodes = append(t.Nodes, n)
	}
	ids := make([]string, len(t.Nodes))
	for i, n := range t.Nodes {
		ids[i] = n.ID
	}
	sessions, err := Read(ctx, src, ids)
	if err != nil {
		return nil, err
	}
	for i := range t.Nodes {
		t.Nodes[i].Session = sessions[i]
	}
	t.rollup(index)
	return t, nil
}

// placeParent makes sure id, a row's parent, is a node: a session the walk
// went through without a row is added under its own parent (climbing as
// far as needed), just before the first row below it.
func (t *Tree) placeParent(ctx context.Context, headers backend.HeaderReader, index map[string]int, id string, depth int) error {
	if _, ok := index[id]; ok || id == "" {
		return nil
	}
	h, err := headers.Header(ctx, id)
	parent := t.Parent
	if err == nil && h.ParentSession != nil {
		parent = h.Parent()
	} else if err != nil && !errors.Is(err, backend.ErrNotFound) {
		return err
	}
	// A cycle or a parent outside the subtree hangs the node under the
	// root: every node the listing shows is counted once.
	index[id] = -1
	if err := t.placeParent(ctx, headers, index, parent, depth-1); err != nil {
		return err
	}
	if index[parent] < 0 {
		parent = t.Parent
	}
	index[id] = len(t.Nodes)
	n := Node{ParentID: parent, Depth: max(depth, 1)}
	n.ID = id
	t.Nodes = append(t.Nodes, n)
	return nil
}

// rollup sums every node's own usage into itself and its ancestors.
func (t *Tree) rollup(index map[string]int) {
	models := make([]map[string]*Totals, len(t.Nodes))
	for i := range t.Nodes {
		models[i] = map[string]*Totals{}
	}
	for i := range t.Nodes {
		n := &t.Nodes[i]
		for at, guard := i, 0; at >= 0 && guard <= len(t.Nodes); guard++ {
			a := &t.Nodes[at]
			a.Subtree.Add(n.Total)
			for _, m := range n.Models {
				if models[at][m.Model] == nil {
					models[at][m.Model] = &Totals{}
				}
				models[at][m.Model].Add(totalsOf(m))
			}
			if at == 0 {
				break
			}
			next, ok := index[a.ParentID]
			if !ok || next < 0 {
				next = 0
			}
			at = next
		}
	}
	for i := range t.Nodes {
		t.Nodes[i].SubtreeModels = sortedModels(models[i])
	}
}
