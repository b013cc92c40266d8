package subagent

import (
	"bytes"
	"context"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/corpus"
	"github.com/dsh-project/dsh/internal/session"
)

// servedMark is text a record the listing serves a child from holds in
// the form dsh writes: an identity object (cachedIdentity). A child whose
// record lacks it (no identity, a malformed descriptor) is left to a cold
// read, which the listing source then makes with the header instead of a
// second query; should the record serve the child all the same (another
// form of the same identity), that read goes unused.
const servedMark = `{"identity":{`

// listStoredTree enumerates root's descendants as Descendants does (nothing
// being live), from one subtree read that also brings their checkpoints.
func listStoredTree(ctx context.Context, c *corpus.Corpus, src backend.SubtreeListingReader, root string) ([]corpus.Record, []storedRecord, error) {
	tree := corpus.NewSubtree(root)
	rows := map[string][]byte{}
	err := src.SubtreeListing(ctx, root, func(c backend.ListedChild) error {
		tree.Add(c.Header)
		if c.Checkpoint != nil {
			rows[c.Header.ID] = c.Checkpoint
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	recs, err := c.DescendantsWithin(ctx, root, tree)
	if err != nil {
		return nil, nil, err
	}
	stored := make([]storedRecord, len(recs))
	for i, r := range recs {
		stored[i] = storedRecord{rows: rows[r.Header.ID]}
	}
	return recs, stored, nil
}

// storedRecord is a candidate's checkpoint as read with its header, and
// the cold read of its log when the source read one with it.
type storedRecord struct {
	rows []byte   // nil: no record of this lifecycle
	cold *ColdLog // nil: not read with the header
}

// coldLogOf is a listed child's cold read as a batch cold read's result.
func coldLogOf(c *backend.ListedColdRead) *ColdLog {
	switch {
	case c == nil:
		return nil
	case c.Verdict != nil:
		return &ColdLog{Err: c.Verdict.ReadErr, RegistryFold: c.Verdict.RegistryFold}
	case c.Log != nil:
		return &ColdLog{Header: c.Log.Header, Events: c.Log.Events}
	}
	return nil
}

// listStored enumerates parent's children from src: the records Children
// would return (nothing being live) and their checkpoints; with types (the
// registry's fold types) and a backend.ColdChildListingReader, also the cold reads
// of the children without a record.
func listStored(ctx context.Context, src backend.ChildListingReader, parent string, types []string) ([]corpus.Record, []storedRecord, error) {
	// Two parallel slices, not one of (record, checkpoint) pairs copied
	// apart afterwards: at thousands of children that copy (and its
	// growth) was a large part of a warm listing's heap.
	var (
		recs   []corpus.Record
		stored []storedRecord
	)
	add := func(c backend.ListedChild) error {
		recs = append(recs, corpus.Record{Header: c.Header, HasChildren: c.HasChildren, ParentID: parent, Depth: 1})
		stored = append(stored, storedRecord{rows: c.Checkpoint, cold: coldLogOf(c.Cold)})
		return nil
	}
	var err error
	if cold, ok := src.(backend.ColdChildListingReader); ok && types != nil {
		err = cold.ChildListingCold(ctx, parent, types, servedMark, add)
	} else {
		err = src.ChildListing(ctx, parent, add)
	}
	if err != nil {
		return nil, nil, err
	}
	sortListed(recs, stored)
	return recs, stored, nil
}

// sortListed puts the children in corpus.SortHeaders order, moving each
// one's checkpoint with it. The source gives them in createdAt order, so
// only each run of equal createdAt needs sorting (ids tie-broken by
// localeCompare); children that come out of createdAt order are sorted
// whole all the same.
func sortListed(recs []corpus.Record, stored []storedRecord) {
	for start := 0; start < len(recs); {
		at := recs[start].Header.CreatedAt
		end := start + 1
		for end < len(recs) && recs[end].Header.CreatedAt == at {
			end++
		}
		if end < len(recs) && recs[end].Header.CreatedAt < at {
			sortTogether(recs, stored)
			return
		}
		if end-start > 1 {
			sortTogether(recs[start:end], stored[start:end])
		}
		start = end
	}
}

// sortTogether sorts recs by corpus.SortHeaders and stored in the same
// permutation.
func sortTogether(recs []corpus.Record, stored []storedRecord) {
	order := make([]int, len(recs))
	for i := range order {
		order[i] = i
	}
	corpus.SortHeaders(order, func(i int) session.Header { return recs[i].Header })
	r := make([]corpus.Record, len(recs))
	s := make([]storedRecord, len(stored))
	for k, i := range order {
		r[k], s[k] = recs[i], stored[i]
	}
	copy(recs, r)
	copy(stored, s)
}

// resolveFromStored is rung 2 (resolveFromCache) over the checkpoints read
// with the headers: a valid cached identity of an unseeded candidate is
// final. It fills out for those and returns the indexes still needing a
// read.
func (l *Lister) resolveFromStored(recs []corpus.Record, stored []storedRecord, cold []int, out []Resolution) []int {
	rc8 := l.rc8()
	var pending []int
	// The rows and identities served are cut from two slabs: one
	// allocation each per listing instead of two per child.
	rows := make([]Row, len(cold))
	ids := make([]Identity, len(cold))
	for k, i := range cold {
		// Later revision: unseeded children only. 0.1.0-rc.8: every cold
		// child, its identity accepted only from its own suffix.
		if rec := stored[i].rows; rec != nil && (rc8 || !recs[i].Header.IsSeeded()) {
			if id := l.cachedIdentity(rec, &ids[k]); id != nil && (!rc8 || OwnSuffix(id.Seq, recs[i].Header.InheritedCut())) {
				rows[k] = *childRow(id, ActivityInactive)
				out[i] = Resolution{Row: &rows[k], Rung: RungCache, Identity: id}
				continue
			}
		}
		pending = append(pending, i)
	}
	return pending
}

// cachedIdentity is the identity of a checkpoint record's `subagent` view
// (ViewOf, then IdentityFromView), nil for a miss: a record that does not
// decode, a row at another state version, no identity. A record in the
// form dsh writes, holding an identity in the form the unit writes, is read
// directly (into into, which it returns): the unit's View would render
// that identity and IdentityFromView read it back unchanged.
func (l *Lister) cachedIdentity(rows []byte, into *Identity) *Identity {
	if u, state, ok := l.Units.SoleRowState(rows, UnitKey); ok {
		if _, ours := u.(identityUnit); ok && ours {
			if inner, found := bytes.CutPrefix(state, identityPrefix); found {
				if view, found := bytes.CutSuffix(inner, []byte("}")); found {
					if id, ok := canonicalIdentity(view); ok {
						*into = id
						return into
					}
				}
			}
		}
	}
	view, err := l.Units.ViewOf(rows, UnitKey)
	if err != nil {
		return nil
	}
	id, err := IdentityFromView(view)
	if err != nil {
		return nil
	}
	return id
}

// resolveListedCold resolves the pending candidates whose logs were read
// with their headers, as readColdBatch resolves a batch, and returns the
// others.
func (l *Lister) resolveListedCold(recs []corpus.Record, stored []storedRecord, pending []int, out []Resolution) []int {
	var signature string
	var rest []int
	for _, i := range pending {
		log := stored[i].cold
		if log == nil {
			rest = append(rest, i)
			continue
		}
		if signature == "" {
			signature = registrySignature(l.Units)
		}
		res, ok := l.resolveColdLog(recs[i], signature, *log)
		if !ok {
			rest = append(rest, i)
			continue
		}
		out[i] = res
	}
	return rest
}
