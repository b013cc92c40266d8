package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/render"
	"github.com/dsh-project/dsh/internal/session"
)

type sessionEventsOptions struct {
	from    int64
	types   []string
	anyType bool
}

// validate checks the filters before anything is read. A --type DSH does not
// define would silently match nothing (a typo such as turn/ennd), so it is
// refused unless --any-type says it is meant (an ignorable plugin event).
func (o sessionEventsOptions) validate() error {
	if o.from < 0 {
		return dsherr.New(dsherr.Usage, "--from %d: want a seq >= 0", o.from)
	}
	for _, t := range o.types {
		switch {
		case t == "":
			return dsherr.New(dsherr.Usage, "--type: empty event type")
		case !o.anyType && !session.IsKnownType(t):
			return dsherr.New(dsherr.Usage, "--type %q: not an event type DSH defines (--any-type accepts it)", t)
		}
	}
	return nil
}

func newSessionEventsCmd(a *app) *cobra.Command {
	var opts sessionEventsOptions
	cmd := &cobra.Command{
		Use:   "events ID",
		Short: "Print a session's event log as JSONL",
		Long: `Print the valid stored prefix of a session's event log, one event per line,
with DSH's field names and order (type, seq, time, data, sourceEventSeqs,
surfaceOp, ignorable). A torn tail is not printed; a warning on stderr says
where it starts. An interrupted turn is printed as stored, not closed.
Read-only.

` + exitStatusHelp(exitLine{exitStore, "the log fails validation (INVALID_LOG) or is in a format this build does not read"}),
		Example: "  dsh session events my-session\n  dsh session events my-session --from 10 --type turn/end --type user/message",
		Args:    exactArgs("ID"),
	}
	src := addSourceFlags(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		return runSessionEvents(cmd.Context(), a, src, args[0], opts)
	}
	cmd.Flags().Int64Var(&opts.from, "from", 0, "print events with seq >= `SEQ`")
	cmd.Flags().StringArrayVar(&opts.types, "type", nil, "print only events of type `T` (repeatable; one DSH defines)")
	cmd.Flags().BoolVar(&opts.anyType, "any-type", false, "accept a --type DSH does not define (an ignorable plugin event's)")
	return cmd
}

// runSessionEvents is `dsh session events` over the database or --source.
func runSessionEvents(ctx context.Context, a *app, src *sourceFlags, id string, opts sessionEventsOptions) (err error) {
	if err := checkSessionID("session events", id); err != nil {
		return err
	}
	if err := opts.validate(); err != nil {
		return err
	}
	p, err := a.printer(render.JSONL)
	if err != nil {
		return err
	}
	r, err := src.open(ctx, a, id)
	if err != nil {
		return err
	}
	defer closeCorpus(r, &err)
	var ins *backend.Inspection
	if len(opts.types) > 0 {
		ins, err = r.Reader.InspectTypes(ctx, id, opts.types...)
	} else {
		ins, err = r.Reader.Inspect(ctx, id)
	}
	if err != nil {
		return r.LookupError(id, err)
	}
	if ins.Torn != nil {
		a.warn(fmt.Sprintf("session %s: torn tail from seq %d not printed (%s)", id, ins.Torn.FromSeq, ins.Torn.Reason))
	}
	for _, e := range ins.Events {
		if e.Seq < opts.from {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := p.JSON(e); err != nil {
			return fmt.Errorf("write event %d: %w", e.Seq, err)
		}
	}
	return nil
}
