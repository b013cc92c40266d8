package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/location"
	"github.com/dsh-project/dsh/internal/projcache"
	"github.com/dsh-project/dsh/internal/render"
	"github.com/dsh-project/dsh/internal/subagent"
)

// turnOptions are the flags start and resume share: the message and the
// offline provider that answers it.
type turnOptions struct {
	message  string
	provider string
	exec     string
	model    string
	timeout  time.Duration
}

func (o *turnOptions) addFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.message, "message", "", "the message the turn answers; - reads it from stdin (required)")
	f.StringVar(&o.provider, "provider", "", "offline provider that answers: echo or exec (default echo, or exec with --exec)")
	f.StringVar(&o.exec, "exec", "", "shell command answering the turn: /bin/sh -c CMD, the message on stdin, the reply its stdout")
	f.StringVar(&o.model, "model", "", "model name recorded with the replies (default: the provider's name)")
	f.DurationVar(&o.timeout, "timeout", 0, "end the turn with a TIMEOUT error after this long, e.g. 30s (default: no limit)")
}

// prepare checks the shared flags and reads the message.
func (o *turnOptions) prepare(a *app, cmd *cobra.Command) (subagent.ProviderConfig, string, error) {
	if err := refuseEmptyFlags(cmd, "provider", "exec", "model"); err != nil {
		return subagent.ProviderConfig{}, "", err
	}
	if !cmd.Flags().Changed("message") {
		return subagent.ProviderConfig{}, "", dsherr.New(dsherr.Usage, "%s: --message is required (- reads it from stdin)", cmd.CommandPath())
	}
	if o.timeout < 0 {
		return subagent.ProviderConfig{}, "", dsherr.New(dsherr.InvalidInput, "--timeout must not be negative (got %s)", o.timeout)
	}
	msg := o.message
	if msg == "-" {
		b, err := readMessage(cmd.Context(), a.stdin)
		if err != nil {
			if errors.Is(err, context.Canceled) {
				return subagent.ProviderConfig{}, "", dsherr.Wrap(dsherr.Cancelled, err, "interrupted while reading the message from stdin")
			}
			return subagent.ProviderConfig{}, "", dsherr.Wrap(dsherr.InvalidInput, err, "read the message from stdin")
		}
		if len(b) > maxMessageBytes {
			return subagent.ProviderConfig{}, "", dsherr.New(dsherr.InvalidInput, "the message on stdin is longer than %d bytes", maxMessageBytes)
		}
		// As shell command substitution does: `echo hi | dsh …` sends "hi".
		msg = strings.TrimRight(string(b), "\n")
	}
	if msg == "" {
		return subagent.ProviderConfig{}, "", dsherr.New(dsherr.InvalidInput, "the message is empty")
	}
	cfg := subagent.ProviderConfig{Name: o.provider, Command: o.exec, Model: o.model, Timeout: o.timeout}
	if cfg.Name == "" && cfg.Command != "" {
		cfg.Name = subagent.ProviderExec
	}
	return cfg, msg, nil
}

// maxMessageBytes bounds a message read from stdin: it becomes event data.
const maxMessageBytes = 8 << 20

// readMessage reads at most maxMessageBytes+1 bytes of stdin, or returns
// ctx's error as soon as ctx is done: a terminal's Ctrl-C must stop a
// command still waiting for its message, and a blocked read cannot be
// interrupted. The abandoned read ends with the process.
func readMessage(ctx context.Context, stdin io.Reader) ([]byte, error) {
	type result struct {
		b   []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		b, err := io.ReadAll(io.LimitReader(stdin, maxMessageBytes+1))
		done <- result{b, err}
	}()
	select {
	case r := <-done:
		return r.b, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// runtime is the subagent runtime over s with the configured lease timing
// and checkpoint policy; event times come from the app's clock.
func (a *app) runtime(s location.Store) (*subagent.Runtime, error) {
	cfg, err := a.config()
	if err != nil {
		return nil, err
	}
	return &subagent.Runtime{
		Store:       s,
		LeaseTTL:    cfg.Lease.TTL,
		Heartbeat:   cfg.Lease.Heartbeat,
		Checkpoints: projcache.WritePolicy{EveryEvents: cfg.Cache.WriteEveryEvents, Interval: cfg.Cache.WriteInterval},
		Now:         a.now,
	}, nil
}

// turnDoc is what start and resume print with -o json.
type turnDoc struct {
	ChildID   string `json:"childId"`
	MessageID string `json:"messageId"`
	Turn      int64  `json:"turn"`
	// Reason is the turn/end reason the turn recorded.
	Reason json.RawMessage `json:"reason"`
	// Reply is the assistant's reply of a completed turn.
	Reply *string `json:"reply,omitempty"`
}

// reportTurn prints a start's or resume's result: the child id (text) or
// the turn document (JSON). Problems that did not stop the turn, and a turn
// that ended in error, are warnings on stderr; an interrupted turn is the
// CANCELLED error (exit 130), whose message names the child.
func (a *app) reportTurn(p *render.Printer, res *subagent.TurnResult) error {
	for _, w := range res.Warnings {
		a.warn(w.Error())
	}
	out := res.Outcome
	switch out.Kind {
	case subagent.OutcomeAborted:
		return dsherr.New(dsherr.Cancelled, "subagent %q: turn %d was interrupted and ended aborted", res.ChildID, res.Turn)
	case subagent.OutcomeError:
		a.warn(fmt.Sprintf("subagent %q: turn %d ended with error %s: %s", res.ChildID, res.Turn, out.Failure.Code, out.Failure.Message))
	}
	if p.Format() != render.JSON {
		return p.Line(res.ChildID)
	}
	doc := turnDoc{ChildID: res.ChildID, MessageID: res.MessageID, Turn: res.Turn, Reason: out.Reason()}
	if out.Kind == subagent.OutcomeCompleted {
		doc.Reply = &out.Reply
	}
	return p.JSON(doc)
}

type startOptions struct {
	parent   string
	mode     string
	label    string
	fork     bool
	maxDepth int
	id       string
	turn     turnOptions
}

func newStartCmd(a *app) *cobra.Command {
	var opts startOptions
	cmd := &cobra.Command{
		Use:   "start --parent ID --label L --message TEXT",
		Short: "Start a subagent child of a session and run its first turn",
		Long: `Start a subagent child of session --parent the way DSH's delegation does,
and run its first turn offline. Prints the child's id.

Checks, in DSH's order, each refusing with nothing written: the parent exists
(NOT_FOUND); the id is free (DUPLICATE_CHILD); the child's depth — the
parent's delegationDepth plus one — is within --max-depth (DEPTH_EXCEEDED,
"subagent depth <n> exceeds maxDepth <m>"). A continuable child needs a
--label.

The child's header records the parent, its cwd and agent preset, origin
"subagent" and the depth; with --fork it inherits the parent's events up to
its last completed turn (seedLength). Its log is laid out as DSH lays it out:
a continuable child's descriptor and session/end-seed come before the first
turn, a one-shot child's descriptor inside it, after the inbox claim; then
the delegated approval policy, the message through the inbox, the provider's
reply and turn/end.

Under a parent of a later DSH session format (2-4) the child is written in
the parent's format, and the child's subagent/catalog fact is appended to the
parent's log in the same transaction, as DSH 0.1.7 records the children it
starts; a parent whose own turn another live process is running refuses the
start (NOT_DELIVERED) and nothing is written.

The turn is answered offline: --provider echo replies "echo: <message>";
--exec CMD runs CMD through /bin/sh with the message on stdin and replies
with its stdout. A command that fails or runs past --timeout ends the turn
with an error reason (a warning; the child is started). While the turn runs
the child is leased: other processes list it as running and cannot resume
it. SIGINT ends the turn as aborted by the user and exits 130.

` + exitStatusHelp(exitLine{exitConflict, "another live process holds the child, or the later-format parent (NOT_DELIVERED); nothing written"}),
		Example: `  dsh start --parent 11111111-1111-4111-8111-111111111111 --label "Reply with CHILD_OK" --message "Reply with exactly CHILD_OK"
  dsh start --parent my-session --mode one-shot --fork --message "What was the codeword?"
  echo "summarize" | dsh start --parent my-session --label sum --exec 'wc -w' --timeout 30s --message - -o json`,
		Args: exactArgs(),
	}
	f := cmd.Flags()
	f.StringVar(&opts.parent, "parent", "", "the session the child is delegated from (required)")
	f.StringVar(&opts.mode, "mode", string(subagent.ModeContinuable), "continuable (resumable; needs --label) or one-shot")
	f.StringVar(&opts.label, "label", "", "the child's label (required for a continuable child)")
	f.BoolVar(&opts.fork, "fork", false, "inherit the parent's events up to its last completed turn")
	f.IntVar(&opts.maxDepth, "max-depth", 0, "refuse a child deeper than this (default: config maxDepth, 2)")
	f.StringVar(&opts.id, "id", "", "the child's id (default: a new random UUID)")
	opts.turn.addFlags(cmd)
	out := addOutputFlag(cmd, render.Table, render.JSON)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		p, err := out.printer(a, cmd)
		if err != nil {
			return err
		}
		req, err := opts.request(a, cmd)
		if err != nil {
			return err
		}
		return runStart(cmd.Context(), a, p, req)
	}
	return cmd
}

func (o *startOptions) request(a *app, cmd *cobra.Command) (subagent.StartRequest, error) {
	if err := refuseEmptyFlags(cmd, "parent", "mode", "label", "id"); err != nil {
		return subagent.StartRequest{}, err
	}
	if !cmd.Flags().Changed("parent") {
		return subagent.StartRequest{}, dsherr.New(dsherr.Usage, "dsh start: --parent is required")
	}
	if err := checkSessionID("--parent", o.parent); err != nil {
		return subagent.StartRequest{}, err
	}
	if o.id != "" {
		if err := checkSessionID("--id", o.id); err != nil {
			return subagent.StartRequest{}, err
		}
	}
	cfg, msg, err := o.turn.prepare(a, cmd)
	if err != nil {
		return subagent.StartRequest{}, err
	}
	req := subagent.StartRequest{
		Parent:   o.parent,
		ChildID:  o.id,
		Mode:     subagent.Mode(o.mode),
		Fork:     o.fork,
		Message:  msg,
		Provider: cfg,
	}
	if cmd.Flags().Changed("label") {
		req.Label = &o.label
	}
	if cmd.Flags().Changed("max-depth") {
		if o.maxDepth < 0 {
			return subagent.StartRequest{}, dsherr.New(dsherr.InvalidInput, "--max-depth must not be negative (got %d)", o.maxDepth)
		}
		req.MaxDepth = int64(o.maxDepth)
	} else {
		conf, err := a.config()
		if err != nil {
			return subagent.StartRequest{}, err
		}
		req.MaxDepth = int64(conf.MaxDepth)
	}
	return req, nil
}

func runStart(ctx context.Context, a *app, p *render.Printer, req subagent.StartRequest) error {
	res, err := a.runTurn(ctx, func(rt *subagent.Runtime) (*subagent.TurnResult, error) { return rt.Start(ctx, req) })
	if err != nil {
		return err
	}
	return a.reportTurn(p, res)
}

// runTurn opens the database for writing, builds the runtime over it and
// runs one turn with it.
func (a *app) runTurn(ctx context.Context, turn func(*subagent.Runtime) (*subagent.TurnResult, error)) (res *subagent.TurnResult, err error) {
	s, err := a.openStore(ctx)
	if err != nil {
		return nil, err
	}
	defer closeStore(s, &err)
	rt, err := a.runtime(s)
	if err != nil {
		return nil, err
	}
	return turn(rt)
}
