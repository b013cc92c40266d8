package main

import (
	"github.com/spf13/cobra"

	"github.com/dsh-project/dsh/internal/render"
)

type initResult struct {
	Path          string `json:"path"`
	SchemaVersion int    `json:"schemaVersion"`
}

func newInitCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Create or migrate the database",
		Long: `Create the database (a 0600 file in a 0700 directory) or apply the migrations
it lacks, and print its path and schema version. Every command that writes
does this on first use too; init makes it explicit. A migration that indexes
the sessions already stored (0013, the search index) draws a progress bar on
stderr when it is a terminal (--progress: always).

` + exitStatusHelp(),
		Example: "  dsh init\n  dsh --db ./corpus.db init -o json",
		Args:    exactArgs(),
	}
	out := addOutputFlag(cmd, render.Table, render.TSV, render.JSON)
	cmd.Flags().BoolVar(&a.migration.force, "progress", false, "draw a progress bar for a migration's back-fill even when stderr is not a terminal")
	cmd.RunE = func(cmd *cobra.Command, _ []string) (err error) {
		p, err := out.printer(a, cmd)
		if err != nil {
			return err
		}
		s, err := a.openStore(cmd.Context())
		if err != nil {
			return err
		}
		defer closeStore(s, &err)
		version, err := s.SchemaVersion(cmd.Context())
		if err != nil {
			return err
		}
		r := initResult{Path: s.Path(), SchemaVersion: version}
		return p.Record(r, []render.Field{
			{Name: "path", Value: r.Path},
			{Name: "schemaVersion", Value: itoa(r.SchemaVersion)},
		})
	}
	return cmd
}
