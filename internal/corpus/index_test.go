package corpus

import (
	"cmp"
	"context"
	"slices"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/session"
)

// HeaderIndex is an in-memory HeaderSource over a fixed set of headers: the
// corpus the tests enumerate. (A foreign corpus read in place is a
// dshformat.Corpus.)
type HeaderIndex struct {
	byParent map[string][]session.Header
	byID     map[string]session.Header
}

// NewHeaderIndex indexes headers by id and by parent.
func NewHeaderIndex(headers []session.Header) *HeaderIndex {
	ix := &HeaderIndex{byParent: map[string][]session.Header{}, byID: map[string]session.Header{}}
	for _, h := range headers {
		ix.byID[h.ID] = h
		if p := h.Parent(); p != "" {
			ix.byParent[p] = append(ix.byParent[p], h)
		}
	}
	return ix
}

// ChildrenOf calls fn for every header whose parentSession is parentID.
func (ix *HeaderIndex) ChildrenOf(ctx context.Context, parentID string, fn func(session.Header) error) error {
	for _, h := range ix.byParent[parentID] {
		if err := fn(h); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// ChildrenAfter implements backend.ChildrenPager in (createdAt, id byte)
// order, as the stores order a parent's children.
func (ix *HeaderIndex) ChildrenAfter(ctx context.Context, parentID string, after *backend.ChildKey, limit int, fn func(session.Header) error) error {
	key := func(h session.Header) backend.ChildKey { return backend.ChildKey{CreatedAt: h.CreatedAt, ID: h.ID} }
	less := func(a, b backend.ChildKey) int {
		return cmp.Or(cmp.Compare(a.CreatedAt, b.CreatedAt), cmp.Compare(a.ID, b.ID))
	}
	kids := slices.SortedFunc(slices.Values(ix.byParent[parentID]), func(a, b session.Header) int { return less(key(a), key(b)) })
	for _, h := range kids {
		if limit == 0 {
			break
		}
		if after != nil && less(key(h), *after) <= 0 {
			continue
		}
		limit--
		if err := fn(h); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// HasSubagentChild reports whether a subagent-origin session names id as parent.
func (ix *HeaderIndex) HasSubagentChild(_ context.Context, id string) (bool, error) {
	for _, h := range ix.byParent[id] {
		if h.IsSubagent() {
			return true, nil
		}
	}
	return false, nil
}

// Header returns the header with that id.
func (ix *HeaderIndex) Header(id string) (session.Header, bool) {
	h, ok := ix.byID[id]
	return h, ok
}
