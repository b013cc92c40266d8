// Package gencorpus builds benchmark corpora in a dsh store: one parent with
// many subagent children of every kind a listing meets (continuable and
// one-shot, fork children, corrupt and unreadable ones) with transcripts of
// realistic length, spread among many unrelated sessions.
//
// Everything is written through the store's own write paths (CreateSession,
// ImportSession, the checkpoint cache's Put) in large transactions, so the
// result is exactly what dsh writers leave behind, including the verified
// bookkeeping and a checkpoint record per subagent session (what a writer
// records at each turn/end). The parent's subtree depends only on the seed
// and the child count, never on how many other sessions surround it, so two
// stores of different sizes hold the same parent and children.
//
// On PostgreSQL each session written is about a dozen statements, each a
// round trip to the server, so a large corpus is written with Spec.Workers
// transactions at once (1M sessions one at a time would take hours there;
// docs/benchmarks.md, "A million sessions").
package gencorpus

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"

	"github.com/google/uuid"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/catalog"
	"github.com/dsh-project/dsh/internal/jsjson"
	"github.com/dsh-project/dsh/internal/projcache"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/subagent"
)

// Spec describes a corpus. Zero fields take the defaults of the issue's
// benchmark: 10,000 children with 50–500-event transcripts in a store of
// 200,000 sessions.
type Spec struct {
	// Parent is the id of the parent whose children are generated.
	Parent string
	// Children is how many subagent children Parent gets.
	Children int
	// Sessions is the total number of sessions written, Parent and its
	// children included; the rest are unrelated roots and their children.
	Sessions int
	// MinEvents and MaxEvents bound a child's transcript length.
	MinEvents, MaxEvents int
	// Seed makes the corpus reproducible.
	Seed uint64
	// NoCheckpoints leaves the checkpoint cache empty (a cold store).
	NoCheckpoints bool
	// Unverified marks the parent's children as changed outside dsh's write
	// paths (verified = 0, what the store's triggers do after any foreign
	// edit): a cold read of such a child then validates its whole log.
	Unverified bool
	// CatalogParent, when set, is the id of a format-4 session written
	// last whose subagent/catalog facts name Parent's children, in
	// creation order, as DSH 0.1.7 records them (id, creation time, mode,
	// label): the same children, listed by catalog under --dsh-compat
	// 0.1.7.
	CatalogParent string
	// Batch is the most sessions one write transaction holds; a
	// transaction also ends once it holds batchEvents events.
	Batch int
	// Workers is how many write transactions run at once (0 or 1: one
	// after another). A PostgreSQL store takes each on a connection of its
	// own, so its round trips overlap; SQLite serializes writers anyway.
	// The sessions are the same, only their insertion order interleaves.
	Workers int
	// Progress, when set, is called after each transaction with the
	// sessions written so far.
	Progress func(done, total int)
}

// Defaults of the benchmark corpus.
const (
	DefaultParent    = "bench-parent"
	DefaultChildren  = 10_000
	DefaultSessions  = 200_000
	DefaultMinEvents = 50
	DefaultMaxEvents = 500
	defaultBatch     = 2000
	// batchEvents bounds the events held in memory and written per
	// transaction.
	batchEvents = 50_000
)

func (s Spec) withDefaults() Spec {
	if s.Parent == "" {
		s.Parent = DefaultParent
	}
	if s.Children == 0 {
		s.Children = DefaultChildren
	}
	if s.Sessions == 0 {
		s.Sessions = DefaultSessions
	}
	s.Sessions = max(s.Sessions, s.Children+1)
	if s.MinEvents == 0 {
		s.MinEvents = DefaultMinEvents
	}
	if s.MaxEvents == 0 {
		s.MaxEvents = DefaultMaxEvents
	}
	if s.Batch == 0 {
		s.Batch = defaultBatch
	}
	return s
}

func (s Spec) check() error {
	switch {
	case s.Children < 0, s.Sessions < 0:
		return fmt.Errorf("negative corpus size (children %d, sessions %d)", s.Children, s.Sessions)
	case s.MinEvents < 0 || s.MaxEvents < s.MinEvents:
		return fmt.Errorf("transcript length range %d..%d is empty", s.MinEvents, s.MaxEvents)
	case s.Batch < 0:
		return fmt.Errorf("negative batch size %d", s.Batch)
	case s.Workers < 0:
		return fmt.Errorf("negative worker count %d", s.Workers)
	}
	return nil
}

// Kind is what a generated child is, and so which listing row it gets.
type Kind string

// Child kinds, with the row each one lists as.
const (
	Continuable Kind = "continuable"      // child row; served from the cache when warm
	OneShot     Kind = "one-shot"         // child row
	Fork        Kind = "fork"             // seeded continuable child: always read from its log
	Malformed   Kind = "malformed"        // corrupt: its descriptor does not parse
	Bare        Kind = "no-descriptor"    // corrupt: no descriptor at all
	Invalid     Kind = "invalid-log"      // unavailable: the log fails DSH's validation
	filler      Kind = "unrelated-filler" // not under the parent
)

// mix is the share of each kind among the parent's children, in per mille.
// Fork, malformed and descriptor-less children (together 9%) are always
// read from their logs, warm cache or not; an unreadable log is rarer.
var mix = []struct {
	kind     Kind
	perMille int
}{
	{Continuable, 555}, {OneShot, 352}, {Fork, 50}, {Malformed, 20}, {Bare, 20}, {Invalid, 3},
}

func kindFor(r *rand.Rand) Kind {
	n := r.IntN(1000)
	for _, m := range mix {
		if n < m.perMille {
			return m.kind
		}
		n -= m.perMille
	}
	return Continuable
}

// Result says what was written.
type Result struct {
	Sessions int
	Events   int
	// Kinds counts the parent's children by kind.
	Kinds map[Kind]int
	// Checkpoints is the number of checkpoint records written.
	Checkpoints int
}

// baseTime is the corpus's clock origin (epoch ms).
const baseTime int64 = 1_789_000_000_000

// Target is the store a corpus is written to, on any backend.
type Target interface {
	backend.Store
	backend.Transactor
}

// Generate writes the corpus described by spec into st, which should be
// empty of the ids it uses (the parent and ids derived from the seed).
func Generate(ctx context.Context, st Target, spec Spec) (Result, error) {
	spec = spec.withDefaults()
	if err := spec.check(); err != nil {
		return Result{}, err
	}
	g := &generator{spec: spec, st: st, reg: subagent.NewRegistry(), res: Result{Kinds: map[Kind]int{}}}
	res, err := g.generate(ctx)
	if werr := g.wait(); err == nil {
		err = werr
	}
	return res, err
}

func (g *generator) generate(ctx context.Context) (Result, error) {
	spec, st := g.spec, g.st
	parent := session.Header{ID: spec.Parent, CreatedAt: baseTime, Cwd: &cwd}
	parentLog := turns(rand.New(rand.NewPCG(spec.Seed, 0)), 0, 1, 3)
	g.forkPrefix = session.ForkPrefix(parentLog)
	g.pending = append(g.pending, planned{h: parent, events: parentLog})

	fillers := spec.Sessions - spec.Children - 1
	for i := range spec.Children {
		// Unrelated sessions are interleaved with the children, as a
		// store accumulates them over time.
		for f := fillers * i / spec.Children; f < fillers*(i+1)/spec.Children; f++ {
			if err := g.add(ctx, g.filler(f)); err != nil {
				return g.res, err
			}
		}
		if err := g.add(ctx, g.child(i)); err != nil {
			return g.res, err
		}
	}
	if spec.CatalogParent != "" {
		h := session.Header{Version: catalog.NativeFormat, ID: spec.CatalogParent, CreatedAt: baseTime, Cwd: &cwd}
		if err := g.add(ctx, planned{h: h, events: g.catalog}); err != nil {
			return g.res, err
		}
	}
	if spec.Children == 0 {
		for f := range fillers {
			if err := g.add(ctx, g.filler(f)); err != nil {
				return g.res, err
			}
		}
	}
	if err := g.flush(ctx); err != nil {
		return g.res, err
	}
	if err := g.wait(); err != nil {
		return g.res, err
	}
	if spec.Unverified {
		u, ok := st.(backend.Unverifier)
		if !ok {
			return g.res, fmt.Errorf("mark children unverified: store %T cannot", st)
		}
		if err := u.UnverifyChildren(ctx, spec.Parent); err != nil {
			return g.res, fmt.Errorf("mark children unverified: %w", err)
		}
	}
	return g.res, nil
}

var cwd = "/bench/work"

type generator struct {
	spec       Spec
	st         Target
	reg        *projcache.Registry
	forkPrefix []session.Event
	pending    []planned
	// pendingEvents counts the events in pending.
	pendingEvents int
	res           Result
	// fillerParent is the current unrelated root that fillers attach to.
	fillerParent string
	// catalog holds CatalogParent's facts, one per child planned.
	catalog []session.Event
	// With Workers > 1, batches go to the workers through batches; the
	// first error any of them meets is kept in failed (and ends the run),
	// and written counts the sessions committed, for Progress.
	batches chan []planned
	workers sync.WaitGroup
	mu      sync.Mutex
	failed  error
	written int
}

// planned is one session to write.
type planned struct {
	h      session.Header
	events []session.Event
	// invalid logs go through ImportSession and get no checkpoint.
	invalid bool
	kind    Kind
}

func (g *generator) add(ctx context.Context, p planned) error {
	g.pending = append(g.pending, p)
	g.pendingEvents += len(p.events)
	if len(g.pending) >= g.spec.Batch || g.pendingEvents >= batchEvents {
		return g.flush(ctx)
	}
	return nil
}

func (g *generator) flush(ctx context.Context) error {
	if len(g.pending) == 0 {
		return nil
	}
	batch := slices.Clone(g.pending)
	g.pending, g.pendingEvents = g.pending[:0], 0
	for _, p := range batch {
		g.res.Sessions++
		g.res.Events += len(p.events)
		if p.kind != filler && p.kind != "" {
			g.res.Kinds[p.kind]++
		}
		if p.h.IsSubagent() && !p.invalid && !g.spec.NoCheckpoints {
			g.res.Checkpoints++
		}
	}
	if g.spec.Workers <= 1 {
		return g.commit(ctx, batch)
	}
	if g.batches == nil {
		g.batches = make(chan []planned)
		for range g.spec.Workers {
			g.workers.Add(1)
			go func() {
				defer g.workers.Done()
				for b := range g.batches {
					if err := g.commit(ctx, b); err != nil {
						g.mu.Lock()
						g.failed = cmp.Or(g.failed, err)
						g.mu.Unlock()
					}
				}
			}()
		}
	}
	g.mu.Lock()
	err := g.failed
	g.mu.Unlock()
	if err != nil {
		return err
	}
	select {
	case g.batches <- batch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// wait ends the workers, if any, once they have committed every batch
// sent, and returns the first error one met.
func (g *generator) wait() error {
	if g.batches == nil {
		return nil
	}
	close(g.batches)
	g.batches = nil
	g.workers.Wait()
	return g.failed
}

// commit writes batch in one transaction and reports the progress. A
// store that pipelines its writes (PostgreSQL) sends the batch's sessions'
// statements together instead of a round trip each; any failure fails the
// batch either way.
func (g *generator) commit(ctx context.Context, batch []planned) error {
	update := g.st.Update
	if p, ok := g.st.(backend.PipelinedUpdater); ok {
		update = p.UpdatePipelined
	}
	err := update(ctx, func(tx backend.Store) error {
		cache := projcache.NewCache(tx, g.reg)
		for _, p := range batch {
			if err := g.write(ctx, tx, cache, p); err != nil {
				return err
			}
		}
		// The children's listing rows, as a writer of these logs
		// leaves them (dsh's turn writer and import resolve theirs).
		ids := make([]string, len(batch))
		for i, p := range batch {
			ids[i] = p.h.ID
		}
		return subagent.RefreshResolvedRowsIn(ctx, tx, ids)
	})
	if err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.written += len(batch)
	if g.spec.Progress != nil {
		g.spec.Progress(g.written, g.spec.Sessions)
	}
	return nil
}

func (g *generator) write(ctx context.Context, tx backend.Store, cache *projcache.Cache, p planned) error {
	if p.invalid {
		res, err := tx.ImportSession(ctx, p.h, p.events, nil)
		if err != nil {
			return err
		}
		if res.Invalid == nil {
			return fmt.Errorf("generated invalid log of %s reads back as valid", p.h.ID)
		}
		return nil
	}
	if err := tx.CreateSession(ctx, p.h, p.events); err != nil {
		return err
	}
	if !p.h.IsSubagent() || g.spec.NoCheckpoints {
		return nil
	}
	f := g.reg.NewFold()
	f.Apply(p.events...)
	cp, err := f.Checkpoint()
	if err != nil {
		return fmt.Errorf("fold %s: %w", p.h.ID, err)
	}
	if err := cache.Put(ctx, p.h, f.AsOfSeq(), cp); err != nil {
		return err
	}
	// The fold is of the whole log just stored, as dsh's turn writer
	// records it.
	return subagent.RecordRegistryFold(ctx, tx, g.reg, p.h.ID, f)
}

// child plans the parent's i-th child. Its randomness comes from a stream
// of its own, so the child is the same whatever surrounds it.
func (g *generator) child(i int) planned {
	r := rand.New(rand.NewPCG(g.spec.Seed, uint64(i)+1))
	kind := kindFor(r)
	// Every 50th child shares its predecessor's creation time, so id
	// order (ICU collation) decides between them.
	created := baseTime + 1000*int64(i+1)
	if i%50 == 49 {
		created -= 1000
	}
	depth := int64(1)
	h := session.Header{ID: idFrom(r), CreatedAt: created, Cwd: &cwd, ParentSession: &g.spec.Parent,
		Origin: &origin, DelegationDepth: &depth}
	length := g.spec.MinEvents + r.IntN(g.spec.MaxEvents-g.spec.MinEvents+1)
	label := fmt.Sprintf("task %d: %s", i, words(r, 3+r.IntN(6)))
	p := planned{h: h, kind: kind}
	switch kind {
	case Continuable:
		p.events = fill(r, continuableSeed(0, label), length)
	case OneShot:
		p.events = fill(r, oneShotTurn(r, 0, label), length)
	case Fork:
		cut := int64(len(g.forkPrefix))
		p.h.SeedLength = &cut
		seed := append([]session.Event{}, g.forkPrefix...)
		seed = append(seed, event(cut, session.TypeEndSeed, `{}`))
		seed = append(seed, continuableSeed(cut+1, label)...)
		p.events = fill(r, seed, length)
	case Malformed:
		p.events = fill(r, []session.Event{event(0, session.TypeDescriptor, `{"version":2,"mode":"continuable","provider":7}`)}, length)
	case Bare:
		p.events = fill(r, nil, length)
	case Invalid:
		p.events = fill(r, continuableSeed(0, label), length)
		// A user message without its surfaceOp: DSH refuses the log.
		for j := len(p.events) - 1; j >= 0; j-- {
			if p.events[j].Type == session.TypeUserMessage {
				p.events[j].SurfaceOp = nil
				break
			}
		}
		p.invalid = true
	}
	g.catalogChild(p, label)
	return p
}

// catalogChild records the fact DSH 0.1.7 appends for a child it starts:
// the mode and label its own descriptor says (a child whose descriptor is
// damaged or missing keeps what it was started as: continuable, labelled).
func (g *generator) catalogChild(p planned, label string) {
	if g.spec.CatalogParent == "" {
		return
	}
	f := catalog.Fact{Version: catalog.VersionLive, ChildID: p.h.ID, ChildCreatedAt: p.h.CreatedAt, Mode: catalog.ModeContinuable, Label: &label}
	for _, e := range p.events {
		if e.Type != session.TypeDescriptor || e.Seq < p.h.InheritedCut() {
			continue
		}
		if d, err := subagent.ParseDescriptor(e.Data); err == nil && d != nil {
			f.Mode, f.Label = catalog.Mode(d.Mode), d.Label
		}
		break
	}
	data, err := catalog.Encode(f)
	if err != nil {
		// Every generated id and label is a valid fact's.
		panic(fmt.Sprintf("catalog fact of %s: %v", p.h.ID, err))
	}
	seq := int64(len(g.catalog))
	g.catalog = append(g.catalog, session.Event{Type: session.TypeCatalog, Seq: seq, Time: p.h.CreatedAt, Data: data})
}

var origin = session.OriginSubagent

// filler plans the f-th unrelated session: every 50th is a root, the others
// are small subagent children of the latest root (a seed and nothing else).
func (g *generator) filler(f int) planned {
	r := rand.New(rand.NewPCG(g.spec.Seed^0x5eed, uint64(f)))
	id := idFrom(r)
	created := baseTime - 1_000_000 + int64(f)
	if f%50 == 0 || g.fillerParent == "" {
		g.fillerParent = id
		return planned{h: session.Header{ID: id, CreatedAt: created, Cwd: &cwd}, kind: filler}
	}
	depth := int64(1)
	parent := g.fillerParent
	h := session.Header{ID: id, CreatedAt: created, Cwd: &cwd, ParentSession: &parent, Origin: &origin, DelegationDepth: &depth}
	return planned{h: h, events: continuableSeed(0, "unrelated "+words(r, 2)), kind: filler}
}

// idFrom draws a random (version 4) UUID from r.
func idFrom(r *rand.Rand) string {
	var u uuid.UUID
	for i := range u {
		u[i] = byte(r.Uint32())
	}
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return u.String()
}

func event(seq int64, typ, data string) session.Event {
	e := session.Event{Type: typ, Seq: seq, Time: baseTime + seq, Data: json.RawMessage(data)}
	if typ == session.TypeUserMessage || typ == session.TypeAssistantMsg {
		e.SurfaceOp = json.RawMessage(`"append"`)
	}
	return e
}

// continuableSeed is a continuable child's creation seed from seq from:
// descriptor, end-seed, delegated approval policy (semantics §7.2).
func continuableSeed(from int64, label string) []session.Event {
	d := `{"version":2,"mode":"continuable","provider":"spawn","label":` + jsjson.String(label) + `,"agentProvider":"echo","agentModel":"echo"}`
	return []session.Event{
		event(from, session.TypeDescriptor, d),
		event(from+1, session.TypeEndSeed, `{}`),
		event(from+2, session.TypeApproval, `{"policy":"never","source":"delegation"}`),
	}
}

// oneShotTurn is a one-shot child's start: the delegated policy, the inbox
// push, turn/start, the inbox claim and the descriptor inside the turn, then
// the turn's first step; fill closes the turn.
func oneShotTurn(r *rand.Rand, from int64, label string) []session.Event {
	seq := from
	next := func(typ, data string) session.Event {
		e := event(seq, typ, data)
		seq++
		return e
	}
	d := `{"version":2,"mode":"one-shot","provider":"spawn"`
	if r.IntN(4) > 0 {
		d += `,"label":` + jsjson.String(label)
	}
	d += `}`
	return []session.Event{
		next(session.TypeApproval, `{"policy":"never","source":"delegation"}`),
		next(session.TypeInboxSpliced, `{"target":"next-turn","start":0,"inserted":[`+userMessage(r, "inbox-0")+`]}`),
		next(session.TypeTurnStart, `{"turn":1}`),
		next(session.TypeInboxSpliced, `{"target":"next-turn","start":0,"removedCount":1,"inserted":[]}`),
		next(session.TypeDescriptor, d),
		next(session.TypeStepStart, `{"turn":1,"step":1}`),
		next(session.TypeUserMessage, userMessage(r, "m-0")),
		next(session.TypeAssistantMsg, assistantMessage(r, 1, "a-0")),
		next(session.TypeStepEnd, `{"turn":1,"step":1}`),
		next(session.TypeTurnEnd, `{"turn":1,"reason":{"kind":"completed"}}`),
	}
}

// fill appends completed turns to events until the log holds at least
// length events.
func fill(r *rand.Rand, events []session.Event, length int) []session.Event {
	turn := 1
	for _, e := range events {
		if e.Type == session.TypeTurnEnd {
			turn++
		}
	}
	for len(events) < length {
		events = append(events, turns(r, int64(len(events)), turn, 1)...)
		turn++
	}
	return events
}

// turns is n completed turns from seq from, numbered from first: each a
// user message and a model reply in one step.
func turns(r *rand.Rand, from int64, first, n int) []session.Event {
	number := first
	var out []session.Event
	seq := from
	next := func(typ, data string) {
		out = append(out, event(seq, typ, data))
		seq++
	}
	for range n {
		t := fmt.Sprint(number)
		next(session.TypeTurnStart, `{"turn":`+t+`}`)
		next(session.TypeStepStart, `{"turn":`+t+`,"step":1}`)
		next(session.TypeUserMessage, userMessage(r, fmt.Sprintf("m-%d", seq)))
		next(session.TypeAssistantMsg, assistantMessage(r, number, fmt.Sprintf("a-%d", seq)))
		next(session.TypeStepEnd, `{"turn":`+t+`,"step":1}`)
		next(session.TypeTurnEnd, `{"turn":`+t+`,"reason":{"kind":"completed"}}`)
		number++
	}
	return out
}

func userMessage(r *rand.Rand, id string) string {
	return `{"content":[{"type":"text","text":` + jsjson.String(words(r, 4+r.IntN(30))) + `}],"source":{"kind":"user"},"role":"user","id":"` + id + `"}`
}

func assistantMessage(r *rand.Rand, turn int, id string) string {
	return fmt.Sprintf(`{"turn":%d,"step":1,"message":{"role":"assistant","content":[{"type":"text","text":%s}],"source":{"kind":"model","provider":"echo","model":"echo"},"id":"%s"}}`,
		turn, jsjson.String(words(r, 10+r.IntN(120))), id)
}

var vocabulary = strings.Fields(`the a listing child parent session descriptor cache turn step model
reply summary review build test read write file tool result plan fork seed label inactive running
corpus index store header event log check value rung ladder order depth`)

func words(r *rand.Rand, n int) string {
	w := make([]string, n)
	for i := range w {
		w[i] = vocabulary[r.IntN(len(vocabulary))]
	}
	return strings.Join(w, " ")
}
