package main

import (
	"context"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/dsh-project/dsh/internal/render"
	"github.com/dsh-project/dsh/internal/session"
)

type sessionForkOptions struct {
	id string
}

func newSessionForkCmd(a *app) *cobra.Command {
	var opts sessionForkOptions
	cmd := &cobra.Command{
		Use:   "fork ID",
		Short: "Create an ordinary fork of a session and print its id",
		Long: `Create an ordinary (non-subagent) fork of session ID, the way DSH forks a
session: the child's log starts with the parent's events up to and including
its last turn/end (none if no turn has ended), followed by a session/end-seed
marker. The child header
records the parent, the exact number of copied events (seedLength, 0 for an
empty prefix), and the parent's cwd and agent preset; it has no origin. The
parent is read, never repaired or changed.

` + exitStatusHelp(),
		Example: "  dsh session fork my-session\n  dsh session fork my-session --id my-session-retry",
		Args:    exactArgs("ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := refuseEmptyFlags(cmd, "id"); err != nil {
				return err
			}
			return runSessionFork(cmd.Context(), a, args[0], opts)
		},
	}
	cmd.Flags().StringVar(&opts.id, "id", "", "id of the fork (default: a new random UUID)")
	return cmd
}

func runSessionFork(ctx context.Context, a *app, parentID string, opts sessionForkOptions) (err error) {
	if err := checkSessionID("session fork", parentID); err != nil {
		return err
	}
	childID := opts.id
	if childID == "" {
		childID = uuid.NewString()
	} else if err := checkSessionID("--id", childID); err != nil {
		return err
	}
	p, err := a.printer(render.Table)
	if err != nil {
		return err
	}
	s, err := a.openStore(ctx)
	if err != nil {
		return err
	}
	defer closeStore(s, &err)
	parent, err := s.Inspect(ctx, parentID)
	if err != nil {
		return lookupError(parentID, err)
	}
	child, seed := session.Fork(parent.Header, parent.Events, childID, a.now().UnixMilli())
	if err := s.CreateSession(ctx, child, seed); err != nil {
		return err
	}
	return p.Line(childID)
}
