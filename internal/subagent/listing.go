package subagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/corpus"
	"github.com/dsh-project/dsh/internal/dshcompat"
	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/projcache"
	"github.com/dsh-project/dsh/internal/session"
)

// DefaultColdConcurrency is DSH's COLD_READ_CONCURRENCY.
const DefaultColdConcurrency = 4

// BatchColdReader is a ColdReader that can serve many cold reads at once.
// Ids it leaves out of the result are read one at a time with ColdRead; for
// the ids it returns, ColdRead would return the same header and events, or
// fail as Err says.
type BatchColdReader interface {
	ColdReadMany(ctx context.Context, ids []string, types []string) (map[string]ColdLog, error)
}

// ColdLog is one cold read: the stored header and the requested events;
// or Err when the read fails (the row is then unavailable); or, in place of
// the events, the registry fold recorded beside the log when it was stored
// (see RecordRegistryFold), for the header the listing enumerated.
type ColdLog struct {
	Header       session.Header
	Events       []session.Event
	Err          error
	RegistryFold []byte
}

// ColdReader reads a cold child's stored header and the events of the given
// types (nil = every event) from its valid stored prefix. It must fail exactly when a full read
// of the log would fail (unreadable, damaged, or failing DSH's validation);
// such a failure makes the row `unavailable`.
type ColdReader interface {
	ColdRead(ctx context.Context, id string, types []string) (session.Header, []session.Event, error)
}

// IdentityCache serves rung 2: for each header it returns the cached raw view
// of the `subagent` unit of a checkpoint that belongs to that header's
// lifecycle and the unit's state version. Absent ids are misses. Any error is
// treated as a miss for every header (the cache is derived data; its failure
// is never a verdict).
type IdentityCache interface {
	CachedSubagentViews(ctx context.Context, headers []session.Header) (map[string]json.RawMessage, error)
}

// Lister produces DSH's catalog rows for a corpus: listChildren and
// listDescendants with the later revision's three-rung ladder and the
// four-state row mapping.
type Lister struct {
	Headers corpus.HeaderSource
	Live    corpus.LiveSource // nil: nothing is live
	Cold    ColdReader
	Cache   IdentityCache // nil: no rung 2
	// Units is the projection registry folded over a cold child's log; it
	// must have the `subagent` unit registered (see NewRegistry).
	Units *projcache.Registry
	// Profile is whose listing rules apply (--dsh-compat); the zero value
	// is dshcompat.Default.
	Profile dshcompat.Profile
	// Descriptors, when set, reads the descriptor events that identities
	// dsh folded name (its holders' snapshots, its checkpoint records, its
	// recorded registry folds): under 0.1.0-rc.8 such an identity is used
	// only when its descriptor is not version 3 (see listing_rc8.go). Nil
	// when every identity served without a read is DSH's own (a foreign
	// corpus's projection cache), which rc.8 trusts as DSH does.
	Descriptors backend.DescriptorReader
	// ColdConcurrency bounds concurrent cold reads (default 4).
	ColdConcurrency int
	// resolvedRows is set by NewStoreLister: ListChildren may serve the
	// default profile's listing from the store's resolved rows
	// (listResolved), which its own ladder resolved.
	resolvedRows bool
	// ownCold is the batch reader NewLister made over the corpus, nil
	// when it made none: while Cold is still it, a listing may read the
	// cold logs with the headers (ChildListingCold), as it would read
	// them; any other Cold, such as one observing reads, is called for
	// every read.
	ownCold *batchColdReader
	// Snapshot, when set, runs the enumeration (live records, candidate
	// headers, hasChildren) inside one consistent read of the corpus: it
	// calls fn with Headers and Live, or with views of them bound to that
	// read. Without it a child created and leased between reading the live
	// records and reading the headers would list as a cold child of a
	// running session.
	Snapshot func(ctx context.Context, headers corpus.HeaderSource, live corpus.LiveSource, fn func(corpus.HeaderSource, corpus.LiveSource) error) error
}

// ErrCancelled is the CANCELLED listing error.
var ErrCancelled = dsherr.New(dsherr.Cancelled, "subagent listing was cancelled")

// ListChildren lists the direct subagent children of parent (under the
// 0.1.7 profile: the first level of ListCatalog's walk).
func (l *Lister) ListChildren(ctx context.Context, parent string) ([]Row, error) {
	if l.Profile.CatalogAuthority() {
		listing, err := l.ListCatalog(ctx, parent, corpus.ScopeChildren)
		return listing.Rows, err
	}
	if rows, ok, err := l.listResolved(ctx, parent); ok || err != nil {
		return rows, err
	}
	res, err := l.ResolveChildren(ctx, parent)
	return rowsOf(res), err
}

// ListDescendants lists every subagent-origin session below root, in
// pre-order, each row carrying parentId and depth.
func (l *Lister) ListDescendants(ctx context.Context, root string) ([]Row, error) {
	if l.Profile.CatalogAuthority() {
		listing, err := l.ListCatalog(ctx, root, corpus.ScopeDescendants)
		return listing.Rows, err
	}
	res, err := l.ResolveDescendants(ctx, root)
	return rowsOf(res), err
}

// ResolveChildren is ListChildren with how each candidate was resolved,
// including omitted ones (for diagnose).
func (l *Lister) ResolveChildren(ctx context.Context, parent string) ([]Resolution, error) {
	return l.resolve(ctx, func(c *corpus.Corpus, headers corpus.HeaderSource) ([]corpus.Record, []storedRecord, error) {
		if src, ok := headers.(backend.ChildListingReader); ok && l.Cache != nil && !c.HasLive() {
			// The checkpoints are derived data: when reading them with the
			// headers fails, the listing goes on without them.
			var types []string // nil: no cold reads with the headers
			if l.ownCold != nil && l.Cold == ColdReader(l.ownCold) {
				types = l.foldTypes()
			}
			if recs, stored, err := listStored(ctx, src, parent, types); err == nil || ctx.Err() != nil {
				return recs, stored, err
			}
		}
		recs, err := c.Children(ctx, parent)
		return recs, nil, err
	}, corpus.ScopeChildren)
}

// ResolveDescendants is ListDescendants with resolutions.
func (l *Lister) ResolveDescendants(ctx context.Context, root string) ([]Resolution, error) {
	return l.resolve(ctx, func(c *corpus.Corpus, headers corpus.HeaderSource) ([]corpus.Record, []storedRecord, error) {
		if src, ok := headers.(backend.SubtreeListingReader); ok && l.Cache != nil && !c.HasLive() {
			// As for children: a failing checkpoint read is no verdict.
			if recs, stored, err := listStoredTree(ctx, c, src, root); err == nil || ctx.Err() != nil {
				return recs, stored, err
			}
		}
		recs, err := c.Descendants(ctx, root)
		return recs, nil, err
	}, corpus.ScopeDescendants)
}

// ResolveRecords runs the ladder over records the caller enumerated itself;
// in descendants scope the rows carry each record's place in the tree.
func (l *Lister) ResolveRecords(ctx context.Context, recs []corpus.Record, scope corpus.Scope) ([]Resolution, error) {
	return l.resolveRecords(ctx, recs, nil, scope)
}

// resolveRecords is ResolveRecords; stored, when not nil, holds each
// record's checkpoint as read with its header, in place of rung 2's lookup.
func (l *Lister) resolveRecords(ctx context.Context, recs []corpus.Record, stored []storedRecord, scope corpus.Scope) ([]Resolution, error) {
	if err := l.mounted(false); err != nil {
		return nil, err
	}
	if err := checkCancelled(ctx); err != nil {
		return nil, err
	}
	start := time.Now()
	out := make([]Resolution, len(recs))
	var cold []int
	for i, rec := range recs {
		if rec.Live != nil {
			out[i] = l.resolveLive(ctx, rec)
			continue
		}
		cold = append(cold, i)
	}
	var pending []int
	if stored != nil {
		pending = l.resolveFromStored(recs, stored, cold, out)
	} else {
		pending = l.resolveFromCache(ctx, recs, cold, out)
	}
	pending, err := l.checkServedRC8(ctx, recs, pending, out)
	if err != nil {
		return nil, err
	}
	if stored != nil {
		pending = l.resolveListedCold(recs, stored, pending, out)
	}
	if err := l.readCold(ctx, recs, pending, out); err != nil {
		return nil, err
	}
	if err := l.checkFoldsRC8(ctx, recs, out); err != nil {
		return nil, err
	}
	if err := checkCancelled(ctx); err != nil {
		return nil, err
	}
	for i := range out {
		if r := out[i].Row; r != nil {
			r.ID = recs[i].Header.ID
			if r.Kind == KindChild {
				r.HasChildren = recs[i].HasChildren
			}
			if scope == corpus.ScopeDescendants {
				r.ParentID, r.Depth = recs[i].ParentID, recs[i].Depth
			}
		}
	}
	logResolutions(ctx, recs, out, time.Since(start))
	return out, nil
}

func (l *Lister) resolve(ctx context.Context, enumerate func(*corpus.Corpus, corpus.HeaderSource) ([]corpus.Record, []storedRecord, error), scope corpus.Scope) ([]Resolution, error) {
	if err := l.mounted(true); err != nil {
		return nil, err
	}
	if err := checkCancelled(ctx); err != nil {
		return nil, err
	}
	var (
		recs   []corpus.Record
		stored []storedRecord
	)
	read := func(headers corpus.HeaderSource, live corpus.LiveSource) error {
		c, err := corpus.Load(ctx, headers, live)
		if err != nil {
			return err
		}
		recs, stored, err = enumerate(c, headers)
		return err
	}
	if err := l.inSnapshot(ctx, read); err != nil {
		return nil, err
	}
	return l.resolveRecords(ctx, recs, stored, scope)
}

// inSnapshot calls read with the lister's headers and live records, in
// one snapshot of them when the lister has one (Snapshot); an error once
// ctx is done is ErrCancelled.
func (l *Lister) inSnapshot(ctx context.Context, read func(corpus.HeaderSource, corpus.LiveSource) error) error {
	var err error
	if l.Snapshot != nil {
		err = l.Snapshot(ctx, l.Headers, l.Live, read)
	} else {
		err = read(l.Headers, l.Live)
	}
	if err != nil && ctx.Err() != nil {
		return ErrCancelled
	}
	return err
}

// mounted is DSH's first preparation step: a listing without the projection
// registry or the session store fails before anything else, cancellation
// included, even when there would be no children. dsh always wires both
// (NewStoreLister); this turns a wiring mistake into an error, not a crash.
func (l *Lister) mounted(enumerates bool) error {
	switch {
	case l.Units == nil:
		return dsherr.New(dsherr.Internal, "listing subagents requires the projection registry")
	case enumerates && l.Headers == nil, l.Cold == nil:
		return dsherr.New(dsherr.Internal, "listing subagents requires the session store")
	}
	return nil
}

func checkCancelled(ctx context.Context) error {
	if ctx.Err() != nil {
		return ErrCancelled
	}
	return nil
}

func rowsOf(res []Resolution) []Row {
	if res == nil {
		return nil
	}
	rows := make([]Row, 0, len(res))
	for _, r := range res {
		if r.Row != nil {
			rows = append(rows, *r.Row)
		}
	}
	return rows
}

func childRow(id *Identity, activity Activity) *Row {
	return &Row{Kind: KindChild, Mode: id.Mode, Label: id.Label, Activity: activity}
}

func diagnostic(reason Reason) *Row { return &Row{Kind: KindDiagnostic, Reason: reason} }

// Causes attached to resolutions, for diagnose and tests.
var (
	ErrNoIdentity      = errors.New("no subagent identity")
	ErrAncestorOnly    = errors.New("the only identity comes from the inherited seed")
	ErrWitnessMismatch = errors.New("stored header belongs to another lifecycle")
	ErrUnitFailed      = errors.New("projection unit failed")
)

// resolveLive is rung 1: the holder's published snapshot, zero log reads.
// Under 0.1.0-rc.8 every registered unit counts (liveOtherUnitsRC8) and
// there is no own-suffix check: an ancestor's identity replayed from the
// seed is listed.
func (l *Lister) resolveLive(ctx context.Context, rec corpus.Record) Resolution {
	live := rec.Live
	if live.UnitFailure != "" {
		return Resolution{Row: diagnostic(ReasonCorrupt), Rung: RungLive, Cause: fmt.Errorf("%w: %s", ErrUnitFailed, live.UnitFailure)}
	}
	id, err := IdentityFromView(live.Subagent)
	if err != nil {
		return Resolution{Row: diagnostic(ReasonCorrupt), Rung: RungLive, Cause: fmt.Errorf("%w: %v", ErrUnitFailed, err)}
	}
	rc8 := l.rc8()
	if rc8 {
		if err := l.liveOtherUnitsRC8(ctx, rec); err != nil {
			return Resolution{Row: diagnostic(ReasonCorrupt), Rung: RungLive, Cause: fmt.Errorf("%w: %v", ErrUnitFailed, err)}
		}
	}
	if id == nil {
		return Resolution{Rung: RungLive, Cause: ErrNoIdentity}
	}
	if !rc8 && !OwnSuffix(id.Seq, rec.Header.InheritedCut()) {
		// Later revision: an ancestor identity replayed from the seed is
		// not this child's own; while running, that is the creation window.
		return Resolution{Rung: RungLive, Cause: ErrAncestorOnly, Identity: id}
	}
	return Resolution{Row: childRow(id, ActivityRunning), Rung: RungLive, Identity: id}
}

// resolveFromCache is rung 2 for cold unseeded candidates: a cached valid
// identity is final. It fills out for those and returns the indexes still
// needing a full read.
func (l *Lister) resolveFromCache(ctx context.Context, recs []corpus.Record, cold []int, out []Resolution) []int {
	if l.Cache == nil || len(cold) == 0 {
		return cold
	}
	if l.rc8() {
		return l.resolveFromCacheRC8(ctx, recs, cold, out)
	}
	var headers []session.Header
	for _, i := range cold {
		if !recs[i].Header.IsSeeded() {
			headers = append(headers, recs[i].Header)
		}
	}
	if len(headers) == 0 {
		return cold
	}
	views, err := l.Cache.CachedSubagentViews(ctx, headers)
	if err != nil {
		return cold
	}
	var pending []int
	for _, i := range cold {
		h := recs[i].Header
		if !h.IsSeeded() {
			if id, err := IdentityFromView(views[h.ID]); err == nil && id != nil {
				out[i] = Resolution{Row: childRow(id, ActivityInactive), Rung: RungCache, Identity: id}
				continue
			}
		}
		pending = append(pending, i)
	}
	return pending
}

// readCold is rung 3 for every pending candidate, with bounded concurrency;
// each result lands at its candidate's index, so order never depends on
// timing.
func (l *Lister) readCold(ctx context.Context, recs []corpus.Record, pending []int, out []Resolution) error {
	types := l.foldTypes() // once per listing, not per child
	pending, err := l.readColdBatch(ctx, recs, pending, out, types)
	if err != nil {
		return err
	}
	if len(pending) == 0 {
		return nil
	}
	workers := l.ColdConcurrency
	if workers <= 0 {
		workers = DefaultColdConcurrency
	}
	if workers > len(pending) {
		workers = len(pending)
	}
	jobs := make(chan int)
	var wg sync.WaitGroup
	var once sync.Once
	var firstErr error
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				res, err := l.readOne(ctx, recs[i], types)
				if err != nil {
					once.Do(func() { firstErr = err })
					continue
				}
				out[i] = res
			}
		}()
	}
	for _, i := range pending {
		if ctx.Err() != nil {
			break
		}
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	return checkCancelled(ctx)
}

func (l *Lister) readOne(ctx context.Context, rec corpus.Record, types []string) (Resolution, error) {
	if err := checkCancelled(ctx); err != nil {
		return Resolution{}, err
	}
	stored, events, err := l.Cold.ColdRead(ctx, rec.Header.ID, types)
	if cerr := checkCancelled(ctx); cerr != nil {
		return Resolution{}, cerr
	}
	if err != nil {
		return Resolution{Row: diagnostic(ReasonUnavailable), Rung: RungRead, Cause: err}, nil
	}
	return l.resolveRead(rec, stored, events), nil
}

// foldTypes is the event types the registered units read, nil when some
// unit reads every event.
func (l *Lister) foldTypes() []string {
	types, typed := l.Units.EventTypes()
	if !typed {
		return nil
	}
	return types
}

// readColdBatch serves as many pending candidates as the cold reader can
// read in one go (a BatchColdReader: for dsh's store, every log recorded as
// verified, as unreadable or with its registry fold) and returns the candidates still to be read one at a time. A
// batch that fails is no verdict: its candidates are read one at a time.
func (l *Lister) readColdBatch(ctx context.Context, recs []corpus.Record, pending []int, out []Resolution, types []string) ([]int, error) {
	batch, ok := l.Cold.(BatchColdReader)
	if !ok || len(pending) < 2 || types == nil {
		return pending, nil
	}
	if err := checkCancelled(ctx); err != nil {
		return nil, err
	}
	ids := make([]string, len(pending))
	for k, i := range pending {
		ids[k] = recs[i].Header.ID
	}
	logs, err := batch.ColdReadMany(ctx, ids, types)
	if cerr := checkCancelled(ctx); cerr != nil {
		return nil, cerr
	}
	if err != nil {
		return pending, nil
	}
	signature := registrySignature(l.Units)
	var rest []int
	for _, i := range pending {
		log, found := logs[recs[i].Header.ID]
		if !found {
			rest = append(rest, i)
			continue
		}
		res, ok := l.resolveColdLog(recs[i], signature, log)
		if !ok {
			rest = append(rest, i)
			continue
		}
		out[i] = res
	}
	return rest, nil
}

// resolveColdLog maps one batch cold read to its row; ok is false when
// the child must still be read on its own (a registry fold this registry
// cannot use).
func (l *Lister) resolveColdLog(rec corpus.Record, signature string, log ColdLog) (Resolution, bool) {
	switch {
	case log.Err != nil:
		return Resolution{Row: diagnostic(ReasonUnavailable), Rung: RungRead, Cause: log.Err}, true
	case log.RegistryFold != nil:
		if l.rc8() && l.Descriptors == nil {
			// Under rc.8 a recorded fold is used only once its
			// descriptor is checked (checkFoldsRC8); with nothing to
			// check it with, the log is read.
			return Resolution{}, false
		}
		return resolveFold(rec, signature, log.RegistryFold, !l.rc8())
	default:
		return l.resolveRead(rec, log.Header, log.Events), true
	}
}

// resolveRead maps a successful cold read to its row: the lifecycle witness,
// the fold of every registered unit, the identity and the own-suffix check.
func (l *Lister) resolveRead(rec corpus.Record, stored session.Header, events []session.Event) Resolution {
	if l.rc8() {
		return l.resolveReadRC8(rec, stored, events)
	}
	if stored.Witness() != rec.Header.Witness() {
		return Resolution{Row: diagnostic(ReasonCorrupt), Rung: RungRead, Cause: ErrWitnessMismatch}
	}
	view, err := l.Units.RestoreView(events, UnitKey)
	if err != nil {
		// Any registered unit failing on a cold log makes the row corrupt.
		return Resolution{Row: diagnostic(ReasonCorrupt), Rung: RungRead, Cause: fmt.Errorf("%w: %v", ErrUnitFailed, err)}
	}
	// The cut comes from the header read with the events: seq and cut of
	// one file (a later format's cut is its tagged marker, which an
	// enumerated header cannot know).
	return resolveFolded(view, stored.InheritedCut(), true)
}

// resolveFolded is the row of a cold log whose units all folded, from its
// `subagent` view and its header's inherited cut; own says whether an
// identity below the cut is the ancestor's (the later revision) or listed
// all the same (0.1.0-rc.8, "deviation #1").
func resolveFolded(view json.RawMessage, cut int64, own bool) Resolution {
	id, err := IdentityFromView(view)
	if err != nil {
		return Resolution{Row: diagnostic(ReasonCorrupt), Rung: RungRead, Cause: fmt.Errorf("%w: %v", ErrUnitFailed, err)}
	}
	if id == nil {
		return Resolution{Row: diagnostic(ReasonCorrupt), Rung: RungRead, Cause: ErrNoIdentity}
	}
	if own && !OwnSuffix(id.Seq, cut) {
		return Resolution{Row: diagnostic(ReasonCorrupt), Rung: RungRead, Cause: ErrAncestorOnly, Identity: id}
	}
	return Resolution{Row: childRow(id, ActivityInactive), Rung: RungRead, Identity: id}
}
