package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/dsh-project/dsh/internal/location"
	"github.com/dsh-project/dsh/internal/render"
	"github.com/dsh-project/dsh/internal/report"
)

func newSessionShowCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Print a session's header and a summary of its log",
		Long: `Print a session's header and a summary of its stored event log: event
count, turns, whether a turn is open (interrupted), and the last event. A torn
tail, a log that fails validation and a committed row that cannot be decoded
are reported after the header, not repaired. Read-only.

` + exitStatusHelp(),
		Example: "  dsh session show 33333333-3333-4333-8333-333333333333\n  dsh session show my-session -o json",
		Args:    exactArgs("ID"),
	}
	src := addSourceFlags(cmd)
	out := addOutputFlag(cmd, render.Table, render.TSV, render.JSON)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		p, err := out.printer(a, cmd)
		if err != nil {
			return err
		}
		v, err := showSession(cmd.Context(), a, src, args[0])
		if err != nil {
			return err
		}
		return p.Record(v, v.Fields())
	}
	return cmd
}

// showSession is `dsh session show` over the database or --source, read
// from one snapshot.
func showSession(ctx context.Context, a *app, src *sourceFlags, id string) (v report.Session, err error) {
	if err := checkSessionID("session show", id); err != nil {
		return v, err
	}
	r, err := src.open(ctx, a, id)
	if err != nil {
		return v, err
	}
	defer closeCorpus(r, &err)
	err = r.View(ctx, func(view location.Reader) error {
		v, err = report.Show(ctx, view, id)
		return err
	})
	return v, r.LookupError(id, err)
}
