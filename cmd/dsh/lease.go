package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/dsh-project/dsh/internal/leases"
	"github.com/dsh-project/dsh/internal/render"
)

func newLeaseCmd(a *app) *cobra.Command {
	return newGroupCmd("lease", "See who holds which session",
		"Read the leases live dsh processes hold on the sessions whose turns they run.",
		newLeaseLsCmd(a),
	)
}

func newLeaseLsCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "List the leases of the database",
		Long: `List every lease in the database: which process holds a session while it
runs a turn of it (a dsh start or resume), by session id. Columns: session,
holder (unique per holding process run), host, pid, when the lease was
acquired, when it expires, and its state: live, or expired when its holder
stopped renewing it (it crashed, or was killed) — the next start or resume
takes an expired lease over. Live and expired are judged by the database's
clock (PostgreSQL: the server's), never this machine's. JSON prints the
same as {"sessionId","holder","host","pid","acquiredAt","heartbeatAt",
"expiresAt","state"}, times in epoch milliseconds.

--parent keeps the leases of that session's children (sessions naming it as
parentSession). Read-only; a --source corpus has no leases, so there is no
--source.

` + exitStatusHelp(),
		Example: "  dsh lease ls\n  dsh lease ls --parent my-session -o json",
		Args:    exactArgs(),
	}
	var parent string
	cmd.Flags().StringVar(&parent, "parent", "", "only the leases of this session's children")
	out := addOutputFlag(cmd, render.Table, render.TSV, render.JSON, render.JSONL)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := refuseEmptyFlags(cmd, "parent"); err != nil {
			return err
		}
		var byParent *string
		if cmd.Flags().Changed("parent") {
			if err := checkSessionID("--parent", parent); err != nil {
				return err
			}
			byParent = &parent
		}
		p, err := out.printer(a, cmd)
		if err != nil {
			return err
		}
		return runLeaseLs(cmd.Context(), a, p, byParent)
	}
	return cmd
}

func runLeaseLs(ctx context.Context, a *app, p *render.Printer, parent *string) (err error) {
	s, err := a.openStoreReadOnly(ctx)
	if err != nil {
		return err
	}
	defer closeStore(s, &err)
	t, err := leases.Read(ctx, s, parent)
	if err != nil {
		return err
	}
	return p.Leases(t.Rows)
}
