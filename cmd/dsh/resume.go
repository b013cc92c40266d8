package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/render"
	"github.com/dsh-project/dsh/internal/subagent"
)

type resumeOptions struct {
	parent string
	turn   turnOptions
}

func newResumeCmd(a *app) *cobra.Command {
	var opts resumeOptions
	cmd := &cobra.Command{
		Use:   "resume CHILD --parent ID --message TEXT",
		Short: "Send a message to a continuable child and run the turn that answers it",
		Long: `Send a message to subagent child CHILD on behalf of session --parent, as DSH's
send_message does, and run the turn that answers it offline. Prints the
child's id.

DSH's cold-resume checks, in order, each refusing with nothing written:
  - CHILD is not in the database: NOT_FOUND "no session with id "<id>""
    (DSH says "subagent "<id>" is unavailable");
  - CHILD cannot be read (damaged or invalid log): NOT_RESUMABLE
    "subagent "<id>" is unavailable";
  - --parent is not CHILD's parentSession (only the direct parent may send):
    UNAUTHORIZED "subagent "<id>" belongs to another parent session";
  - the first descriptor of CHILD's own events (after its inherited seed) is
    missing, of an unsupported version or one-shot: NOT_RESUMABLE "... has no
    supported continuation state and cannot be resumed (...)" (where DSH
    tells its model "do not retry send_message with this id"); malformed:
    DESCRIPTOR_MALFORMED with the descriptor's parse error;
  - another live process holds CHILD: NOT_DELIVERED (exit 4).

Then, holding CHILD's lease, dsh repairs its log as DSH's load does (drops a
torn tail, closes a turn a crashed holder left open), marks the new
lifecycle with session/end-seed, and runs one turn whose user message is
relayed from --parent. No descriptor is added. The turn's route is the one
recorded at the start (the descriptor's agentProvider and agentModel) unless
--provider, --exec or --model say otherwise; a child started with --exec
needs --exec again (the command is not recorded: USAGE without it).

` + exitStatusHelp(exitLine{exitConflict, "another live process holds the child (NOT_DELIVERED); nothing written"}),
		Example: `  dsh resume 33333333-3333-4333-8333-333333333333 --parent 11111111-1111-4111-8111-111111111111 --message "Now reply with SECOND_OK"
  git diff | dsh resume my-child --parent my-session --exec ./review.sh --message - -o json`,
		Args: exactArgs("CHILD"),
	}
	cmd.Flags().StringVar(&opts.parent, "parent", "", "the session sending the message: CHILD's direct parent (required)")
	opts.turn.addFlags(cmd)
	out := addOutputFlag(cmd, render.Table, render.JSON)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		p, err := out.printer(a, cmd)
		if err != nil {
			return err
		}
		req, err := opts.request(a, cmd, args[0])
		if err != nil {
			return err
		}
		return runResume(cmd.Context(), a, p, req)
	}
	return cmd
}

func (o *resumeOptions) request(a *app, cmd *cobra.Command, child string) (subagent.ResumeRequest, error) {
	if err := refuseEmptyFlags(cmd, "parent"); err != nil {
		return subagent.ResumeRequest{}, err
	}
	if !cmd.Flags().Changed("parent") {
		return subagent.ResumeRequest{}, dsherr.New(dsherr.Usage, "dsh resume: --parent is required")
	}
	if err := checkSessionID("CHILD", child); err != nil {
		return subagent.ResumeRequest{}, err
	}
	if err := checkSessionID("--parent", o.parent); err != nil {
		return subagent.ResumeRequest{}, err
	}
	cfg, msg, err := o.turn.prepare(a, cmd)
	if err != nil {
		return subagent.ResumeRequest{}, err
	}
	return subagent.ResumeRequest{Child: child, Parent: o.parent, Message: msg, Provider: cfg}, nil
}

// resumeError words two of DSH's refusals for a shell user: DSH reports an
// unknown id as an unavailable child, and tells the model not to retry
// send_message; dsh says there is no such session, and what to do instead.
func resumeError(child string, err error) error {
	switch {
	case errors.Is(err, backend.ErrNotFound):
		return lookupError(child, err)
	case errors.Is(err, subagent.ErrNoContinuation):
		return &dsherr.Error{Code: dsherr.NotResumable, Err: err, Msg: fmt.Sprintf(
			"subagent %q has no supported continuation state and cannot be resumed "+
				"(a one-shot child, or no supported descriptor): trying again will not help; start a new child with dsh start", child)}
	}
	return err
}

func runResume(ctx context.Context, a *app, p *render.Printer, req subagent.ResumeRequest) error {
	res, err := a.runTurn(ctx, func(rt *subagent.Runtime) (*subagent.TurnResult, error) { return rt.Resume(ctx, req) })
	if err != nil {
		return resumeError(req.Child, err)
	}
	if l := res.TookOver; l != nil {
		a.warn(fmt.Sprintf("subagent %q: took over the expired lease of pid %d on %s (holder %s)", res.ChildID, l.PID, l.Host, l.Holder))
	}
	if t := res.Torn; t != nil {
		a.warn(fmt.Sprintf("subagent %q: dropped a torn tail from seq %d (%s)", res.ChildID, t.FromSeq, t.Reason))
	}
	if n := len(res.Closers); n > 0 {
		a.warn(fmt.Sprintf("subagent %q: closed the turn its last holder left open (%d closing events from seq %d)", res.ChildID, n, res.Closers[0].Seq))
	}
	return a.reportTurn(p, res)
}
