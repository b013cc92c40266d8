package dshformat

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/session"
)

// Corpus is a foreign DSH corpus read in place through the read side of the
// backend contract (backend.Reader and backend.LeaseReader), so that dsh's
// listing, audit and session commands run the same code on it as on a dsh
// store. Logs are read as DSH's non-mutating inspect reads them: the valid
// prefix, older records converted, the whole log validated. No dsh process
// holds a foreign session, so nothing is live. Nothing is ever written.
type Corpus struct {
	src  Source
	name string
	// ix is the index of the source's headers; a focused source's is
	// replaced once by its whole corpus's (widened).
	ix atomic.Pointer[corpusIndex]
	// widening serializes widened.
	widening sync.Mutex
}

// corpusIndex is a source's headers by position in id order, read from
// the source's own index when it has one (a JSONL tree's is packed),
// never copied, since the index is held for a whole listing, audit or
// import and grows with the corpus.
type corpusIndex struct {
	n  int
	at func(int) session.Header
	// byID is the positions in id order when the source's are not (nil
	// when they are; stable: the last of equal ids wins).
	byID []int32
	// byParent is the positions of the headers with a parent, in
	// (parent, createdAt, id) order: a parent's children are one run.
	byParent []int32
	// focus is set when the index holds only one session and its
	// children (OpenJSONLFocused): a question about any other session
	// that the focus cannot answer exactly widens the corpus first.
	focus *focus
}

// The read side of the contract and the read-side capabilities a foreign
// corpus has (backend.Capabilities), checked at compile time.
var (
	_ backend.Reader             = (*Corpus)(nil)
	_ backend.LeaseReader        = (*Corpus)(nil)
	_ backend.SourceFormatReader = (*Corpus)(nil)
	_ backend.UnofferedReader    = (*Corpus)(nil)
)

// indexedSource is a Source that lends its headers by position, in the
// order Headers returns them, without copying them.
type indexedSource interface {
	HeaderIndex(ctx context.Context) (n int, at func(int) session.Header, err error)
}

// focusableSource is a Source whose index may be focused on one session
// (a JSONL tree opened by OpenJSONLFocused).
type focusableSource interface {
	view() sourceView
	widen(ctx context.Context) error
}

// NewCorpus indexes src's headers. name says where the corpus is (for
// messages); the caller keeps closing src.
func NewCorpus(ctx context.Context, src Source, name string) (*Corpus, error) {
	c := &Corpus{src: src, name: name}
	ix, err := c.index(ctx)
	if err != nil {
		return nil, err
	}
	c.ix.Store(ix)
	return c, nil
}

// index reads the source's index as it stands.
func (c *Corpus) index(ctx context.Context) (*corpusIndex, error) {
	ix := &corpusIndex{}
	switch src := c.src.(type) {
	case focusableSource:
		v := src.view()
		if v.partial && v.focus == nil {
			// A chunk (OpenJSONLChunked) answers nothing about the rest
			// of the tree: the corpus is read whole.
			if err := src.widen(ctx); err != nil {
				return nil, err
			}
			v = src.view()
		}
		ix.n, ix.at, ix.focus = v.n, v.at, v.focus
	case indexedSource:
		n, at, err := src.HeaderIndex(ctx)
		if err != nil {
			return nil, err
		}
		ix.n, ix.at = n, at
	default:
		headers, err := c.src.Headers(ctx)
		if err != nil {
			return nil, err
		}
		ix.n, ix.at = len(headers), func(i int) session.Header { return headers[i] }
	}
	if int64(ix.n) > math.MaxInt32 {
		return nil, fmt.Errorf("%s: %d sessions are more than a corpus read in place indexes", c.name, ix.n)
	}
	sorted := true
	for i := 0; i < ix.n; i++ {
		h := ix.at(i)
		if i > 0 && sorted && ix.at(i-1).ID > h.ID {
			sorted = false
		}
		if h.ParentSession != nil {
			ix.byParent = append(ix.byParent, int32(i))
		}
	}
	if !sorted {
		ix.byID = make([]int32, ix.n)
		for i := range ix.byID {
			ix.byID[i] = int32(i)
		}
		slices.SortStableFunc(ix.byID, func(a, b int32) int { return strings.Compare(ix.at(int(a)).ID, ix.at(int(b)).ID) })
	}
	ix.byParent = slices.Clip(ix.byParent)
	slices.SortFunc(ix.byParent, func(a, b int32) int {
		ha, hb := ix.at(int(a)), ix.at(int(b))
		if c := strings.Compare(*ha.ParentSession, *hb.ParentSession); c != 0 {
			return c
		}
		return byCreatedThenID(ha, hb)
	})
	return ix, ctx.Err()
}

// whole is the index of the whole corpus: a focused one is widened.
func (c *Corpus) whole(ctx context.Context) (*corpusIndex, error) {
	if ix := c.ix.Load(); ix.focus == nil {
		return ix, nil
	}
	c.widening.Lock()
	defer c.widening.Unlock()
	if ix := c.ix.Load(); ix.focus == nil {
		return ix, nil
	}
	if err := c.src.(focusableSource).widen(ctx); err != nil {
		return nil, dsherr.Wrap(dsherr.StoreUnavailable, err, "read %s", c.name)
	}
	ix, err := c.index(ctx)
	if err != nil {
		return nil, err
	}
	c.ix.Store(ix)
	return ix, nil
}

// idAt is the position of the i-th header in id order.
func (ix *corpusIndex) idAt(i int) int {
	if ix.byID == nil {
		return i
	}
	return int(ix.byID[i])
}

// lookup finds session id's header in the index: the last of the
// headers with that id.
func (ix *corpusIndex) lookup(id string) (session.Header, bool) {
	end := sort.Search(ix.n, func(i int) bool { return ix.at(ix.idAt(i)).ID > id })
	if end == 0 {
		return session.Header{}, false
	}
	h := ix.at(ix.idAt(end - 1))
	return h, h.ID == id
}

// lookup finds session id's header, widening a focused corpus when id
// may be a session the focus did not keep.
func (c *Corpus) lookup(ctx context.Context, id string) (session.Header, bool, error) {
	ix := c.ix.Load()
	if h, ok := ix.lookup(id); ok || ix.focus == nil || !ix.focus.mayHold(id) {
		return h, ok, nil
	}
	ix, err := c.whole(ctx)
	if err != nil {
		return session.Header{}, false, err
	}
	h, ok := ix.lookup(id)
	return h, ok, nil
}

// childPositions is parent's children, positions in (createdAt, id) order.
func (ix *corpusIndex) childPositions(parent string) []int32 {
	start := sort.Search(len(ix.byParent), func(i int) bool { return *ix.at(int(ix.byParent[i])).ParentSession >= parent })
	end := start
	for end < len(ix.byParent) && *ix.at(int(ix.byParent[end])).ParentSession == parent {
		end++
	}
	return ix.byParent[start:end]
}

// childrenIndex is an index that holds all of parent's children: a
// focused one only for the focus.
func (c *Corpus) childrenIndex(ctx context.Context, parent string) (*corpusIndex, error) {
	if ix := c.ix.Load(); ix.focus == nil || ix.focus.id == parent {
		return ix, nil
	}
	return c.whole(ctx)
}

// hasSubagentChild reports whether one of parent's children is a subagent.
func (c *Corpus) hasSubagentChild(parent string) bool {
	ix := c.ix.Load()
	if ix.focus != nil {
		return ix.focus.hasSubagentChild(parent)
	}
	return slices.ContainsFunc(ix.childPositions(parent), func(i int32) bool { return ix.at(int(i)).IsSubagent() })
}

// all yields the headers in the source's order (by id).
func (ix *corpusIndex) all() iter.Seq[session.Header] {
	return func(yield func(session.Header) bool) {
		for i := 0; i < ix.n; i++ {
			if !yield(ix.at(i)) {
				return
			}
		}
	}
}

func byCreatedThenID(a, b session.Header) int {
	if a.CreatedAt != b.CreatedAt {
		if a.CreatedAt < b.CreatedAt {
			return -1
		}
		return 1
	}
	return strings.Compare(a.ID, b.ID)
}

// Unoffered lists the sessions the corpus holds but cannot offer (see
// Source.Problems): an audit reports each one.
func (c *Corpus) Unoffered() []backend.Unoffered {
	var out []backend.Unoffered
	for _, p := range c.src.Problems() {
		out = append(out, backend.Unoffered{Location: p.Path, ID: p.ID, Err: p.Err})
	}
	return out
}

func (c *Corpus) notFound(id string) error {
	return &dsherr.Error{Code: dsherr.NotFound, Msg: fmt.Sprintf("no session with id %q in %s", id, c.name), Err: backend.ErrNotFound}
}

// Header implements backend.HeaderReader.
func (c *Corpus) Header(ctx context.Context, id string) (session.Header, error) {
	if err := ctx.Err(); err != nil {
		return session.Header{}, err
	}
	h, ok, err := c.lookup(ctx, id)
	if err != nil {
		return session.Header{}, err
	}
	if !ok {
		return session.Header{}, c.notFound(id)
	}
	return h, nil
}

// ChildrenOf implements backend.ChildrenReader.
func (c *Corpus) ChildrenOf(ctx context.Context, parentID string, fn func(session.Header) error) error {
	ix, err := c.childrenIndex(ctx, parentID)
	if err != nil {
		return err
	}
	for _, i := range ix.childPositions(parentID) {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(ix.at(int(i))); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// HasSubagentChild implements backend.ChildrenReader.
func (c *Corpus) HasSubagentChild(ctx context.Context, id string) (bool, error) {
	return c.hasSubagentChild(id), ctx.Err()
}

// SubagentParents implements backend.ChildrenReader.
func (c *Corpus) SubagentParents(ctx context.Context, ids []string) (map[string]bool, error) {
	out := map[string]bool{}
	for _, id := range ids {
		if c.hasSubagentChild(id) {
			out[id] = true
		}
	}
	return out, ctx.Err()
}

// ListHeaders implements backend.SessionLister, in id order.
func (c *Corpus) ListHeaders(ctx context.Context, fn func(session.Header) error) error {
	ix, err := c.whole(ctx)
	if err != nil {
		return err
	}
	for h := range ix.all() {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(h); err != nil {
			return err
		}
	}
	return nil
}

// CountSessions implements backend.SessionLister.
func (c *Corpus) CountSessions(ctx context.Context, subagentOnly bool) (int, error) {
	if ix := c.ix.Load(); ix.focus != nil && !subagentOnly {
		return len(ix.focus.ids), ctx.Err()
	}
	ix, err := c.whole(ctx)
	if err != nil {
		return 0, err
	}
	if !subagentOnly {
		return ix.n, ctx.Err()
	}
	n := 0
	for h := range ix.all() {
		if h.IsSubagent() {
			n++
		}
	}
	return n, ctx.Err()
}

// HasSessions implements backend.SessionLister.
func (c *Corpus) HasSessions(ctx context.Context) (bool, error) {
	ix := c.ix.Load()
	if ix.focus != nil {
		return len(ix.focus.ids) > 0, ctx.Err()
	}
	return ix.n > 0, ctx.Err()
}

// EachParent implements backend.SessionLister.
func (c *Corpus) EachParent(ctx context.Context, subagentOnly bool, fn func(parent string) error) error {
	ix, err := c.whole(ctx)
	if err != nil {
		return err
	}
	// byParent is in parent order: each parent is one run of it.
	for i := 0; i < len(ix.byParent); {
		if err := ctx.Err(); err != nil {
			return err
		}
		p := *ix.at(int(ix.byParent[i])).ParentSession
		kids := ix.childPositions(p)
		i += len(kids)
		if subagentOnly && !slices.ContainsFunc(kids, func(k int32) bool { return ix.at(int(k)).IsSubagent() }) {
			continue
		}
		if err := fn(p); err != nil {
			return err
		}
	}
	return nil
}

// RootHeaders implements backend.SessionLister.
func (c *Corpus) RootHeaders(ctx context.Context, subagentOnly bool, fn func(session.Header) error) error {
	ix, err := c.whole(ctx)
	if err != nil {
		return err
	}
	var roots []int32
	for i := 0; i < ix.n; i++ {
		if h := ix.at(i); h.ParentSession == nil && (!subagentOnly || h.IsSubagent()) {
			roots = append(roots, int32(i))
		}
	}
	slices.SortFunc(roots, func(a, b int32) int { return byCreatedThenID(ix.at(int(a)), ix.at(int(b))) })
	for _, i := range roots {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(ix.at(int(i))); err != nil {
			return err
		}
	}
	return nil
}

// CatalogSessions implements backend.SessionLister. A corpus in place has
// no index of event types, so it reads each log (bounded, as Audit reads
// it): a session is named when its readable prefix holds a
// subagent/catalog event, and also when its log cannot be read at all,
// since what it holds is then unknown.
func (c *Corpus) CatalogSessions(ctx context.Context, fn func(id string) error) error {
	ix, err := c.whole(ctx)
	if err != nil {
		return err
	}
	for h := range ix.all() {
		a, err := c.Audit(ctx, h.ID)
		if err != nil {
			return err
		}
		if a.ReadErr == nil && !slices.ContainsFunc(a.Events, func(e session.Event) bool { return e.Type == session.TypeCatalog }) {
			continue
		}
		if err := fn(h.ID); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// Audit implements backend.LogReader: the session as DSH's inspect reads
// it, with the reason it cannot be read kept beside the data. A log the
// reader finds damaged before its last committed turn/end has no events
// and a ReadErr wrapping backend.ErrCorrupt; one refused for its format
// version a ReadErr with code UNSUPPORTED_FORMAT.
func (c *Corpus) Audit(ctx context.Context, id string) (*backend.AuditRead, error) {
	h, err := c.Header(ctx, id)
	if err != nil {
		return nil, err
	}
	s, err := c.src.ReadAsFound(ctx, id)
	var (
		refusal *UnsupportedVersionError
		fileErr *FileError
	)
	switch {
	case err == nil && s.Damage != nil:
		// Reported as a store reports the same log imported (its
		// damaged_logs row): corruption at the damage's seq.
		row := &backend.CorruptRowError{ID: id, Seq: s.Damage.Seq(), Reason: s.Damage.Err.Error()}
		return &backend.AuditRead{Header: h, ReadErr: &dsherr.Error{Code: dsherr.InvalidLog, Msg: row.Error(), Err: row}, TextReplaced: s.TextReplaced}, nil
	case err == nil:
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case errors.Is(err, ErrNotFound):
		return nil, c.notFound(id)
	case errors.Is(err, ErrCorrupt):
		return &backend.AuditRead{Header: h, ReadErr: corruptLog(id, err)}, nil
	case errors.As(err, &refusal):
		return &backend.AuditRead{Header: h, ReadErr: &dsherr.Error{Code: dsherr.UnsupportedFormat, Msg: err.Error(), Err: err}}, nil
	case errors.As(err, &fileErr):
		// A file that vanished or changed after the corpus was opened
		// concerns its session alone: the audit goes on.
		return &backend.AuditRead{Header: h, ReadErr: &dsherr.Error{Code: dsherr.StoreUnavailable,
			Msg: c.name + ": " + err.Error(), Err: fmt.Errorf("%w: %w", backend.ErrLogUnreadable, err)}}, nil
	default:
		return nil, dsherr.Wrap(dsherr.StoreUnavailable, err, "read session %q from %s", id, c.name)
	}
	a := &backend.AuditRead{Header: s.Header, TextReplaced: s.TextReplaced}
	if s.Torn != nil {
		a.Torn = &backend.TornTail{FromSeq: s.Torn.FromSeq, Reason: s.Torn.Reason, Raw: s.Torn.Raw}
	}
	events, err := session.NormalizeLegacy(id, s.Events)
	if err == nil {
		err = session.ValidateLog(s.Header, events)
	}
	if err != nil {
		a.ReadErr = &dsherr.Error{Code: dsherr.InvalidLog, Msg: fmt.Sprintf("%s: session %q failed validation: %v", c.name, id, err), Err: err}
		return a, nil
	}
	a.Events = events
	a.Closers = session.InterruptedTurnClosers(events)
	return a, nil
}

// corruptLog is the INVALID_LOG error for damage before the last committed
// turn/end: a *backend.CorruptRowError naming the seq when the reader knows
// it (an SQLite row, or a JSONL event line: line n holds seq n-1).
func corruptLog(id string, err error) error {
	var ce *CorruptError
	if errors.As(err, &ce) {
		seq := ce.Seq
		if seq < 0 && ce.Line > 0 {
			seq = ce.Line - 1
		}
		if seq >= 0 {
			row := &backend.CorruptRowError{ID: id, Seq: seq, Reason: err.Error()}
			return &dsherr.Error{Code: dsherr.InvalidLog, Msg: err.Error(), Err: row}
		}
	}
	return &dsherr.Error{Code: dsherr.InvalidLog, Msg: err.Error(), Err: fmt.Errorf("%w: %w", backend.ErrCorrupt, err)}
}

// Inspect implements backend.LogReader.
func (c *Corpus) Inspect(ctx context.Context, id string) (*backend.Inspection, error) {
	a, err := c.Audit(ctx, id)
	if err != nil {
		return nil, err
	}
	if a.ReadErr != nil {
		if dsherr.CodeOf(a.ReadErr) == dsherr.UnsupportedFormat {
			// Alone on stderr the refusal names the corpus too.
			return nil, dsherr.Wrap(dsherr.UnsupportedFormat, a.ReadErr, "%s", c.name)
		}
		return nil, a.ReadErr
	}
	return &backend.Inspection{Header: a.Header, Events: a.Events, Torn: a.Torn, Closers: a.Closers}, nil
}

// InspectTypes implements backend.LogReader.
func (c *Corpus) InspectTypes(ctx context.Context, id string, types ...string) (*backend.Inspection, error) {
	in, err := c.Inspect(ctx, id)
	if err != nil {
		return nil, err
	}
	keep := func(events []session.Event) []session.Event {
		out := events[:0:0]
		for _, e := range events {
			if slices.Contains(types, e.Type) {
				out = append(out, e)
			}
		}
		return out
	}
	in.Events, in.Closers = keep(in.Events), keep(in.Closers)
	return in, nil
}

// Leases implements backend.LeaseReader: a foreign corpus has none.
func (c *Corpus) Leases(ctx context.Context) ([]backend.Lease, error) { return nil, ctx.Err() }

// LiveSessions implements backend.LeaseReader: nothing is live.
func (c *Corpus) LiveSessions(ctx context.Context) (map[string]backend.Live, error) {
	return map[string]backend.Live{}, ctx.Err()
}

// Now implements backend.LeaseReader with the local clock.
func (c *Corpus) Now(ctx context.Context) (time.Time, error) { return time.Now(), ctx.Err() }

// formatReporter is a Source that knows each session's stored format
// without reading its log.
type formatReporter interface {
	formatOf(ctx context.Context, id string) (string, bool)
}

// SourceFormat names the DSH format session id is stored in (FormatName,
// or FormatDSHSQLite), as dsh's store records it for an imported session.
func (c *Corpus) SourceFormat(ctx context.Context, id string) (string, error) {
	if _, err := c.Header(ctx, id); err != nil {
		return "", err
	}
	if f, ok := c.src.(formatReporter); ok {
		if format, ok := f.formatOf(ctx, id); ok {
			return format, nil
		}
	}
	return "", nil
}
