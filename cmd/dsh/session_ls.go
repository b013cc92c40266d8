package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/dsh-project/dsh/internal/render"
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

` + exitStatusHelp(),
		Example: "  dsh session ls\n  dsh session ls -o jsonl | jq -r 'select(.origin == \"subagent\") | .id'",
		Args:    exactArgs(),
	}
	out := addOutputFlag(cmd, render.Table, render.TSV, render.JSON, render.JSONL)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		p, err := out.printer(a, cmd)
		if err != nil {
			return err
		}
		return runSessionLs(cmd.Context(), a, p)
	}
	return cmd
}

var sessionColumns = []render.Column[headerJSON]{
	{Header: "ID", Value: func(h headerJSON) string { return h.ID }},
	{Header: "CREATED", Value: func(h headerJSON) string { return formatMillis(h.CreatedAt) }},
	{Header: "PARENT", Value: func(h headerJSON) string { return optString(h.ParentSession) }},
	{Header: "SEED", Value: func(h headerJSON) string { return optInt(h.SeedLength) }},
	{Header: "ORIGIN", Value: func(h headerJSON) string { return optString(h.Origin) }},
	{Header: "DEPTH", Value: func(h headerJSON) string { return optInt(h.DelegationDepth) }},
	{Header: "PRESET", Value: func(h headerJSON) string { return optString(h.AgentPreset) }},
	{Header: "CWD", Value: func(h headerJSON) string { return optString(h.Cwd) }},
}

func runSessionLs(ctx context.Context, a *app, p *render.Printer) (err error) {
	s, err := a.openStoreReadOnly(ctx)
	if err != nil {
		return err
	}
	defer closeStore(s, &err)
	l := render.NewList(p, sessionColumns)
	if err := s.ListHeaders(ctx, func(h session.Header) error {
		return l.Add(newHeaderJSON(h))
	}); err != nil {
		return err
	}
	return l.Close()
}
