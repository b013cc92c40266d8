package main

import (
	"context"
	"os"
	"path/filepath"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/render"
	"github.com/dsh-project/dsh/internal/session"
)

type sessionNewOptions struct {
	cwd    string
	preset string
	id     string
}

func newSessionNewCmd(a *app) *cobra.Command {
	var opts sessionNewOptions
	cmd := &cobra.Command{
		Use:   "new",
		Short: "Create an empty root session and print its id",
		Long: `Create a root session: format version 0, created now, no parent, no seed,
no delegation depth. Its working directory is --cwd (made absolute) or the
current directory, and must be an existing directory. The id is a new random
UUID unless --id names one.

` + exitStatusHelp(),
		Example: "  dsh session new\n  dsh session new --cwd ~/src/app --preset coder --id my-session",
		Args:    exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := refuseEmptyFlags(cmd, "id", "cwd", "preset"); err != nil {
				return err
			}
			return runSessionNew(cmd.Context(), a, opts)
		},
	}
	cmd.Flags().StringVar(&opts.cwd, "cwd", "", "working directory recorded in the header (default: the current directory)")
	cmd.Flags().StringVar(&opts.preset, "preset", "", "agent preset id recorded in the header")
	cmd.Flags().StringVar(&opts.id, "id", "", "session id (default: a new random UUID)")
	return cmd
}

func runSessionNew(ctx context.Context, a *app, opts sessionNewOptions) (err error) {
	h := session.Header{
		Version:   session.FormatVersion,
		ID:        opts.id,
		CreatedAt: a.now().UnixMilli(),
	}
	if h.ID == "" {
		h.ID = uuid.NewString()
	} else if err := checkSessionID("--id", h.ID); err != nil {
		return err
	}
	cwd, err := sessionCwd(opts.cwd)
	if err != nil {
		return err
	}
	h.Cwd = &cwd
	if opts.preset != "" {
		h.AgentPreset = &opts.preset
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
	if err := s.CreateSession(ctx, h, nil); err != nil {
		return err
	}
	return p.Line(h.ID)
}

// sessionCwd returns dir (default: the current directory) as an absolute
// path, checking that it is a directory.
func sessionCwd(dir string) (string, error) {
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", dsherr.Wrap(dsherr.InvalidInput, err, "current directory")
		}
		dir = wd
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", dsherr.Wrap(dsherr.InvalidInput, err, "--cwd %q", dir)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return "", dsherr.Wrap(dsherr.InvalidInput, err, "--cwd")
	}
	if !fi.IsDir() {
		return "", dsherr.New(dsherr.InvalidInput, "--cwd %s is not a directory", abs)
	}
	return abs, nil
}
