package subagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/jsjson"
	"github.com/dsh-project/dsh/internal/projcache"
	"github.com/dsh-project/dsh/internal/session"
)

// Turn outcomes: the kind of the reason a turn/end records.
const (
	OutcomeCompleted = "completed"
	OutcomeError     = "error"
	OutcomeAborted   = "aborted"
)

// TurnOutcome is how an offline turn ended.
type TurnOutcome struct {
	// Kind is OutcomeCompleted, OutcomeError or OutcomeAborted (the user
	// cancelled: SIGINT or SIGTERM).
	Kind string
	// Reply is the assistant's reply of a completed turn.
	Reply string
	// Failure is the error reason of a turn that ended in error.
	Failure *TurnFailure
}

// childWriter appends one child's events while holding its lease. Every
// durable batch renews the lease and publishes the child's live `subagent`
// snapshot in the same transaction as the events it covers, so a listing
// never sees a snapshot ahead of (or long behind) the log, and a writer that
// lost its lease writes nothing. Checkpoints follow the projection cache's
// write policy, in that transaction too. A turn takes two transactions: the
// lease with the first batch, and the closing batch with the release.
type childWriter struct {
	store  RuntimeStore
	holder backend.LeaseHolder
	header session.Header
	shapes eventShapes
	now    func() time.Time
	newID  func() string

	reg  *projcache.Registry
	fold *projcache.Fold
	ckpt *projcache.Checkpointer
	// wrote: the transaction in progress wrote a checkpoint.
	wrote bool
	// checkpointErr is the last failed checkpoint write; the cache is
	// derived data, so a failure never fails the turn.
	checkpointErr error

	next    int64
	pending []session.Event
}

func (rt *Runtime) newChildWriter(holder backend.LeaseHolder, h session.Header, existing []session.Event) *childWriter {
	reg := NewRegistry()
	w := &childWriter{
		store: rt.Store, holder: holder, header: h, shapes: shapesFor(h.Version), now: rt.now, newID: rt.newID,
		reg: reg, fold: reg.NewFold(), ckpt: projcache.NewCheckpointer(rt.Checkpoints),
		next: int64(len(existing)),
	}
	w.fold.Apply(existing...)
	return w
}

// add queues an event for the next batch, stamped with the clock.
func (w *childWriter) add(typ string, data []byte) {
	w.addAt(w.now().UnixMilli(), typ, data)
}

// addAt queues an event stamped time for the next batch.
func (w *childWriter) addAt(time int64, typ string, data []byte) {
	w.pending = append(w.pending, session.Event{
		Type: typ,
		Seq:  w.next + int64(len(w.pending)),
		Time: time,
		Data: json.RawMessage(data),
	})
}

// addSurface queues a surface event appended to the model-visible surface.
func (w *childWriter) addSurface(typ string, data []byte) {
	w.add(typ, data)
	w.pending[len(w.pending)-1].SurfaceOp = surfaceAppend
}

var surfaceAppend = json.RawMessage(`"append"`)

// snapshot is what the holder publishes: the `subagent` view as of the last
// folded event, or the failure of any unit (which lists the child corrupt).
func (w *childWriter) snapshot() backend.LiveSnapshot {
	snap, err := w.fold.Snapshot()
	out := backend.LiveSnapshot{Subagent: snap.Values[UnitKey], AsOfSeq: snap.AsOfSeq}
	if out.Subagent == nil {
		out.Subagent = json.RawMessage(`null`)
	}
	if err != nil {
		out.UnitFailure = err.Error()
	}
	return out
}

// writePending appends the queued events as one batch inside tx, under the
// lease: it renews the lease with the snapshot covering them, appends them
// and checkpoints when the write policy asks. Call committed once tx has
// committed.
func (w *childWriter) writePending(ctx context.Context, tx backend.Store) error {
	w.fold.Apply(w.pending...)
	snap := w.snapshot()
	if err := tx.HeartbeatLease(ctx, w.header.ID, w.holder, &snap); err != nil {
		return err
	}
	if err := tx.Append(ctx, w.header.ID, w.next, w.pending); err != nil {
		return err
	}
	w.wrote = w.ckpt.Observe(w.pending...) && w.checkpoint(ctx, tx)
	return nil
}

// committed records that the transaction holding the queued batch has
// committed.
func (w *childWriter) committed() {
	if w.wrote {
		w.ckpt.Written()
		w.wrote = false
	}
	w.next += int64(len(w.pending))
	w.pending = nil
}

// checkpoint writes the checkpoint record and the registry fold of the log
// as stored in tx: the writer's fold covers every event of it (the log it
// started from and each batch appended since).
func (w *childWriter) checkpoint(ctx context.Context, tx backend.Store) bool {
	cp, _ := w.fold.Checkpoint() // a failed unit has no row; its failure is published
	err := projcache.NewCache(tx, w.reg).Put(ctx, w.header, w.fold.AsOfSeq(), cp)
	if err == nil {
		err = RecordRegistryFold(ctx, tx, w.reg, w.header.ID, w.fold)
	}
	if err != nil {
		w.checkpointErr = err
		return false
	}
	return true
}

// finish writes the queued closing batch, the mandatory release checkpoint
// and the lease's release in one transaction.
func (w *childWriter) finish(ctx context.Context) error {
	err := w.store.Update(ctx, func(tx backend.Store) error {
		if len(w.pending) > 0 {
			if err := w.writePending(ctx, tx); err != nil {
				return err
			}
		}
		if !w.wrote && w.ckpt.Release() {
			w.wrote = w.checkpoint(ctx, tx)
		}
		// The child's listing row, resolved from the log as it ends the
		// turn (the lease changes nothing of it).
		if err := RefreshResolvedRowsIn(ctx, tx, []string{w.header.ID}); err != nil {
			return err
		}
		err := tx.ReleaseLease(ctx, w.header.ID, w.holder)
		logLease(ctx, "released", w.header.ID, w.holder.ID, err)
		return err
	})
	if err != nil {
		return fmt.Errorf("finish the turn of %s: %w", w.header.ID, err)
	}
	w.committed()
	return nil
}

// keepAlive renews the lease every interval until stop is called. A lease
// found lost cancels work through lost, with the loss as the cause; other
// failures are left to the next renewal (and to the closing batch, which
// fails if the lease is gone by then).
func (w *childWriter) keepAlive(ctx context.Context, every time.Duration, lost context.CancelCauseFunc) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				err := w.store.HeartbeatLease(ctx, w.header.ID, w.holder, nil)
				logLease(ctx, "renewed", w.header.ID, w.holder.ID, err)
				if errors.Is(err, backend.ErrLeaseLost) {
					lost(err)
					return
				}
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
	}
}

// turnSpec is one offline turn.
type turnSpec struct {
	turn      int64
	messageID string
	text      string
	// sender is the session that relayed the message (a resume), "" for
	// the caller's own prompt (a start).
	sender string
	// descriptor, when set, is written inside the turn right after the
	// inbox claim (a one-shot child's first turn).
	descriptor []byte
	provider   Provider
	route      route
	timeout    time.Duration
	heartbeat  time.Duration
}

// openTurn queues a turn's first batch the way DSH's agent loop lays it out:
// the inbox enqueue of the message, turn/start, the inbox claim, (a one-shot
// child's descriptor,) step/start and the user message. The caller writes it
// in the transaction that takes the lease, so everything up to the point
// where the provider runs is durable before it runs.
func (w *childWriter) openTurn(t turnSpec) {
	msg := w.shapes.userMessage(t.messageID, t.text, t.sender)
	w.add(session.TypeInboxSpliced, inboxEnqueueData(msg))
	w.add(session.TypeTurnStart, turnData(t.turn))
	w.add(session.TypeInboxSpliced, inboxClaimData)
	if t.descriptor != nil {
		w.add(session.TypeDescriptor, t.descriptor)
	}
	w.add(session.TypeStepStart, stepData(t.turn, 1))
	w.addSurface(session.TypeUserMessage, msg)
}

// runTurn runs the provider of a turn whose first batch is durable, then
// writes the closing batch — the reply (of a completed turn), step/end and
// turn/end — and releases the lease, in one transaction.
//
// A cancelled ctx (the user interrupting) ends the turn `aborted` with
// reason {kind:"user"}, and the closing batch is still written: a started
// turn is always written whole. A lost lease stops the turn without writing
// more (the next resume closes it as interrupted) and is returned as an
// error.
func (w *childWriter) runTurn(ctx context.Context, t turnSpec) (TurnOutcome, error) {
	out, err := w.runProvider(ctx, t)
	if err != nil {
		return TurnOutcome{}, err
	}
	if out.Kind == OutcomeCompleted {
		now := w.now().UnixMilli()
		w.addAt(now, session.TypeAssistantMsg, w.shapes.assistantMessage(t.turn, 1, w.newID(), out.Reply, t.route, now))
		w.pending[len(w.pending)-1].SurfaceOp = surfaceAppend
	}
	w.add(session.TypeStepEnd, stepData(t.turn, 1))
	w.add(session.TypeTurnEnd, turnEndData(t.turn, out))
	if err := w.finish(context.WithoutCancel(ctx)); err != nil {
		return TurnOutcome{}, err
	}
	return out, nil
}

// runProvider runs the provider with the turn's timeout while keeping the
// lease alive, and classifies how it ended.
func (w *childWriter) runProvider(ctx context.Context, t turnSpec) (TurnOutcome, error) {
	runCtx, lost := context.WithCancelCause(ctx)
	defer lost(nil)
	if t.timeout > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeoutCause(runCtx, t.timeout, errTurnTimeout)
		defer cancel()
	}
	stop := w.keepAlive(context.WithoutCancel(ctx), t.heartbeat, lost)
	reply, err := t.provider.Run(runCtx, t.text)
	stop()
	cause := context.Cause(runCtx)
	switch {
	case errors.Is(cause, backend.ErrLeaseLost):
		return TurnOutcome{}, fmt.Errorf("turn %d of %s stopped: %w", t.turn, w.header.ID, cause)
	case ctx.Err() != nil:
		return TurnOutcome{Kind: OutcomeAborted}, nil
	case errors.Is(cause, errTurnTimeout):
		return TurnOutcome{Kind: OutcomeError, Failure: &TurnFailure{
			Message: fmt.Sprintf("%s provider timed out after %s", t.route.provider, t.timeout), Code: FailureTimeout}}, nil
	case err == nil:
		return TurnOutcome{Kind: OutcomeCompleted, Reply: reply}, nil
	}
	var failure *TurnFailure
	if !errors.As(err, &failure) {
		failure = &TurnFailure{Message: fmt.Sprintf("%s provider failed: %v", t.route.provider, err), Code: FailureUnknown}
	}
	return TurnOutcome{Kind: OutcomeError, Failure: failure}, nil
}

var errTurnTimeout = errors.New("turn timed out")

// Event payloads, with DSH's key orders (they become JSONL bytes).

var (
	inboxClaimData  = []byte(`{"target":"next-turn","start":0,"removedCount":1,"inserted":[]}`)
	policyData      = []byte(`{"policy":"never","source":"delegation"}`)
	endSeedData     = []byte(`{}`)
	userSource      = []byte(`{"kind":"user"}`)
	reasonCompleted = []byte(`{"kind":"completed"}`)
	reasonAborted   = []byte(`{"kind":"aborted","reason":{"kind":"user"}}`)
)

// relaySource is the source of a message a parent sends with send_message.
func relaySource(parent string) []byte {
	b := []byte(`{"kind":"coordinator","form":"relay","senderSessionId":`)
	b = jsjson.AppendString(b, parent)
	return append(b, '}')
}

// userMessageData is a UserMessage as DSH stores it (keys content, source,
// role, id).
func userMessageData(id, text string, source []byte) []byte {
	b := []byte(`{"content":[{"type":"text","text":`)
	b = jsjson.AppendString(b, text)
	b = append(b, `}],"source":`...)
	b = append(b, source...)
	b = append(b, `,"role":"user","id":`...)
	b = jsjson.AppendString(b, id)
	return append(b, '}')
}

func inboxEnqueueData(msg []byte) []byte {
	b := []byte(`{"target":"next-turn","start":0,"inserted":[`)
	b = append(b, msg...)
	return append(b, "]}"...)
}

func turnData(turn int64) []byte {
	return append(jsjson.AppendInt([]byte(`{"turn":`), turn), '}')
}

func stepData(turn, step int64) []byte {
	b := jsjson.AppendInt([]byte(`{"turn":`), turn)
	b = jsjson.AppendInt(append(b, `,"step":`...), step)
	return append(b, '}')
}

// assistantMessageData is an assistant/message payload: {turn, step,
// message}, the message with DSH's key order (role, content, source, id). An
// empty reply has no content blocks, which DSH reads as "no message".
func assistantMessageData(turn, step int64, id, reply string, r route) []byte {
	b := stepData(turn, step)
	b = append(b[:len(b)-1], `,"message":{"role":"assistant","content":[`...)
	if reply != "" {
		b = append(b, `{"type":"text","text":`...)
		b = jsjson.AppendString(b, reply)
		b = append(b, '}')
	}
	b = append(b, `],"source":{"kind":"model","provider":`...)
	b = jsjson.AppendString(b, r.provider)
	b = append(b, `,"model":`...)
	b = jsjson.AppendString(b, r.model)
	b = append(b, `},"id":`...)
	b = jsjson.AppendString(b, id)
	return append(b, "}}"...)
}

func turnEndData(turn int64, out TurnOutcome) []byte {
	b := jsjson.AppendInt([]byte(`{"turn":`), turn)
	b = append(b, `,"reason":`...)
	b = append(b, out.Reason()...)
	return append(b, '}')
}

// Reason is the turn/end reason the outcome is recorded with: {kind:
// "completed"}, {kind:"aborted", reason:{kind:"user"}} or {kind:"error",
// error:{message, code}}.
func (o TurnOutcome) Reason() json.RawMessage {
	switch o.Kind {
	case OutcomeCompleted:
		return reasonCompleted
	case OutcomeAborted:
		return reasonAborted
	}
	b := []byte(`{"kind":"error","error":{"message":`)
	b = jsjson.AppendString(b, o.Failure.Message)
	b = append(b, `,"code":`...)
	b = jsjson.AppendString(b, o.Failure.Code)
	return append(b, "}}"...)
}
