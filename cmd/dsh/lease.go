package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/leases"
	"github.com/dsh-project/dsh/internal/render"
	"github.com/dsh-project/dsh/internal/session"
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
parentSession); one naming neither a session nor the parent of one answers
empty with a warning on stderr, as list does. Read-only; a --source corpus has no leases, so there is no
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
	if parent != nil && len(t.Rows) == 0 {
		// As list warns: a parent with neither a session nor children is
		// most likely mistyped, and an empty answer should not read as
		// "nothing is running there".
		known, err := sessionOrChildren(ctx, s, *parent)
		if err != nil {
			return err
		}
		if !known {
			defer a.warn(fmt.Sprintf("no session with id %q and no children: no leases to list", *parent))
		}
	}
	return p.Leases(t.Rows)
}

// sessionOrChildren reports whether id names a session or is the parent of
// one.
func sessionOrChildren(ctx context.Context, s interface {
	backend.HeaderReader
	backend.ChildrenReader
}, id string) (bool, error) {
	_, err := s.Header(ctx, id)
	if err == nil {
		return true, nil
	}
	if !errors.Is(err, backend.ErrNotFound) {
		return false, err
	}
	found := false
	err = s.ChildrenOf(ctx, id, func(session.Header) error {
		found = true
		return errStopChildren
	})
	if errors.Is(err, errStopChildren) {
		err = nil
	}
	return found, err
}

// errStopChildren ends a ChildrenOf walk at its first child.
var errStopChildren = errors.New("stop at the first child")
