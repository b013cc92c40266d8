package subagent

import (
	"context"
	"strconv"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/catalog"
	"github.com/dsh-project/dsh/internal/dshcompat"
)

// The 0.1.7 listing's resolved catalogs (backend.CatalogViewReader,
// migration 0017): what catalogOf computes from each session's own log,
// kept beside it by dsh's writers and voided by any write to that log or
// header. A listing computes a session's catalog from its view: its own
// entries, completed for a V0-V3 session with its subagent children's
// evidence (their views', or their logs' for a child whose view is not
// current), as DSH's back-fill completes them; a session whose view is not
// current (stale, absent, another stamp) is computed from its log: one
// such session costs its own reads, never the whole listing's.

// catalogRules is the version of the catalog computation (catalogOf, with
// internal/catalog's fold and back-fill) a view is stamped with; raise it
// whenever a change to either can change a view, so that views another dsh
// resolved are never read as current.
const catalogRules = 1

// CatalogViewsStamp is the resolver stamp of the catalog views this dsh
// resolves and reads.
func CatalogViewsStamp() string {
	return string(dshcompat.V017) + "/catalog@" + strconv.Itoa(catalogRules)
}

// storedReason is a catalog DSH refuses, as a stored view says: its branch
// diagnostic, with no error to tell (a root's is computed from its log).
type storedReason Reason

func (r storedReason) Error() string { return "resolved catalog: " + string(r) }

// storedViews fills the walk's catalogs with those of ids not known yet
// that the store's current views give, in one read; readsOnly keeps only
// catalogs that read (a root's refusal is computed from its log, for its
// error). A failed read is no verdict: those catalogs are computed from
// the logs.
func (w *catalogWalk) storedViews(ctx context.Context, ids []string, readsOnly bool) error {
	if w.views == nil {
		return nil
	}
	var todo []string
	for _, id := range ids {
		if _, done := w.catalogs[id]; !done {
			todo = append(todo, id)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	var views []backend.CatalogView
	err := w.views.CatalogViews(ctx, todo, CatalogViewsStamp(), func(v backend.CatalogView) error {
		views = append(views, v)
		return nil
	})
	if err != nil {
		return checkCancelled(ctx)
	}
	// The logs of the children whose own view is not current: their
	// evidence is read from them, in one batch.
	var stale []string
	for _, v := range views {
		for _, k := range v.Children {
			if !k.Current {
				stale = append(stale, k.ID)
			}
		}
	}
	if err := w.readMany(ctx, stale); err != nil {
		return err
	}
	for _, v := range views {
		if v.Reason != "" {
			if !readsOnly {
				w.catalogs[v.ID] = catalogResult{err: storedReason(v.Reason)}
				w.servedViews++
			}
			continue
		}
		entries := make([]catalog.Entry, len(v.Entries))
		for i, e := range v.Entries {
			entries[i] = catalog.Entry{ID: e.ID, CreatedAt: e.CreatedAt, Mode: catalog.Mode(e.Mode), Label: e.Label}
		}
		var err error
		if v.Backfill {
			evidence := make([]catalog.Evidence, len(v.Children))
			for i, k := range v.Children {
				if !k.Current {
					evidence[i] = w.evidenceOf(ctx, k.ID, k.CreatedAt)
					continue
				}
				evidence[i] = catalog.Evidence{ChildID: k.ID, ChildCreatedAt: k.CreatedAt, DescriptorCount: k.EvidenceCount, Descriptor: k.EvidenceDescriptor}
			}
			entries, err = catalog.Complete(entries, evidence)
		}
		if err != nil && readsOnly {
			continue
		}
		w.catalogs[v.ID] = catalogResult{entries: entries, err: err}
		w.servedViews++
	}
	return checkCancelled(ctx)
}

// refreshCatalogViews resolves and stores, inside tx, the views not
// current among ids: each locked first, then computed from what tx reads
// of its own log. A session whose log cannot be read for another reason
// than DSH refusing it (unavailable) is left stale.
func refreshCatalogViews(ctx context.Context, tx backend.Store, ids []string) error {
	cw, ok := tx.(backend.CatalogViewWriter)
	if !ok || len(ids) == 0 {
		return nil
	}
	stamp := CatalogViewsStamp()
	locked, err := cw.LockCatalogViews(ctx, ids, stamp)
	if err != nil || len(locked) == 0 {
		return err
	}
	w := newCatalogWalk(NewLister(tx, nil, nil, 1))
	if err := w.readOwnLogs(ctx, tx, locked); err != nil {
		return err
	}
	views := make([]backend.CatalogView, 0, len(locked))
	for _, id := range locked {
		v, ok := w.ownView(ctx, id)
		if err := checkCancelled(ctx); err != nil {
			return err
		}
		if ok {
			v.Resolver = stamp
			views = append(views, v)
		}
	}
	return cw.PutCatalogViews(ctx, views)
}

// readOwnLogs reads the logs of ids in a fixed number of statements where
// the store allows: the read failures it recorded, then every verified log,
// a recorded registry fold notwithstanding (which readMany takes in place
// of the events, where the catalog needs them); the rest are read one at
// a time when asked for. A batch that fails is no verdict.
func (w *catalogWalk) readOwnLogs(ctx context.Context, tx backend.Store, ids []string) error {
	rest := ids
	if verdicts, ok := tx.(backend.ColdVerdictReader); ok {
		recorded, err := verdicts.ColdVerdicts(ctx, ids)
		if err != nil {
			return checkCancelled(ctx)
		}
		rest = make([]string, 0, len(ids))
		for _, id := range ids {
			if v, ok := recorded[id]; ok && v.ReadErr != nil {
				w.reads[id] = &catalogRead{err: v.ReadErr}
				continue
			}
			rest = append(rest, id)
		}
	}
	batch, ok := tx.(backend.VerifiedBatchReader)
	if !ok || len(rest) == 0 {
		return nil
	}
	ins, err := batch.InspectVerifiedTypes(ctx, rest, catalogEventTypes)
	if err != nil {
		return checkCancelled(ctx)
	}
	for id, in := range ins {
		w.reads[id] = &catalogRead{header: in.Header, events: in.Events}
	}
	return nil
}

// ownView is what session id's own log gives a listing (see
// backend.CatalogView); ok is false when its log cannot be read for
// another reason than DSH refusing it.
func (w *catalogWalk) ownView(ctx context.Context, id string) (v backend.CatalogView, ok bool) {
	v.ID = id
	r := w.read(ctx, id)
	if r.err != nil {
		if branchReason(r.err) != ReasonCorrupt {
			return v, false
		}
		v.Reason = string(ReasonCorrupt)
		return v, true
	}
	ev := w.evidenceOf(ctx, id, r.header.CreatedAt)
	v.EvidenceCount, v.EvidenceDescriptor = ev.DescriptorCount, ev.Descriptor
	h := r.header
	var (
		entries []catalog.Entry
		err     error
	)
	if h.Version >= catalog.NativeFormat {
		entries, err = catalog.View(h.Version, r.events, h.InheritedCut(), h.CreatedAt, nil)
	} else {
		v.Backfill = true
		entries, err = catalog.OwnView(r.events, h.InheritedCut())
	}
	if err != nil {
		if branchReason(err) != ReasonCorrupt {
			return v, false
		}
		v.Reason = string(ReasonCorrupt)
		return v, true
	}
	v.Entries = make([]backend.CatalogEntry, len(entries))
	for i, e := range entries {
		v.Entries[i] = backend.CatalogEntry{ID: e.ID, CreatedAt: e.CreatedAt, Mode: string(e.Mode), Label: e.Label}
	}
	return v, true
}
