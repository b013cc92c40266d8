package diagnose

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/corpus"
	"github.com/dsh-project/dsh/internal/dshcompat"
	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/projcache"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/subagent"
)

// Selection says which sessions to examine. With IDs, those sessions; with
// Parent, its subagent children (Scope corpus.ScopeDescendants: every subagent-origin
// session below it); with All, every session; with nothing set, every
// subagent-origin session.
type Selection struct {
	IDs    []string
	Parent string
	// HasParent distinguishes a Parent of "" from none.
	HasParent bool
	Scope     corpus.Scope
	All       bool
}

// Options configures an audit.
type Options struct {
	// Profile is whose rules the rows and findings follow (--dsh-compat);
	// the zero value is dshcompat.Default.
	Profile dshcompat.Profile
	Select  Selection
	// Strict makes an unknown id or parent an error (dsherr NOT_FOUND)
	// before anything is examined; otherwise it is an UNKNOWN_SESSION
	// finding.
	Strict bool
	// MaxFindings stops emitting reports once this many findings have
	// been emitted (0: no limit); the audit goes on and the summary counts
	// every session and finding, marked truncated.
	MaxFindings int
	// Progress, when set, is called with the total before the first
	// session and after every examined session.
	Progress func(done, total int)
}

// chunk bounds how many candidates are resolved (and held) at once.
const chunk = 256

// Corpus is what an audit reads: headers, every session streamed by parent
// group, raw logs, leases and checkpoint records. A dsh backend offers it,
// and so does a foreign DSH corpus read in place (no leases; checkpoints
// from DSH's projection cache file, if given).
type Corpus interface {
	backend.HeaderReader
	backend.ChildrenReader
	backend.SessionLister
	backend.LogReader
	backend.LeaseReader
	backend.CheckpointReader
}

// Run audits c (in one read snapshot when c offers one), calling emit with each
// session's report in order: by parent (sessions without one first, then
// parent ids in byte order), then in the catalog's order (createdAt, then
// id as DSH collates it); the default audit ends with the sessions reached
// through their own catalog only (runCatalogParents). It returns the summary. An unknown id or parent
// under Strict, a store that cannot be read, and cancellation are errors; a
// damaged session never is.
func Run(ctx context.Context, c Corpus, opts Options, emit func(Report) error) (Summary, error) {
	if !opts.Select.Scope.Valid() {
		return Summary{}, dsherr.New(dsherr.Usage, "unknown scope %v (want %s)", opts.Select.Scope, strings.Join(corpus.ScopeNames(), " or "))
	}
	sum := newSummary()
	audit := func(view Corpus) error {
		a, err := newAuditor(ctx, view, opts, emit)
		if err != nil {
			return err
		}
		err = a.run(ctx)
		sum = a.summary
		return err
	}
	var err error
	if v, ok := c.(backend.Viewer); ok {
		err = v.View(ctx, func(view backend.Store) error { return audit(view) })
	} else {
		err = audit(c)
	}
	if err != nil && ctx.Err() != nil {
		return sum, dsherr.Wrap(dsherr.Cancelled, ctx.Err(), "diagnose was cancelled")
	}
	return sum, err
}

// auditor is one audit's state; everything it reads goes through view.
type auditor struct {
	view   Corpus
	opts   Options
	emit   func(Report) error
	lister *subagent.Lister
	corpus *corpus.Corpus
	reg    *projcache.Registry
	// records holds the checkpoint records of the chunk being examined,
	// read in one query; cache reads them, and so does the ladder's cache
	// rung through idents.
	records *projcache.MemoryRecords
	cache   *projcache.Cache
	idents  *chunkIdentities
	leases  leaseIndex
	summary Summary
	// shown counts the findings emitted; once it reaches MaxFindings,
	// limitReached stops emitting (the audit and its counts go on).
	shown        int
	limitReached bool
	done         int
	total        int
	// refused is what a store recorded of the sessions an import could
	// not store and keeps no header of (a foreign corpus: nil).
	refused []backend.Unoffered
	// parent memoizes the last parent header looked up: sessions are
	// visited grouped by parent.
	parent struct {
		id     string
		looked bool
		header *session.Header // nil: no such session
	}
	// catalogs holds the catalogs of the parents whose children were
	// examined last (parentCatalog), nil where the cross-check does not
	// apply.
	catalogs map[string]*catalogView
	// listed holds the 0.1.7 listing whose rows the reports carry under
	// --dsh-compat 0.1.7 (catalog_rows.go).
	listed *listedRows
}

func newAuditor(ctx context.Context, view Corpus, opts Options, emit func(Report) error) (*auditor, error) {
	leases, err := readLeases(ctx, view)
	if err != nil {
		return nil, err
	}
	live := leases.liveSource()
	// One connection serves the whole snapshot, so parallel cold reads
	// would only queue behind each other.
	reg := subagent.NewRegistry()
	idents := &chunkIdentities{}
	lister := subagent.NewLister(view, live, idents, 1)
	lister.Profile = opts.Profile
	c, err := corpus.Load(ctx, view, live)
	if err != nil {
		return nil, err
	}
	refused, err := readRefusals(ctx, view)
	if err != nil {
		return nil, err
	}
	return &auditor{
		refused:  refused,
		view:     view,
		opts:     opts,
		emit:     emit,
		lister:   lister,
		corpus:   c,
		reg:      reg,
		idents:   idents,
		leases:   leases,
		summary:  newSummary(),
		catalogs: map[string]*catalogView{},
	}, nil
}

// item is one session to examine: its (live-merged) header and, for a
// listing candidate, the corpus record the catalog resolves.
type item struct {
	header session.Header
	rec    *corpus.Record
	// unknown marks an id named on the command line that does not exist.
	unknown bool
}

func (a *auditor) run(ctx context.Context) error {
	sel := a.opts.Select
	var err error
	switch {
	case len(sel.IDs) > 0:
		err = a.runIDs(ctx, sel.IDs)
	case sel.HasParent:
		err = a.runParent(ctx, sel.Parent, sel.Scope)
	default:
		err = a.runStore(ctx, !sel.All)
	}
	if err != nil {
		return err
	}
	return a.reportUnoffered(ctx)
}

// unoffered is what the corpus cannot offer, nil for a corpus that offers
// every session it holds.
func (a *auditor) unoffered() []backend.Unoffered {
	if u, ok := a.view.(backend.UnofferedReader); ok {
		return u.Unoffered()
	}
	return a.refused
}

// readRefusals reads what a store recorded of the sessions an import found
// but could not store without a header: each is reported as the source in
// place reports it. (One whose header the store keeps is a session of the
// store, audited as any other: its log reads as the refusal.)
func readRefusals(ctx context.Context, view Corpus) ([]backend.Unoffered, error) {
	rr, ok := view.(backend.RefusalReader)
	if !ok {
		return nil, nil
	}
	var out []backend.Unoffered
	err := rr.Refusals(ctx, func(r backend.Refusal) error {
		if !r.Listed {
			out = append(out, backend.Unoffered{Location: r.Location, ID: r.ID, Err: errors.New(r.Reason)})
		}
		return nil
	})
	return out, err
}

// reportUnoffered reports every session the corpus holds but cannot offer
// (with IDs selected, those named): no header means no parent to list it
// under, so each is its own report, counted like any other.
func (a *auditor) reportUnoffered(ctx context.Context) error {
	for _, u := range a.unoffered() {
		if ids := a.opts.Select.IDs; len(ids) > 0 && !slices.Contains(ids, u.ID) {
			continue
		}
		id := u.ID
		if id == "" {
			id = u.Location
		}
		s := &sessionAudit{header: session.Header{ID: id}}
		detail := u.Err.Error()
		if !strings.Contains(detail, u.Location) {
			detail = u.Location + ": " + detail
		}
		s.add(HeaderUnreadable, nil, "%s: no listing shows this session", detail)
		if err := a.record(ctx, Report{ID: id, RowKind: RowNotListed, Findings: s.findings}); err != nil {
			return err
		}
	}
	return nil
}

// isUnoffered reports whether id names a session the corpus holds but
// cannot offer.
func (a *auditor) isUnoffered(id string) bool {
	return slices.ContainsFunc(a.unoffered(), func(u backend.Unoffered) bool { return u.ID == id })
}

func (a *auditor) start(total int) {
	a.total = total
	if a.opts.Progress != nil {
		a.opts.Progress(0, total)
	}
}

// runStore examines every session (subagentOnly: every subagent-origin
// session), one parent's group at a time.
func (a *auditor) runStore(ctx context.Context, subagentOnly bool) error {
	total, err := a.view.CountSessions(ctx, subagentOnly)
	if err != nil {
		return err
	}
	a.start(total)
	if err := a.runRoots(ctx, subagentOnly); err != nil {
		return err
	}
	err = a.view.EachParent(ctx, subagentOnly, func(parent string) error {
		if !subagentOnly {
			return a.runGroup(ctx, parent, subagentOnly)
		}
		// A parent that is not itself a subagent is not examined here,
		// yet its catalog decides whether DSH 0.1.7+ lists these
		// children at all: its catalog damage is reported before them,
		// its cataloged children without a session after them.
		examined, err := a.examinedInStore(ctx, parent)
		if err != nil || examined {
			if err != nil {
				return err
			}
			return a.runGroup(ctx, parent, subagentOnly)
		}
		if err := a.reportParentFacts(ctx, parent); err != nil {
			return err
		}
		if err := a.runGroup(ctx, parent, subagentOnly); err != nil {
			return err
		}
		return a.reportMissing(ctx, parent)
	})
	if err != nil || !subagentOnly {
		return err
	}
	return a.runCatalogParents(ctx)
}

// runCatalogParents reports, after the subagent sessions, what the parents
// reached through none of them hide: a session that is not a subagent, has
// no subagent child, yet has catalog facts of its own (every child they
// name is missing, or they are malformed and name none present). DSH
// 0.1.7+ lists only unavailable rows for it, or fails on it. Its catalog
// damage and its missing children are reported as for any parent above
// the subagent sessions; a session without own facts yields nothing.
func (a *auditor) runCatalogParents(ctx context.Context) error {
	return a.view.CatalogSessions(ctx, func(id string) error {
		examined, err := a.examinedInStore(ctx, id)
		if err != nil || examined {
			return err
		}
		// One with a subagent child was reached through it (EachParent).
		hasChild, err := a.view.HasSubagentChild(ctx, id)
		if err != nil || hasChild {
			return err
		}
		if err := a.reportParentFacts(ctx, id); err != nil {
			return err
		}
		return a.reportMissing(ctx, id)
	})
}

// examinedInStore reports whether the audit of every subagent-origin
// session examines parent itself (a subagent, stored or live); an unknown
// parent is not examined.
func (a *auditor) examinedInStore(ctx context.Context, parent string) (bool, error) {
	h, err := a.parentHeader(ctx, parent)
	return h != nil && h.IsSubagent(), err
}

// runRoots examines the sessions without a parent. They are never listing
// candidates, so they stream straight from the store; only a run of equal
// createdAt is held, to order it as the catalog orders ids.
func (a *auditor) runRoots(ctx context.Context, subagentOnly bool) error {
	var run []item
	flush := func() error {
		corpus.SortHeaders(run, func(it item) session.Header { return it.header })
		err := a.examineAll(ctx, run, corpus.ScopeChildren)
		run = run[:0]
		return err
	}
	err := a.view.RootHeaders(ctx, subagentOnly, func(h session.Header) error {
		if len(run) > 0 && run[0].header.CreatedAt != h.CreatedAt {
			if err := flush(); err != nil {
				return err
			}
		}
		run = append(run, item{header: a.merged(h)})
		return nil
	})
	if err != nil {
		return err
	}
	return flush()
}

// merged is h as the corpus sees it: a live holder's header wins.
func (a *auditor) merged(h session.Header) session.Header {
	if l, ok := a.leases.live[h.ID]; ok {
		return l.Header
	}
	return h
}

// runGroup examines the children of parent: the listing candidates in
// catalog order, and with every origin also the ordinary sessions among
// them.
func (a *auditor) runGroup(ctx context.Context, parent string, subagentOnly bool) error {
	if subagentOnly {
		return a.examineChildren(ctx, parent)
	}
	recs, err := a.corpus.Children(ctx, parent)
	if err != nil {
		return err
	}
	items := make([]item, len(recs))
	for i := range recs {
		items[i] = item{header: recs[i].Header, rec: &recs[i]}
	}
	if !subagentOnly {
		err := a.view.ChildrenOf(ctx, parent, func(h session.Header) error {
			if h = a.merged(h); !h.IsSubagent() || h.Parent() != parent {
				items = append(items, item{header: h})
			}
			return nil
		})
		if err != nil {
			return err
		}
		corpus.SortHeaders(items, func(it item) session.Header { return it.header })
	}
	return a.examineAll(ctx, items, corpus.ScopeChildren)
}

// runParent examines parent's children or descendants.
func (a *auditor) runParent(ctx context.Context, parent string, scope corpus.Scope) error {
	known, err := a.exists(ctx, parent)
	if err != nil {
		return err
	}
	if !known && a.opts.Strict {
		return unknownError(parent)
	}
	if scope == corpus.ScopeChildren {
		return a.runChildren(ctx, parent, known)
	}
	recs, err := a.corpus.Descendants(ctx, parent)
	if err != nil {
		return err
	}
	// Pre-order keeps siblings in catalog order; grouping by parent then
	// gives the audit's order.
	slices.SortStableFunc(recs, func(x, y corpus.Record) int { return cmp.Compare(x.ParentID, y.ParentID) })
	items := make([]item, 0, len(recs)+1)
	if !known {
		items = append(items, item{header: session.Header{ID: parent}, unknown: true})
	}
	for i := range recs {
		items = append(items, item{header: recs[i].Header, rec: &recs[i]})
	}
	a.start(len(items))
	if err := a.reportParentOf(ctx, parent, known); err != nil {
		return err
	}
	if err := a.examineAll(ctx, items, scope); err != nil {
		return err
	}
	return a.reportMissing(ctx, parent)
}

// reportParentOf reports the facts of a known parent's own catalog before
// its children: the parent is not examined, but that catalog decides
// whether DSH 0.1.7+ lists any of them (every parent below it is examined,
// and its audit reports its own).
func (a *auditor) reportParentOf(ctx context.Context, parent string, known bool) error {
	if !known {
		return nil
	}
	return a.reportParentFacts(ctx, parent)
}

// runChildren examines parent's children a page at a time
// (corpus.ChildrenPages), so the audit of a 100,000-child parent holds one
// page of them.
func (a *auditor) runChildren(ctx context.Context, parent string, known bool) error {
	total := 0
	if a.opts.Progress != nil {
		n, err := a.corpus.CountChildren(ctx, parent)
		if err != nil {
			return err
		}
		total = n
	}
	if !known {
		total++
	}
	a.start(total)
	if !known {
		if err := a.examineAll(ctx, []item{{header: session.Header{ID: parent}, unknown: true}}, corpus.ScopeChildren); err != nil {
			return err
		}
	}
	if err := a.reportParentOf(ctx, parent, known); err != nil {
		return err
	}
	if err := a.examineChildren(ctx, parent); err != nil {
		return err
	}
	return a.reportMissing(ctx, parent)
}

// childrenPage is how many children an audit reads and holds at once.
var childrenPage = 4 * chunk

// examineChildren examines parent's listing candidates in catalog order,
// a page at a time.
func (a *auditor) examineChildren(ctx context.Context, parent string) error {
	return a.corpus.ChildrenPages(ctx, parent, childrenPage, func(recs []corpus.Record) error {
		items := make([]item, len(recs))
		for i := range recs {
			items[i] = item{header: recs[i].Header, rec: &recs[i]}
		}
		return a.examineAll(ctx, items, corpus.ScopeChildren)
	})
}

// reportMissing reports, after an audit of parent's children or
// descendants, the children parent's catalog names without a session:
// parent itself is not examined, so its own audit does not report them
// (every parent below it is, and does).
func (a *auditor) reportMissing(ctx context.Context, parent string) error {
	v, err := a.parentCatalog(ctx, parent)
	if err != nil || v == nil {
		return err
	}
	missing, err := a.missingChildren(ctx, v)
	if err != nil {
		return err
	}
	for _, r := range missing {
		if err := a.record(ctx, r); err != nil {
			return err
		}
	}
	return nil
}

// runIDs examines the named sessions, each with the row `dsh list --parent
// <its parent>` shows for it.
func (a *auditor) runIDs(ctx context.Context, ids []string) error {
	seen := map[string]bool{}
	var items []item
	for _, id := range ids {
		if seen[id] {
			continue
		}
		seen[id] = true
		h, err := a.view.Header(ctx, id)
		switch {
		case errors.Is(err, backend.ErrNotFound) && a.isUnoffered(id):
			// Reported with its header's damage by reportUnoffered.
		case errors.Is(err, backend.ErrNotFound):
			if a.opts.Strict {
				return unknownError(id)
			}
			items = append(items, item{header: session.Header{ID: id}, unknown: true})
		case err != nil:
			return err
		default:
			items = append(items, item{header: a.merged(h)})
		}
	}
	slices.SortStableFunc(items, func(x, y item) int { return compareParent(x.header, y.header) })
	a.start(len(items))
	// Each group of siblings is resolved against its parent's candidates,
	// read once per parent.
	for start := 0; start < len(items); {
		end := start + 1
		for end < len(items) && compareParent(items[start].header, items[end].header) == 0 {
			end++
		}
		group := items[start:end]
		corpus.SortHeaders(group, func(it item) session.Header { return it.header })
		if p := group[0].header.ParentSession; p != nil && !group[0].unknown {
			recs, err := a.corpus.Children(ctx, *p)
			if err != nil {
				return err
			}
			byID := make(map[string]*corpus.Record, len(recs))
			for i := range recs {
				byID[recs[i].Header.ID] = &recs[i]
			}
			for i := range group {
				if !group[i].unknown {
					group[i].rec = byID[group[i].header.ID]
				}
			}
		}
		if err := a.examineAll(ctx, group, corpus.ScopeChildren); err != nil {
			return err
		}
		start = end
	}
	return nil
}

// compareParent orders headers by parentSession: none first, then byte
// order.
func compareParent(x, y session.Header) int {
	switch {
	case x.ParentSession == nil && y.ParentSession == nil:
		return 0
	case x.ParentSession == nil:
		return -1
	case y.ParentSession == nil:
		return 1
	}
	return cmp.Compare(*x.ParentSession, *y.ParentSession)
}

func unknownError(id string) error {
	return &dsherr.Error{Code: dsherr.NotFound, Msg: fmt.Sprintf("no session with id %q", id), Err: backend.ErrNotFound}
}

// exists reports whether id is a stored or live session.
func (a *auditor) exists(ctx context.Context, id string) (bool, error) {
	h, err := a.parentHeader(ctx, id)
	return h != nil, err
}

// parentHeader returns the header of id, nil when there is no such
// session (stored or live).
func (a *auditor) parentHeader(ctx context.Context, id string) (*session.Header, error) {
	if a.parent.looked && a.parent.id == id {
		return a.parent.header, nil
	}
	var found *session.Header
	if l, ok := a.leases.live[id]; ok {
		found = &l.Header
	} else {
		h, err := a.view.Header(ctx, id)
		switch {
		case errors.Is(err, backend.ErrNotFound):
		case err != nil:
			return nil, err
		default:
			found = &h
		}
	}
	a.parent.id, a.parent.looked, a.parent.header = id, true, found
	return found, nil
}

// examineAll examines every item in order, a chunk at a time.
func (a *auditor) examineAll(ctx context.Context, items []item, scope corpus.Scope) error {
	for start := 0; start < len(items); start += chunk {
		reports, err := a.auditChunk(ctx, items[start:min(start+chunk, len(items))], scope)
		if err != nil {
			return err
		}
		for _, r := range reports {
			if err := a.record(ctx, r); err != nil {
				return err
			}
		}
	}
	return nil
}

// record counts one report and emits it, up to the findings limit.
func (a *auditor) record(ctx context.Context, r Report) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	// The summary counts every finding, past the limit too: the exit status
	// must reflect every session examined. Only the printing stops.
	a.summary.add(r)
	a.done++
	if a.opts.Progress != nil {
		a.opts.Progress(a.done, max(a.total, a.done))
	}
	if a.limitReached {
		if len(r.Findings) > 0 {
			a.summary.Truncated = true
		}
		return nil
	}
	if max := a.opts.MaxFindings; max > 0 {
		left := max - a.shown
		if len(r.Findings) >= left {
			a.summary.Truncated = len(r.Findings) > left
			r.Findings = r.Findings[:left]
			a.limitReached = true
		}
	}
	a.shown += len(r.Findings)
	return a.emit(r)
}
