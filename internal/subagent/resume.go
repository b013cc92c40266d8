package subagent

import (
	"context"
	"errors"
	"fmt"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/session"
)

// ResumeRequest is DSH's send_message to a settled child: a cold resume
// that runs one turn answering Message.
type ResumeRequest struct {
	Child  string
	Parent string
	// Message is relayed from Parent (source coordinator/relay).
	Message string
	// Provider runs the turn. An empty Name takes the child's recorded
	// route (the descriptor's agentProvider, when it is an offline
	// provider), else echo; an empty Model takes the descriptor's
	// agentModel when the provider is the recorded one.
	Provider ProviderConfig
}

// Resume sends a message to a continuable child and runs the turn that
// answers it, with DSH's cold-resume checks in DSH's order:
//
//  1. the child cannot be read (unknown id, damaged or invalid log) →
//     NOT_RESUMABLE `subagent "<id>" is unavailable`;
//  2. its parentSession is not Parent (direct parent only) → UNAUTHORIZED
//     `subagent "<id>" belongs to another parent session`;
//  3. the first descriptor of its own suffix (events at or after the exact
//     inherited cut) is missing, of an unsupported version, or one-shot →
//     NOT_RESUMABLE `subagent "<id>" has no supported continuation state and
//     cannot be resumed; do not retry send_message with this id`; malformed →
//     the descriptor's parse error (DESCRIPTOR_MALFORMED);
//  4. another live process holds the child → NOT_DELIVERED, "not delivered".
//
// A refused resume writes nothing. Then, in the transaction that takes the
// lease, the repairing load drops a torn tail and closes an interrupted
// turn, and the turn's first batch follows, after a session/end-seed marker
// unless the log already ends with one. Turn numbers continue the log's; no descriptor or policy event is
// written, and the header's delegationDepth stays the child's depth.
func (rt *Runtime) Resume(ctx context.Context, req ResumeRequest) (*TurnResult, error) {
	in, err := rt.Store.Inspect(ctx, req.Child)
	if err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("resume %q: %w", req.Child, context.Cause(ctx))
	}
	desc, err := CheckResume(req.Child, req.Parent, in, err)
	if err != nil {
		return nil, err
	}
	cfg := recordedRoute(req.Provider, desc)
	if req.Provider.Name == "" && cfg.Name == ProviderExec && cfg.Command == "" {
		return nil, dsherr.New(dsherr.Usage, "subagent %q was started with --exec: give its command again (--exec CMD); dsh does not record it", req.Child)
	}
	provider, r, err := cfg.open()
	if err != nil {
		return nil, err
	}
	holder, beat, err := rt.holder()
	if err != nil {
		return nil, err
	}

	res := &TurnResult{ChildID: req.Child}
	spec := turnSpec{
		messageID: rt.newID(),
		text:      req.Message,
		sender:    req.Parent,
		provider:  provider,
		route:     r,
		timeout:   cfg.Timeout,
		heartbeat: beat,
	}
	var w *childWriter
	err = rt.Store.Update(ctx, func(tx backend.Store) error {
		var err error
		if res.TookOver, err = tx.AcquireLease(ctx, req.Child, holder); err != nil {
			logLease(ctx, "refused", req.Child, holder.ID, err)
			return err
		}
		event := "acquired"
		if res.TookOver != nil {
			event = "acquired (took over an expired lease)"
		}
		logLease(ctx, event, req.Child, holder.ID, nil)
		loaded, err := tx.Load(ctx, req.Child)
		if err != nil {
			return err
		}
		res.Torn, res.Closers = loaded.Torn, loaded.Closers
		log := append(loaded.Events, loaded.Closers...)
		w = rt.newChildWriter(holder, loaded.Header, log)
		if len(log) == 0 || log[len(log)-1].Type != session.TypeEndSeed {
			w.add(session.TypeEndSeed, endSeedData)
		}
		spec.turn = lastTurnNumber(log) + 1
		w.openTurn(spec)
		return w.writePending(ctx, tx)
	})
	if err != nil {
		return nil, err
	}
	w.committed()
	return rt.finishTurn(ctx, w, spec, res)
}

// ErrNoContinuation is why a child with no own descriptor, one of an
// unsupported version or a one-shot one is not resumed (its refusal keeps
// DSH's words, which speak to a model calling send_message).
var ErrNoContinuation = errors.New("no supported continuation state")

// CheckResume applies Resume's refusal checks 1–3, in order, to child as
// the store's read-only Inspect read it (in, or the error Inspect returned)
// on behalf of parent: it returns the descriptor a resume rebuilds the child
// from, or the error Resume refuses with. It reads and writes nothing, so
// diagnose asks it whether a child the catalog shows would be resumed.
func CheckResume(child, parent string, in *backend.Inspection, inspectErr error) (*Descriptor, error) {
	if inspectErr != nil {
		return nil, &dsherr.Error{Code: dsherr.NotResumable, Msg: fmt.Sprintf("subagent %q is unavailable", child), Err: inspectErr}
	}
	if in.Header.Parent() != parent {
		return nil, dsherr.New(dsherr.Unauthorized, "subagent %q belongs to another parent session", child)
	}
	desc, err := firstOwnDescriptor(in.Events, in.Header.InheritedCut())
	if err != nil {
		return nil, &dsherr.Error{Code: dsherr.DescriptorMalformed, Msg: err.Error(), Err: err}
	}
	if desc == nil || desc.Mode != ModeContinuable {
		return nil, &dsherr.Error{Code: dsherr.NotResumable, Err: ErrNoContinuation, Msg: fmt.Sprintf(
			"subagent %q has no supported continuation state and cannot be resumed; do not retry send_message with this id", child)}
	}
	return desc, nil
}

// firstOwnDescriptor parses the first subagent/descriptor whose seq is at or
// after the inherited cut: nil, nil when there is none or it is of an
// unsupported version; a *DescriptorError when it is malformed. Later
// descriptors never matter to a resume (DSH folds only the first).
func firstOwnDescriptor(events []session.Event, cut int64) (*Descriptor, error) {
	for _, e := range events {
		if e.Type == session.TypeDescriptor && OwnSuffix(e.Seq, cut) {
			return ParseDescriptor(e.Data)
		}
	}
	return nil, nil
}

// recordedRoute fills what the caller left open from the child's recorded
// route, as DSH rebuilds a resumed child's model route from the descriptor
// alone. A route naming a provider dsh cannot run offline falls back to echo.
func recordedRoute(cfg ProviderConfig, d *Descriptor) ProviderConfig {
	recorded := ""
	if d.AgentProvider != nil {
		recorded = *d.AgentProvider
	}
	if cfg.Name == "" {
		cfg.Name = ProviderEcho
		if recorded == ProviderExec || recorded == ProviderEcho {
			cfg.Name = recorded
		}
	}
	if cfg.Model == "" && cfg.Name == recorded && d.AgentModel != nil {
		cfg.Model = *d.AgentModel
	}
	return cfg
}
