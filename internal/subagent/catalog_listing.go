package subagent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/catalog"
	"github.com/dsh-project/dsh/internal/corpus"
	"github.com/dsh-project/dsh/internal/debuglog"
	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/session"
)

// The 0.1.7 listing (--dsh-compat 0.1.7): a parent's children are the
// entries of its own subagent catalog, in catalog order, as DSH 0.1.7 and
// later list them (docs/dsh-compatibility.md). No corpus enumeration
// decides a row; headers are enumerated only to compute, in memory, the
// catalog DSH's V3→V4 migration gives a V0–V3 parent.

// ModeExternal is the mode of a DSH 0.2.x external child row: a leaf with
// no session of its own.
const ModeExternal Mode = Mode(catalog.ModeExternal)

// catalogEventTypes are the events a catalog read needs of a log: its own
// facts, the tagged end-seed that sets a later format's cut, and the
// descriptors that are a child's evidence for its parent's back-fill.
var catalogEventTypes = []string{session.TypeCatalog, session.TypeEndSeed, session.TypeDescriptor}

// CatalogListing is a 0.1.7 listing of one parent.
type CatalogListing struct {
	// Rows are the rows of DSH's listDescendants walk; in children scope
	// only its first level (depth 1).
	Rows []Row
	// Entries are the parent's own catalog entries as DSH's listChildren
	// returns them (duplicates, unknown and external entries included),
	// each as a child row with its activity: what list_agents projects in
	// children scope.
	Entries []Row
}

// catalogRead is one session read for its catalog.
type catalogRead struct {
	header session.Header
	events []session.Event
	err    error
}

// catalogWalk is the state of one 0.1.7 listing: every session is read at
// most once, and every catalog computed at most once.
type catalogWalk struct {
	l        *Lister
	live     map[string]corpus.Live
	reads    map[string]*catalogRead
	catalogs map[string]catalogResult
	// parents says, for the sessions asked about in a batch, whether some
	// subagent-origin session names them as parent; a V0–V3 session known
	// to have none needs no enumeration for its back-fill.
	parents  map[string]bool
	logReads int
	// views, when set, serves catalogs from the store's resolved views
	// (catalog_views.go); servedViews counts those it served.
	views       backend.CatalogViewReader
	servedViews int
}

func newCatalogWalk(l *Lister) *catalogWalk {
	return &catalogWalk{l: l, reads: map[string]*catalogRead{}, catalogs: map[string]catalogResult{}, parents: map[string]bool{}}
}

type catalogResult struct {
	entries []catalog.Entry
	err     error
}

// ListCatalog is the 0.1.7 listing of root: in descendants scope every row
// of DSH's pre-order walk, in children scope its first level. A root that
// cannot be read fails the listing: NOT_FOUND for an unknown root,
// INVALID_LOG for a root whose catalog DSH refuses or whose log fails
// validation.
func (l *Lister) ListCatalog(ctx context.Context, root string, scope corpus.Scope) (CatalogListing, error) {
	if err := l.mounted(true); err != nil {
		return CatalogListing{}, err
	}
	if err := checkCancelled(ctx); err != nil {
		return CatalogListing{}, err
	}
	start := time.Now()
	w := newCatalogWalk(l)
	if v, ok := l.Headers.(backend.CatalogViewReader); ok && l.resolvedRows && l.Cold == ColdReader(l.ownCold) {
		// The store's own views, read as its own cold reader would
		// compute them.
		w.views = v
	}
	if l.Live != nil {
		live, err := l.Live.LiveSessions(ctx)
		if err != nil {
			return CatalogListing{}, cancelledOr(ctx, err)
		}
		w.live = live
	}
	if err := w.storedViews(ctx, []string{root}, true); err != nil {
		return CatalogListing{}, err
	}
	rootEntries, err := w.catalogOf(ctx, root)
	if err != nil {
		return CatalogListing{}, rootError(ctx, root, err)
	}
	out := CatalogListing{Entries: make([]Row, 0, len(rootEntries))}
	for _, e := range rootEntries {
		out.Entries = append(out.Entries, Row{Kind: KindChild, ID: e.ID, Mode: Mode(e.Mode), Label: e.Label, Activity: w.activity(e.ID), ParentID: root, Depth: 1})
	}
	rows, err := w.walk(ctx, root, rootEntries)
	if err != nil {
		return CatalogListing{}, err
	}
	if scope == corpus.ScopeChildren {
		rows = slices.DeleteFunc(rows, func(r Row) bool { return r.Depth != 1 })
	}
	out.Rows = rows
	if log := debuglog.From(ctx); log != nil {
		log.Debug("0.1.7 catalog listing", "root", root, "rows", len(rows), "logReads", w.logReads, "resolvedViews", w.servedViews, "took", time.Since(start))
	}
	return out, nil
}

// frame is one catalog entry waiting on the walk's stack.
type frame struct {
	entry    catalog.Entry
	parentID string
	depth    int
}

// walk is DSH's listDescendants loop: an explicit stack, siblings in
// catalog order, a visited set seeded with the root; an entry already
// visited is skipped without a row or a read.
func (w *catalogWalk) walk(ctx context.Context, root string, rootEntries []catalog.Entry) ([]Row, error) {
	visited := map[string]bool{root: true}
	var rows []Row
	stack := make([]frame, 0, len(rootEntries))
	push := func(entries []catalog.Entry, parentID string, depth int) error {
		if err := w.prefetch(ctx, entries, visited); err != nil {
			return err
		}
		for i := len(entries) - 1; i >= 0; i-- {
			stack = append(stack, frame{entries[i], parentID, depth})
		}
		return nil
	}
	if err := push(rootEntries, root, 1); err != nil {
		return nil, err
	}
	for len(stack) > 0 {
		f := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		id := f.entry.ID
		if visited[id] {
			continue
		}
		visited[id] = true
		if err := checkCancelled(ctx); err != nil {
			return nil, err
		}
		var children []catalog.Entry
		if f.entry.Mode != catalog.ModeExternal {
			// An external entry has no session: it is never read.
			var err error
			children, err = w.catalogOf(ctx, id)
			if cerr := checkCancelled(ctx); cerr != nil {
				return nil, cerr
			}
			if err != nil {
				rows = append(rows, Row{Kind: KindDiagnostic, ID: id, Reason: branchReason(err), ParentID: f.parentID, Depth: f.depth})
				continue
			}
		}
		if f.entry.Mode == catalog.ModeUnknown {
			rows = append(rows, Row{Kind: KindDiagnostic, ID: id, Reason: ReasonUnsupported, ParentID: f.parentID, Depth: f.depth})
		} else {
			rows = append(rows, Row{Kind: KindChild, ID: id, Mode: Mode(f.entry.Mode), Label: f.entry.Label,
				Activity: w.activity(id), HasChildren: len(children) > 0, ParentID: f.parentID, Depth: f.depth})
		}
		if err := push(children, id, f.depth+1); err != nil {
			return nil, err
		}
	}
	return rows, nil
}

// activity is running when a live dsh process holds the session (DSH: the
// id is in its live Session store), inactive otherwise.
func (w *catalogWalk) activity(id string) Activity {
	if _, ok := w.live[id]; ok {
		return ActivityRunning
	}
	return ActivityInactive
}

// branchReason maps a branch that cannot be read to its diagnostic: corrupt
// for a log DSH refuses (damaged, failing validation, a catalog it cannot
// fold or admit, a back-fill it refuses), unavailable for anything else,
// a missing session included.
func branchReason(err error) Reason {
	var ce *catalog.Error
	var ve *session.ValidationError
	var sr storedReason
	switch {
	case errors.As(err, &sr):
		return Reason(sr)
	case errors.Is(err, backend.ErrNotFound):
		return ReasonUnavailable
	case errors.As(err, &ce), errors.As(err, &ve), errors.Is(err, backend.ErrCorrupt),
		// What a store recorded about a log that failed validation.
		dsherr.CodeOf(err) == dsherr.InvalidLog:
		return ReasonCorrupt
	}
	return ReasonUnavailable
}

// rootError is the listing's error when the root cannot be read.
func rootError(ctx context.Context, root string, err error) error {
	if ctx.Err() != nil {
		return ErrCancelled
	}
	var ce *catalog.Error
	var de *dsherr.Error
	switch {
	case errors.Is(err, backend.ErrNotFound):
		return &dsherr.Error{Code: dsherr.NotFound, Msg: fmt.Sprintf("no session with id %q", root), Err: err}
	case errors.As(err, &ce):
		return &dsherr.Error{Code: dsherr.InvalidLog, Msg: fmt.Sprintf("DSH 0.1.7 cannot read session %q: %v", root, err), Err: err}
	case errors.As(err, &de):
		return err
	case branchReason(err) == ReasonCorrupt:
		return &dsherr.Error{Code: dsherr.InvalidLog, Msg: fmt.Sprintf("session %q cannot be read: %v", root, err), Err: err}
	}
	return err
}

func cancelledOr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ErrCancelled
	}
	return err
}

// catalogOf is DSH 0.1.7's listChildren(id): the session's catalog view,
// or why it cannot be read.
func (w *catalogWalk) catalogOf(ctx context.Context, id string) ([]catalog.Entry, error) {
	if c, ok := w.catalogs[id]; ok {
		return c.entries, c.err
	}
	entries, err := w.computeCatalog(ctx, id)
	if ctx.Err() != nil {
		return nil, ErrCancelled
	}
	w.catalogs[id] = catalogResult{entries, err}
	return entries, err
}

func (w *catalogWalk) computeCatalog(ctx context.Context, id string) ([]catalog.Entry, error) {
	r := w.read(ctx, id)
	if r.err != nil {
		return nil, r.err
	}
	h := r.header
	if h.Version >= catalog.NativeFormat {
		return catalog.View(h.Version, r.events, h.InheritedCut(), h.CreatedAt, nil)
	}
	evidence, err := w.evidence(ctx, id)
	if err != nil {
		return nil, err
	}
	return catalog.View(h.Version, r.events, h.InheritedCut(), h.CreatedAt, evidence)
}

// evidence is what DSH's persistence hands the back-fill for parent: every
// subagent-origin session naming it as parent, with its own descriptors;
// a child whose log cannot be read, or whose first own descriptor is
// malformed, still gives its identity (no descriptor), as DSH's
// persistence does.
func (w *catalogWalk) evidence(ctx context.Context, parent string) ([]catalog.Evidence, error) {
	if has, known := w.parents[parent]; known && !has {
		return nil, nil
	}
	var kids []session.Header
	err := w.l.Headers.ChildrenOf(ctx, parent, func(h session.Header) error {
		if h.IsSubagent() {
			kids = append(kids, h)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(kids))
	for i, h := range kids {
		ids[i] = h.ID
	}
	if err := w.readMany(ctx, ids); err != nil {
		return nil, err
	}
	out := make([]catalog.Evidence, 0, len(kids))
	for _, h := range kids {
		out = append(out, w.evidenceOf(ctx, h.ID, h.CreatedAt))
	}
	return out, nil
}

// evidenceOf is one child's evidence for its parent's back-fill, from its
// log (read once per listing).
func (w *catalogWalk) evidenceOf(ctx context.Context, id string, createdAt int64) catalog.Evidence {
	ev := catalog.Evidence{ChildID: id, ChildCreatedAt: createdAt}
	r := w.read(ctx, id)
	if r.err != nil {
		return ev
	}
	cut := r.header.InheritedCut()
	for _, e := range r.events {
		if e.Type != session.TypeDescriptor || e.Seq < cut {
			continue
		}
		if ev.DescriptorCount == 0 {
			ev.Descriptor = e.Data
		}
		ev.DescriptorCount++
	}
	if ev.Descriptor != nil {
		if _, err := ParseDescriptor(ev.Descriptor); err != nil {
			// Bad descriptor fields: DSH's persistence warns and
			// supplies the identity alone (an unknown entry).
			ev.Descriptor, ev.DescriptorCount = nil, 0
		}
	}
	return ev
}

// read is the session's cold read of catalogEventTypes, at most once per
// listing.
func (w *catalogWalk) read(ctx context.Context, id string) *catalogRead {
	if r, ok := w.reads[id]; ok {
		return r
	}
	h, events, err := w.l.Cold.ColdRead(ctx, id, catalogEventTypes)
	w.logReads++
	r := &catalogRead{header: h, events: events, err: err}
	w.reads[id] = r
	return r
}

// prefetch reads, in as few reads as the corpus allows, the logs of the
// entries about to be walked: one batch of their catalog rows (for dsh's
// store, a range of the catalog index, migration 0008, per log).
func (w *catalogWalk) prefetch(ctx context.Context, entries []catalog.Entry, visited map[string]bool) error {
	var ids []string
	for _, e := range entries {
		if e.Mode == catalog.ModeExternal || visited[e.ID] {
			continue
		}
		if _, done := w.catalogs[e.ID]; done {
			continue
		}
		ids = append(ids, e.ID)
	}
	if err := w.storedViews(ctx, ids, false); err != nil {
		return err
	}
	ids = slices.DeleteFunc(ids, func(id string) bool {
		_, done := w.catalogs[id]
		return done
	})
	if len(ids) == 0 {
		return nil
	}
	if err := w.readMany(ctx, ids); err != nil {
		return err
	}
	return w.learnParents(ctx, ids)
}

// learnParents asks, in one lookup when the corpus can answer it, which of
// the V0–V3 sessions among ids have subagent children (whose evidence their
// back-fill needs); a failed lookup is no verdict (each is enumerated).
func (w *catalogWalk) learnParents(ctx context.Context, ids []string) error {
	src, ok := w.l.Headers.(backend.SubagentParentReader)
	if !ok {
		return nil
	}
	var older []string
	for _, id := range ids {
		if r, read := w.reads[id]; read && r.err == nil && r.header.Version < catalog.NativeFormat {
			older = append(older, id)
		}
	}
	if len(older) < 2 {
		return nil
	}
	has, err := src.SubagentParents(ctx, older)
	if ctx.Err() != nil {
		return ErrCancelled
	}
	if err != nil {
		return nil
	}
	for _, id := range older {
		w.parents[id] = has[id]
	}
	return nil
}

// readMany reads the logs of ids not read yet, in one batch when the cold
// reader serves batches; what the batch leaves out is read on demand.
func (w *catalogWalk) readMany(ctx context.Context, ids []string) error {
	batch, ok := w.l.Cold.(BatchColdReader)
	if !ok {
		return nil
	}
	var todo []string
	for _, id := range ids {
		if _, done := w.reads[id]; !done {
			todo = append(todo, id)
		}
	}
	if len(todo) < 2 {
		return nil
	}
	logs, err := batch.ColdReadMany(ctx, todo, catalogEventTypes)
	if ctx.Err() != nil {
		return ErrCancelled
	}
	if err != nil {
		// A batch that fails is no verdict: each log is read on its own.
		return nil
	}
	for id, log := range logs {
		if log.RegistryFold != nil {
			// A recorded fold stands in for the events: no catalog in it.
			continue
		}
		w.logReads++
		w.reads[id] = &catalogRead{header: log.Header, events: log.Events, err: log.Err}
	}
	return nil
}
