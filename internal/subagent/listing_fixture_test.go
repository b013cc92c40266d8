package subagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/corpus"
	"github.com/dsh-project/dsh/internal/jsjson"
	"github.com/dsh-project/dsh/internal/projcache"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/sqlitepersist"
)

// catalogue is the fixture of DSH's listChildren/listDescendants catalogue
// (semantics §10) on a real dsh store: a root session "parent", children
// authored through the store's write paths, children "started" the way a dsh
// writer lays them out (checkpoint included), and live holders published
// through real leases with published snapshots.
type catalogue struct {
	t   *testing.T
	ctx context.Context
	st  *sqlitepersist.Store
	// holder is the live process holding leased sessions; its leases
	// outlive any test.
	holder backend.LeaseHolder
	clock  int64
	// reads observes every cold read of the listers this fixture builds.
	reads *observedReader
}

func newCatalog(t *testing.T) *catalogue {
	t.Helper()
	c := &catalogue{t: t, ctx: context.Background(), st: openTestStore(t), holder: backend.NewLeaseHolder(time.Hour), clock: 1_789_000_000_000}
	c.root("parent")
	return c
}

// root stores a root session (no parent) with one completed turn.
func (c *catalogue) root(id string) {
	c.t.Helper()
	h := session.Header{ID: id, CreatedAt: c.tick(), Cwd: strp("/work")}
	if err := c.st.CreateSession(c.ctx, h, turnEvents(0, 1)); err != nil {
		c.t.Fatal(err)
	}
}

func (c *catalogue) tick() int64 {
	c.clock++
	return c.clock
}

// lister is DSH's default catalogue fixture: persistence and the projection
// registry, no projection cache (no rung 2).
func (c *catalogue) lister() *Lister {
	l := c.cachedLister()
	l.Cache = nil
	return l
}

// cachedLister is the store-backed lister with the checkpoint cache mounted,
// as `dsh list` builds it.
func (c *catalogue) cachedLister() *Lister {
	l := NewStoreLister(c.st, c.st, 0)
	c.reads = &observedReader{ColdReader: l.Cold, counts: map[string]int{}}
	l.Cold = c.reads
	return l
}

// headerOpt adjusts an authored header.
type headerOpt func(*session.Header)

func under(parent string) headerOpt { return func(h *session.Header) { h.ParentSession = &parent } }
func created(ms int64) headerOpt    { return func(h *session.Header) { h.CreatedAt = ms } }
func seeded(cut int64) headerOpt    { return func(h *session.Header) { h.SeedLength = &cut } }
func ordinary() headerOpt           { return func(h *session.Header) { h.Origin = nil } }

// authoredHeader is the catalogue's authorChild header: a subagent child of
// "parent" created at 1, plus opts.
func authoredHeader(id string, opts ...headerOpt) session.Header {
	depth := int64(1)
	h := session.Header{ID: id, CreatedAt: 1, Cwd: strp("/work"), ParentSession: strp("parent"),
		Origin: strp(session.OriginSubagent), DelegationDepth: &depth}
	for _, o := range opts {
		o(&h)
	}
	return h
}

// author is the catalogue's authorChild(id, header, events), written through
// the store's validating CreateSession.
func (c *catalogue) author(id string, events []session.Event, opts ...headerOpt) session.Header {
	c.t.Helper()
	h := authoredHeader(id, opts...)
	if err := c.st.CreateSession(c.ctx, h, events); err != nil {
		c.t.Fatalf("author %s: %v", id, err)
	}
	return h
}

// authorInvalid stores a log the validating write paths refuse, through
// ImportSession (the faithful path a foreign corpus takes).
func (c *catalogue) authorInvalid(id string, events []session.Event, opts ...headerOpt) {
	c.t.Helper()
	res, err := c.st.ImportSession(c.ctx, authoredHeader(id, opts...), events, nil)
	if err != nil {
		c.t.Fatalf("import %s: %v", id, err)
	}
	if res.Invalid == nil {
		c.t.Fatalf("import %s: the log was meant to be invalid but reads back fine", id)
	}
}

// startChild is the catalogue's startChild(label): a continuable spawn child
// of parent as a dsh writer leaves it once its first turn has settled
// (semantics §7.2) — the creation seed (descriptor, end-seed, delegated
// approval policy), one completed turn appended after it, and the checkpoint
// record written at the turn's end.
func (c *catalogue) startChild(parent, label string) string {
	c.t.Helper()
	return c.start(parent, continuableSpawn(label))
}

// startOneShot is a real one-shot start: the descriptor inside the first
// turn, after the inbox claim.
func (c *catalogue) startOneShot(parent string, label *string) string {
	c.t.Helper()
	return c.start(parent, oneShotSpawn(label))
}

func (c *catalogue) start(parent string, layout childLayout) string {
	c.t.Helper()
	id := uuid.NewString()
	depth := int64(1)
	if p, err := c.st.Header(c.ctx, parent); err == nil {
		depth = p.Depth() + 1
	}
	h := session.Header{ID: id, CreatedAt: c.tick(), Cwd: strp("/work"), ParentSession: &parent,
		Origin: strp(session.OriginSubagent), DelegationDepth: &depth}
	if err := c.st.CreateSession(c.ctx, h, layout.seed); err != nil {
		c.t.Fatalf("start child: %v", err)
	}
	if err := c.st.Append(c.ctx, id, int64(len(layout.seed)), layout.turn); err != nil {
		c.t.Fatalf("start child turn: %v", err)
	}
	all := append(append([]session.Event{}, layout.seed...), layout.turn...)
	c.checkpoint(h, all)
	return id
}

// checkpoint writes h's checkpoint record for events, as a writer does at a
// turn/end.
func (c *catalogue) checkpoint(h session.Header, events []session.Event) {
	c.t.Helper()
	reg := NewRegistry()
	f := reg.NewFold()
	f.Apply(events...)
	cp, err := f.Checkpoint()
	if err != nil {
		c.t.Fatal(err)
	}
	if err := projcache.NewCache(c.st, reg).Put(c.ctx, h, f.AsOfSeq(), cp); err != nil {
		c.t.Fatal(err)
	}
}

// putCheckpoint writes a checkpoint record for h holding exactly rows.
func (c *catalogue) putCheckpoint(h session.Header, asOfSeq int64, rows projcache.Checkpoint) {
	c.t.Helper()
	if err := projcache.NewCache(c.st, NewRegistry()).Put(c.ctx, h, asOfSeq, rows); err != nil {
		c.t.Fatal(err)
	}
}

// exec runs SQL on the store's file: how tests damage stored rows.
func (c *catalogue) exec(query string, args ...any) {
	c.t.Helper()
	if _, err := c.st.Querier().ExecContext(c.ctx, query, args...); err != nil {
		c.t.Fatalf("%s: %v", query, err)
	}
}

// holdLive makes h's session live the way a running dsh process does: its
// header is in the store (created now, with no events, if it is not there
// yet) and a holder leases it. view is the holder's published raw subagent
// view; "" = nothing published yet.
func (c *catalogue) holdLive(h session.Header, view string) {
	c.t.Helper()
	c.holdLiveSnapshot(h, view, "")
}

// holdLiveSnapshot is holdLive with a holder whose subagent unit failed when
// unitFailure is set.
func (c *catalogue) holdLiveSnapshot(h session.Header, view, unitFailure string) {
	c.t.Helper()
	if _, err := c.st.Header(c.ctx, h.ID); errors.Is(err, backend.ErrNotFound) {
		if err := c.st.CreateSession(c.ctx, h, nil); err != nil {
			c.t.Fatal(err)
		}
	}
	if _, err := c.st.AcquireLease(c.ctx, h.ID, c.holder); err != nil {
		c.t.Fatal(err)
	}
	if view == "" && unitFailure == "" {
		return
	}
	snap := &backend.LiveSnapshot{UnitFailure: unitFailure}
	if view != "" {
		snap.Subagent = json.RawMessage(view)
	}
	if err := c.st.HeartbeatLease(c.ctx, h.ID, c.holder, snap); err != nil {
		c.t.Fatal(err)
	}
}

// liveHeader is the header of a live subagent child of parent.
func liveHeader(id, parent string, createdAt int64) session.Header {
	depth := int64(1)
	return session.Header{ID: id, CreatedAt: createdAt, Cwd: strp("/work"), ParentSession: &parent,
		Origin: strp(session.OriginSubagent), DelegationDepth: &depth}
}

// identityView is the subagent unit's view of a continuable identity.
func identityView(label string, seq int64) string {
	return `{"mode":"continuable","label":` + jsjson.String(label) + `,"seq":` + fmt.Sprint(seq) + `}`
}

// liveHolders is a live-holder side that is not backed by the store's lease
// table, for merge rules a store cannot produce (a live header that
// disagrees with the stored one).
type liveHolders map[string]corpus.Live

func (m liveHolders) LiveSessions(context.Context) (map[string]corpus.Live, error) { return m, nil }

// observedReader counts cold reads per child and runs hooks around them, to
// pin "read exactly once", "never read", and what happens when storage
// changes or the listing is cancelled during a read.
type observedReader struct {
	ColdReader
	mu     sync.Mutex
	counts map[string]int
	// before runs before the read of id; after may replace its error.
	before func(ctx context.Context, id string)
	after  func(ctx context.Context, id string, err error) error
}

func (o *observedReader) ColdRead(ctx context.Context, id string, types []string) (session.Header, []session.Event, error) {
	o.mu.Lock()
	o.counts[id]++
	o.mu.Unlock()
	if o.before != nil {
		o.before(ctx, id)
	}
	h, events, err := o.ColdReader.ColdRead(ctx, id, types)
	if o.after != nil {
		err = o.after(ctx, id, err)
	}
	return h, events, err
}

func (o *observedReader) count(id string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.counts[id]
}

func (o *observedReader) total() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, v := range o.counts {
		n += v
	}
	return n
}

// countingHeaders counts header-source calls (DSH's persistence.list).
type countingHeaders struct {
	corpus.HeaderSource
	mu     sync.Mutex
	calls  int
	before func(ctx context.Context)
	err    error
}

func (h *countingHeaders) ChildrenOf(ctx context.Context, parentID string, fn func(session.Header) error) error {
	h.mu.Lock()
	h.calls++
	h.mu.Unlock()
	if h.before != nil {
		h.before(ctx)
	}
	if h.err != nil {
		return h.err
	}
	return h.HeaderSource.ChildrenOf(ctx, parentID, fn)
}

// show renders a row for comparison: "id continuable "label" inactive",
// "id diagnostic corrupt", with " hasChildren" and " parent=p depth=n" when
// set.
func show(r Row) string {
	var s string
	if r.Kind == KindDiagnostic {
		s = r.ID + " diagnostic " + string(r.Reason)
	} else {
		s = r.ID + " " + string(r.Mode)
		if r.Label != nil {
			s += " " + jsjson.String(*r.Label)
		}
		s += " " + string(r.Activity)
		if r.HasChildren {
			s += " hasChildren"
		}
	}
	if r.Depth > 0 {
		s += fmt.Sprintf(" parent=%s depth=%d", r.ParentID, r.Depth)
	}
	return s
}

func showAll(rows []Row) string {
	lines := make([]string, len(rows))
	for i, r := range rows {
		lines[i] = show(r)
	}
	return strings.Join(lines, "\n")
}

// expectRows fails unless rows render as want, one line per row.
func expectRows(t *testing.T, rows []Row, err error, want ...string) {
	t.Helper()
	if err != nil {
		t.Fatalf("listing failed: %v", err)
	}
	if got, w := showAll(rows), strings.Join(want, "\n"); got != w {
		t.Errorf("rows:\n%s\nwant:\n%s", got, w)
	}
}

func (c *catalogue) children(l *Lister, parent string) ([]Row, error) {
	return l.ListChildren(c.ctx, parent)
}

func (c *catalogue) descendants(l *Lister, root string) ([]Row, error) {
	return l.ListDescendants(c.ctx, root)
}

// childLayout is a child's creation seed and its first turn.
type childLayout struct {
	seed, turn []session.Event
}

const (
	userMessage = `{"content":[{"type":"text","text":"work"}],"source":{"kind":"user"},"role":"user","id":"m-%d"}`
	modelReply  = `{"turn":%d,"step":1,"message":{"role":"assistant","content":[{"type":"text","text":"done"}],"source":{"kind":"model","provider":"echo","model":"echo"},"id":"a-%d"}}`
	inboxPush   = `{"target":"next-turn","start":0,"inserted":[{"content":[{"type":"text","text":"work"}],"source":{"kind":"user"},"role":"user","id":"m-%d"}]}`
	inboxClaim  = `{"target":"next-turn","start":0,"removedCount":1,"inserted":[]}`
	delegated   = `{"policy":"never","source":"delegation"}`
)

// eventAt builds one event; surface events get an append surfaceOp.
func eventAt(seq int64, typ, data string) session.Event {
	e := session.Event{Type: typ, Seq: seq, Time: 1_789_000_000_000 + seq, Data: json.RawMessage(data)}
	if typ == session.TypeUserMessage || typ == session.TypeAssistantMsg {
		e.SurfaceOp = json.RawMessage(`"append"`)
	}
	return e
}

// turnEvents is one completed turn number turn starting at seq from: a user
// message and the model's reply in one step.
func turnEvents(from int64, turn int) []session.Event {
	seq := from
	next := func(typ, data string) session.Event {
		e := eventAt(seq, typ, data)
		seq++
		return e
	}
	return []session.Event{
		next(session.TypeTurnStart, fmt.Sprintf(`{"turn":%d}`, turn)),
		next(session.TypeStepStart, fmt.Sprintf(`{"turn":%d,"step":1}`, turn)),
		next(session.TypeUserMessage, fmt.Sprintf(userMessage, from)),
		next(session.TypeAssistantMsg, fmt.Sprintf(modelReply, turn, from)),
		next(session.TypeStepEnd, fmt.Sprintf(`{"turn":%d,"step":1}`, turn)),
		next(session.TypeTurnEnd, fmt.Sprintf(`{"turn":%d,"reason":{"kind":"completed"}}`, turn)),
	}
}

// continuableSpawn is a fresh continuable child's layout: the descriptor at
// seq 0, end-seed, the delegated approval policy, then the first turn with
// its inbox splices.
func continuableSpawn(label string) childLayout {
	d := `{"version":2,"mode":"continuable","provider":"spawn","label":` + jsjson.String(label) + `}`
	seed := []session.Event{
		eventAt(0, session.TypeDescriptor, d),
		eventAt(1, session.TypeEndSeed, `{}`),
		eventAt(2, session.TypeApproval, delegated),
	}
	return childLayout{seed: seed, turn: firstTurn(3, "")}
}

// oneShotSpawn is a fresh one-shot child's layout: its whole log is the
// first turn, with the descriptor after the inbox claim.
func oneShotSpawn(label *string) childLayout {
	d := `{"version":2,"mode":"one-shot","provider":"spawn"`
	if label != nil {
		d += `,"label":` + jsjson.String(*label)
	}
	d += `}`
	return childLayout{seed: []session.Event{eventAt(0, session.TypeApproval, delegated)}, turn: firstTurn(1, d)}
}

// firstTurn is the first turn from seq from: inbox push, turn/start, inbox
// claim, the descriptor when given (one-shot), then one step.
func firstTurn(from int64, descriptor string) []session.Event {
	seq := from
	next := func(typ, data string) session.Event {
		e := eventAt(seq, typ, data)
		seq++
		return e
	}
	events := []session.Event{
		next(session.TypeInboxSpliced, fmt.Sprintf(inboxPush, from)),
		next(session.TypeTurnStart, `{"turn":1}`),
		next(session.TypeInboxSpliced, inboxClaim),
	}
	if descriptor != "" {
		events = append(events, next(session.TypeDescriptor, descriptor))
	}
	return append(events,
		next(session.TypeStepStart, `{"turn":1,"step":1}`),
		next(session.TypeUserMessage, fmt.Sprintf(userMessage, from)),
		next(session.TypeAssistantMsg, fmt.Sprintf(modelReply, 1, from)),
		next(session.TypeStepEnd, `{"turn":1,"step":1}`),
		next(session.TypeTurnEnd, `{"turn":1,"reason":{"kind":"completed"}}`),
	)
}
