package main

import (
	"context"
	"errors"

	"github.com/spf13/cobra"

	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/render"
	"github.com/dsh-project/dsh/internal/report"
	"github.com/dsh-project/dsh/internal/session"
)

func newSessionLsCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "List every session's header",
		Long: `List the header of every session in the database, in creation order of the
rows (oldest first). Columns: id, creation time (UTC), parent, inherited-event
cut (seedLength), origin, delegation depth, agent preset, cwd; empty when the
header does not have the field. JSON prints the headers with DSH's field names.
Read-only; streams, so it works on large corpora.

--parent, --origin and --limit select which headers are printed (the first
--limit that match, in the same order); the headers themselves are printed
unchanged.

` + exitStatusHelp(),
		Example: "  dsh session ls\n  dsh session ls --parent demo-parent --origin subagent --limit 10\n  dsh session ls -o jsonl | jq -r 'select(.origin == \"subagent\") | .id'",
		Args:    exactArgs(),
	}
	var sel headerSelection
	cmd.Flags().StringVar(&sel.parent, "parent", "", "only sessions whose parentSession is this id")
	cmd.Flags().StringVar(&sel.origin, "origin", "", `only sessions with this origin (e.g. "subagent")`)
	cmd.Flags().IntVar(&sel.limit, "limit", 0, "print at most this many sessions (0: all)")
	out := addOutputFlag(cmd, render.Table, render.TSV, render.JSON, render.JSONL)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := refuseEmptyFlags(cmd, "parent", "origin"); err != nil {
			return err
		}
		if sel.limit < 0 {
			return dsherr.New(dsherr.Usage, "--limit: %d is negative", sel.limit)
		}
		sel.byParent, sel.byOrigin = cmd.Flags().Changed("parent"), cmd.Flags().Changed("origin")
		p, err := out.printer(a, cmd)
		if err != nil {
			return err
		}
		return runSessionLs(cmd.Context(), a, p, sel)
	}
	return cmd
}

// headerSelection is which headers `dsh session ls` prints.
type headerSelection struct {
	parent, origin     string
	byParent, byOrigin bool
	limit              int
}

func (s headerSelection) match(h session.Header) bool {
	return (!s.byParent || optString(h.ParentSession) == s.parent && h.ParentSession != nil) &&
		(!s.byOrigin || optString(h.Origin) == s.origin && h.Origin != nil)
}

// errLimitReached stops the header scan once --limit headers are printed.
var errLimitReached = errors.New("limit reached")

var sessionColumns = []render.Column[report.Header]{
	{Header: "ID", Value: func(h report.Header) string { return h.ID }},
	{Header: "CREATED", Value: func(h report.Header) string { return formatMillis(h.CreatedAt) }},
	{Header: "PARENT", Value: func(h report.Header) string { return optString(h.ParentSession) }},
	{Header: "SEED", Value: func(h report.Header) string { return optInt(h.SeedLength) }},
	{Header: "ORIGIN", Value: func(h report.Header) string { return optString(h.Origin) }},
	{Header: "DEPTH", Value: func(h report.Header) string { return optInt(h.DelegationDepth) }},
	{Header: "PRESET", Value: func(h report.Header) string { return optString(h.AgentPreset) }},
	{Header: "CWD", Value: func(h report.Header) string { return optString(h.Cwd) }},
}

func runSessionLs(ctx context.Context, a *app, p *render.Printer, sel headerSelection) (err error) {
	s, err := a.openStoreReadOnly(ctx)
	if err != nil {
		return err
	}
	defer closeStore(s, &err)
	l := render.NewList(p, sessionColumns)
	printed := 0
	if err := s.ListHeaders(ctx, func(h session.Header) error {
		if !sel.match(h) {
			return nil
		}
		if err := l.Add(report.NewHeader(h)); err != nil {
			return err
		}
		if printed++; sel.limit > 0 && printed == sel.limit {
			return errLimitReached
		}
		return nil
	}); err != nil && !errors.Is(err, errLimitReached) {
		return err
	}
	return l.Close()
}
