package subagent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/catalog"
	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/jsjson"
	"github.com/dsh-project/dsh/internal/projcache"
	"github.com/dsh-project/dsh/internal/session"
)

// Lease timing defaults: a running turn renews its lease every second and a
// crashed holder's lease lapses five seconds after its last renewal.
const (
	DefaultLeaseTTL  = 5 * time.Second
	DefaultHeartbeat = time.Second
)

// DSH's subagent providers as the descriptor names them: a fresh child is
// spawned, a fork child inherits its parent's completed turns.
const (
	descriptorProviderSpawn = "spawn"
	descriptorProviderFork  = "fork"
)

// Runtime starts and resumes subagent children in a dsh store, offline,
// with DSH's checks, in DSH's order, writing DSH's event layout. A running
// turn holds the child's lease (see backend.Leaser), which makes it
// `running` to listings in other processes and exclusive to writers.
type Runtime struct {
	Store RuntimeStore
	// LeaseTTL and Heartbeat time the lease of a running turn: it is
	// renewed every Heartbeat and lapses LeaseTTL after the last renewal.
	// Zero values take the defaults; Heartbeat must be below LeaseTTL.
	LeaseTTL  time.Duration
	Heartbeat time.Duration
	// Checkpoints is the projection cache's write policy for the child.
	Checkpoints projcache.WritePolicy
	// Now is the clock recorded in headers and events (nil: time.Now).
	// Leases are judged by the store's clock, never by this one.
	Now func() time.Time
	// NewID returns a fresh child or message id (nil: a random lowercase
	// UUID v4, as DSH's crypto.randomUUID).
	NewID func() string
}

// RuntimeStore is what the runtime needs of a backend: headers and logs to
// check a start or resume against, lease renewal between writes, and
// transactions in which a child is created, loaded, appended to, leased and
// checkpointed together.
type RuntimeStore interface {
	backend.HeaderReader
	backend.LogReader
	backend.Leaser
	backend.Transactor
}

func (rt *Runtime) now() time.Time {
	if rt.Now == nil {
		return time.Now()
	}
	return rt.Now()
}

func (rt *Runtime) newID() string {
	if rt.NewID == nil {
		return uuid.NewString()
	}
	return rt.NewID()
}

// holder is a fresh lease holder for this process with the runtime's TTL.
func (rt *Runtime) holder() (backend.LeaseHolder, time.Duration, error) {
	ttl, beat := rt.LeaseTTL, rt.Heartbeat
	if ttl == 0 {
		ttl = DefaultLeaseTTL
	}
	if beat == 0 {
		beat = DefaultHeartbeat
	}
	if ttl < 0 || beat < 0 || beat >= ttl {
		return backend.LeaseHolder{}, 0, dsherr.New(dsherr.InvalidInput,
			"lease heartbeat (%s) must be positive and below the lease TTL (%s)", beat, ttl)
	}
	return backend.NewLeaseHolder(ttl), beat, nil
}

// TurnResult is what a start or resume did.
type TurnResult struct {
	ChildID string
	// MessageID is the id of the user message the turn answered (DSH
	// returns it as the accepted inbox message).
	MessageID string
	Turn      int64
	Outcome   TurnOutcome
	// TookOver is the expired lease of a crashed holder that this turn
	// replaced (resume only), nil when the child was free.
	TookOver *backend.Lease
	// Torn and Closers are what the repairing load did before a resumed
	// turn: the torn tail it dropped, the events that closed an
	// interrupted turn.
	Torn    *backend.TornTail
	Closers []session.Event
	// Warnings are failures that did not stop the turn: a checkpoint that
	// could not be written (the cache is derived data).
	Warnings []error
}

// StartRequest is DSH's start of a child: startContinuable, or a one-shot
// start, through the spawn (fresh) or fork provider.
type StartRequest struct {
	Parent string
	// ChildID is a caller-reserved id; "" chooses a new one.
	ChildID string
	Mode    Mode
	// Label is required for a continuable child, optional for a one-shot.
	Label *string
	// Fork seeds the child with the parent's events up to its last
	// turn/end (a fresh child when no turn has ended).
	Fork bool
	// Message is the initial prompt, the child's first turn.
	Message string
	// MaxDepth is the delegation depth limit: a child deeper than it is
	// refused.
	MaxDepth int64
	// Provider runs the first turn; its Name defaults to echo.
	Provider ProviderConfig
}

// startPlan is a start that passed every check: what to create, and the
// first turn to run.
type startPlan struct {
	header session.Header
	seed   []session.Event
	holder backend.LeaseHolder
	turn   turnSpec
	// catalogFact, when set, is the subagent/catalog payload appended to
	// the parent's log (a later-format parent).
	catalogFact []byte
}

// Start creates a child and runs its first turn. Checks, in order: the
// request (mode, label, depth limit, provider), the parent exists
// (NOT_FOUND), the id is free (DUPLICATE_CHILD `subagent "<id>" already
// exists`), the depth (DEPTH_EXCEEDED `subagent depth <n> exceeds maxDepth
// <m>`), the descriptor. A refused start writes nothing.
//
// The header, the creation seed, the lease and the turn's first batch are
// written in one transaction (see begin); the closing batch and the lease's
// release in a second (see runTurn). A turn that ends in error or is
// cancelled is still a successful start: the child exists and its log says
// how the turn ended.
func (rt *Runtime) Start(ctx context.Context, req StartRequest) (*TurnResult, error) {
	plan, err := rt.planStart(ctx, req)
	if err != nil {
		return nil, err
	}
	w, err := rt.begin(ctx, plan)
	if err != nil {
		return nil, err
	}
	return rt.finishTurn(ctx, w, plan.turn, &TurnResult{ChildID: plan.header.ID})
}

// planStart runs Start's checks and lays out the child: its header, its
// creation seed and its first turn. It reads the store and writes nothing.
func (rt *Runtime) planStart(ctx context.Context, req StartRequest) (*startPlan, error) {
	switch req.Mode {
	case ModeContinuable:
		if req.Label == nil {
			return nil, dsherr.New(dsherr.InvalidInput, "a continuable child needs a label")
		}
	case ModeOneShot:
	default:
		return nil, dsherr.New(dsherr.Usage, "unknown mode %q (want %s or %s)", req.Mode, ModeContinuable, ModeOneShot)
	}
	if req.MaxDepth < 0 || req.MaxDepth > jsjson.MaxSafeInteger {
		return nil, dsherr.New(dsherr.InvalidInput, "subagent maxDepth must be a non-negative safe integer")
	}
	cfg := req.Provider
	if cfg.Name == "" {
		cfg.Name = ProviderEcho
	}
	provider, r, err := cfg.open()
	if err != nil {
		return nil, err
	}
	holder, beat, err := rt.holder()
	if err != nil {
		return nil, err
	}

	parent, err := rt.Store.Header(ctx, req.Parent)
	if errors.Is(err, backend.ErrNotFound) {
		return nil, &dsherr.Error{Code: dsherr.NotFound, Msg: fmt.Sprintf("parent session %q not found", req.Parent), Err: err}
	}
	if err != nil {
		return nil, err
	}
	id := req.ChildID
	if id == "" {
		id = rt.newID()
	}
	if _, err := rt.Store.Header(ctx, id); err == nil {
		return nil, duplicateChild(id, nil)
	} else if !errors.Is(err, backend.ErrNotFound) {
		return nil, err
	}
	depth := max(parent.Depth(), 0) + 1
	if depth > req.MaxDepth {
		return nil, dsherr.New(dsherr.DepthExceeded, "subagent depth %d exceeds maxDepth %d", depth, req.MaxDepth)
	}
	var prefix []session.Event
	if req.Fork {
		in, err := rt.Store.Inspect(ctx, req.Parent)
		if err != nil {
			return nil, fmt.Errorf("read parent %q to fork it: %w", req.Parent, err)
		}
		prefix = session.ForkPrefix(in.Events)
	}

	// The child is written in its parent's session format, as the DSH
	// release that wrote the parent would write it.
	version := int64(session.FormatVersion)
	if session.IsLaterFormat(parent.Version) {
		version = parent.Version
	}
	shapes := shapesFor(version)
	desc := Descriptor{Version: shapes.descriptorVersion(), Mode: req.Mode, Provider: descriptorProviderSpawn, Label: req.Label}
	if req.Fork {
		desc.Provider = descriptorProviderFork
	}
	if req.Mode == ModeContinuable {
		desc.AgentProvider, desc.AgentModel = &r.provider, &r.model
	}
	descData, err := desc.MarshalJSON()
	if err != nil {
		return nil, dsherr.Wrap(dsherr.InvalidInput, err, "subagent descriptor")
	}

	origin := session.OriginSubagent
	h := session.Header{
		Version:         version,
		ID:              id,
		CreatedAt:       rt.now().UnixMilli(),
		Cwd:             parent.Cwd,
		ParentSession:   &parent.ID,
		Origin:          &origin,
		DelegationDepth: &depth,
		AgentPreset:     parent.AgentPreset,
	}
	plan := &startPlan{header: h, holder: holder, turn: turnSpec{
		turn:      lastTurnNumber(prefix) + 1,
		messageID: rt.newID(),
		text:      req.Message,
		provider:  provider,
		route:     r,
		timeout:   cfg.Timeout,
		heartbeat: beat,
	}}
	// The creation seed, as DSH stages it: the inherited prefix and its
	// end-seed marker (tagged in a later format, where its seq is the
	// cut), then for a continuable child the descriptor and, in format 0,
	// the marker its Session constructor adds. A one-shot child's
	// descriptor goes inside its first turn instead.
	seed := newSeed(rt.now().UnixMilli())
	if len(prefix) > 0 {
		cut := int64(len(prefix))
		plan.header.SeedLength = &cut
		seed.events = append(seed.events, prefix...)
		seed.add(session.TypeEndSeed, shapes.inheritedMarker())
	}
	if req.Mode == ModeContinuable {
		seed.add(session.TypeDescriptor, descData)
		if shapes.constructorMarker() {
			seed.add(session.TypeEndSeed, endSeedData)
		}
	} else {
		plan.turn.descriptor = descData
	}
	plan.seed = seed.events
	if shapes.later {
		plan.catalogFact, err = catalog.LiveFact(h.ID, h.CreatedAt, catalog.Mode(req.Mode), req.Label)
		if err != nil {
			return nil, dsherr.Wrap(dsherr.InvalidInput, err, "subagent catalog fact")
		}
	}
	return plan, nil
}

// seedBuilder appends creation-seed events with contiguous seqs.
type seedBuilder struct {
	events []session.Event
	time   int64
}

func newSeed(time int64) *seedBuilder { return &seedBuilder{time: time} }

func (b *seedBuilder) add(typ string, data []byte) {
	b.events = append(b.events, session.Event{Type: typ, Seq: int64(len(b.events)), Time: b.time, Data: data})
}

// begin writes the child's header and creation seed, takes its lease and
// writes the first batch of its first turn (the delegated approval policy,
// then the turn up to the user message), publishing its live snapshot, and
// under a later-format parent appends the child's catalog fact to the
// parent's log (see appendCatalogFact), in one transaction: a start that
// fails before the provider runs leaves nothing behind.
func (rt *Runtime) begin(ctx context.Context, plan *startPlan) (*childWriter, error) {
	w := rt.newChildWriter(plan.holder, plan.header, plan.seed)
	w.add(session.TypeApproval, policyData)
	w.openTurn(plan.turn)
	err := rt.Store.Update(ctx, func(tx backend.Store) error {
		if err := tx.CreateSession(ctx, plan.header, plan.seed); err != nil {
			if errors.Is(err, backend.ErrDuplicate) {
				return duplicateChild(plan.header.ID, err)
			}
			return err
		}
		if _, err := tx.AcquireLease(ctx, plan.header.ID, plan.holder); err != nil {
			return err
		}
		logLease(ctx, "acquired", plan.header.ID, plan.holder.ID, nil)
		if err := w.writePending(ctx, tx); err != nil {
			return err
		}
		if plan.catalogFact == nil {
			return nil
		}
		return rt.appendCatalogFact(ctx, tx, plan)
	})
	if err != nil {
		return nil, err
	}
	w.committed()
	return w, nil
}

// appendCatalogFact appends the child's subagent/catalog fact to its
// parent's log inside tx, as DSH 0.1.7's parent records a child it started
// (docs/dsh-compatibility.md, "What start writes to the parent"): after the
// child's initial prompt is admitted, which is the batch tx already holds.
// The parent is written like any session a writer takes: under its lease,
// taken and released inside tx, so a parent whose turn another live process
// is running refuses the start (NOT_DELIVERED) instead of growing under
// that writer; after the repairing load, which drops a torn tail and closes
// an interrupted turn of a crashed holder, as a resume does; then the fact
// at the log's next seq.
func (rt *Runtime) appendCatalogFact(ctx context.Context, tx backend.Store, plan *startPlan) error {
	parent := plan.header.Parent()
	if _, err := tx.AcquireLease(ctx, parent, plan.holder); err != nil {
		logLease(ctx, "refused", parent, plan.holder.ID, err)
		var held *dsherr.Error
		if errors.As(err, &held) && held.Code == dsherr.NotDelivered {
			return &dsherr.Error{Code: dsherr.NotDelivered, Msg: fmt.Sprintf("subagent %q not started: its catalog fact cannot be appended to the parent: %s", plan.header.ID, held.Msg), Err: err}
		}
		return err
	}
	logLease(ctx, "acquired", parent, plan.holder.ID, nil)
	loaded, err := tx.Load(ctx, parent)
	if err != nil {
		return fmt.Errorf("subagent %q not started: parent %q cannot be appended to: %w", plan.header.ID, parent, err)
	}
	next := int64(len(loaded.Events) + len(loaded.Closers))
	fact := session.Event{Type: session.TypeCatalog, Seq: next, Time: rt.now().UnixMilli(), Data: plan.catalogFact}
	if err := tx.Append(ctx, parent, next, []session.Event{fact}); err != nil {
		return fmt.Errorf("subagent %q not started: append its catalog fact to parent %q: %w", plan.header.ID, parent, err)
	}
	// The parent's own listing row (when it is a subagent child), as its
	// log now stands.
	if err := RefreshResolvedRowsIn(ctx, tx, []string{parent}); err != nil {
		return err
	}
	err = tx.ReleaseLease(ctx, parent, plan.holder)
	logLease(ctx, "released", parent, plan.holder.ID, err)
	return err
}

func duplicateChild(id string, cause error) error {
	return &dsherr.Error{Code: dsherr.DuplicateChild, Msg: fmt.Sprintf("subagent %q already exists", id), Err: cause}
}

// finishTurn runs the turn whose first batch w has written, and completes
// res with how it ended.
func (rt *Runtime) finishTurn(ctx context.Context, w *childWriter, spec turnSpec, res *TurnResult) (*TurnResult, error) {
	out, err := w.runTurn(ctx, spec)
	if err != nil {
		return nil, err
	}
	if w.checkpointErr != nil {
		res.Warnings = append(res.Warnings, fmt.Errorf("projection checkpoint of %s not written: %w", w.header.ID, w.checkpointErr))
	}
	res.MessageID, res.Turn, res.Outcome = spec.messageID, spec.turn, out
	return res, nil
}

// lastTurnNumber is the number of the last turn in events, 0 when there is
// none: the turn field of the last turn/start or turn/end, or, if that is
// unreadable, the count of turn/start events.
func lastTurnNumber(events []session.Event) int64 {
	for i := len(events) - 1; i >= 0; i-- {
		e := events[i]
		if e.Type != session.TypeTurnStart && e.Type != session.TypeTurnEnd {
			continue
		}
		if obj, err := checkedObject(e.Data); err == nil {
			turn, _ := obj.Get("turn")
			if n, ok := seqValue(turn); ok {
				return n
			}
		}
		break
	}
	return int64(session.Summarize(events).Turns)
}
