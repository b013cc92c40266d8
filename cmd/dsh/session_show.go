package main

import (
	"context"
	"fmt"
	"strconv"

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
		return p.Record(v, sessionFields(v))
	}
	return cmd
}

// showSession is `dsh session show` over the database or --source, read
// from one snapshot.
func showSession(ctx context.Context, a *app, src *sourceFlags, id string) (v report.Session, err error) {
	if err := checkSessionID("session show", id); err != nil {
		return v, err
	}
	r, err := src.open(ctx, a)
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

// sessionFields is the human form of v: every header field (absent ones as
// "-", which DSH distinguishes from zero), then the log summary.
func sessionFields(v report.Session) []render.Field {
	h := v.Header
	orDash := func(s string) string {
		if s == "" {
			return "-"
		}
		return s
	}
	fs := []render.Field{
		{Name: "id", Value: h.ID},
		{Name: "version", Value: strconv.FormatInt(h.Version, 10)},
		{Name: "createdAt", Value: fmt.Sprintf("%s (%d)", formatMillis(h.CreatedAt), h.CreatedAt)},
		{Name: "cwd", Value: orDash(optString(h.Cwd))},
		{Name: "parentSession", Value: orDash(optString(h.ParentSession))},
		{Name: "seedLength", Value: orDash(optInt(h.SeedLength))},
		{Name: "origin", Value: orDash(optString(h.Origin))},
		{Name: "delegationDepth", Value: orDash(optInt(h.DelegationDepth))},
		{Name: "agentPreset", Value: orDash(optString(h.AgentPreset))},
	}
	if v.SourceFormat != "" {
		fs = append(fs, render.Field{Name: "sourceFormat", Value: v.SourceFormat})
	}
	if v.Invalid != nil {
		where := "header"
		if v.Invalid.Seq >= 0 {
			where = "seq " + strconv.FormatInt(v.Invalid.Seq, 10)
		}
		return append(fs, render.Field{Name: "invalid", Value: fmt.Sprintf("%s: %s: %s", where, v.Invalid.Rule, v.Invalid.Message)})
	}
	if v.Unreadable != nil {
		return append(fs, render.Field{Name: "unreadable", Value: fmt.Sprintf("seq %d: %s", v.Unreadable.Seq, v.Unreadable.Reason)})
	}
	log := v.Log
	last := "-"
	if log.Last != nil {
		last = fmt.Sprintf("%d %s", log.Last.Seq, log.Last.Type)
	}
	open := "no"
	if log.OpenTurn {
		open = "yes"
	}
	fs = append(fs,
		render.Field{Name: "events", Value: itoa(log.Events)},
		render.Field{Name: "turns", Value: itoa(log.Turns)},
		render.Field{Name: "openTurn", Value: open},
		render.Field{Name: "lastEvent", Value: last},
	)
	if log.TornTail != nil {
		fs = append(fs, render.Field{Name: "tornTail", Value: fmt.Sprintf("from seq %d: %s", log.TornTail.FromSeq, log.TornTail.Reason)})
	}
	return fs
}
