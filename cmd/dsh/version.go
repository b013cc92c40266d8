package main

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/dsh-project/dsh/internal/render"
	"github.com/dsh-project/dsh/internal/report"
)

func newVersionCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "version",
		Short:   "Print dsh's version",
		Long:    "Print the version, VCS commit (when known; \"modified\" when built with\nuncommitted changes) and Go version dsh was built with,\nthe database schema version it creates and migrates to, and the\n--dsh-compat profiles it knows (the default first).\n\n" + exitStatusHelp(),
		Example: "  dsh version\n  dsh version -o json",
		Args:    exactArgs(),
	}
	out := addOutputFlag(cmd, render.Table, render.TSV, render.JSON)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		p, err := out.printer(a, cmd)
		if err != nil {
			return err
		}
		return printVersion(p)
	}
	return cmd
}

// printVersion prints what `dsh version` and `dsh --version` print.
func printVersion(p *render.Printer) error {
	r, err := report.BuildVersion()
	if err != nil {
		return err
	}
	fields := []render.Field{{Name: "version", Value: r.Version}}
	if r.Commit != "" {
		fields = append(fields, render.Field{Name: "commit", Value: r.Commit})
	}
	if r.Modified {
		fields = append(fields, render.Field{Name: "modified", Value: "true"})
	}
	fields = append(fields,
		render.Field{Name: "go", Value: r.GoVersion},
		render.Field{Name: "schemaVersion", Value: itoa(r.SchemaVersion)},
		render.Field{Name: "dshCompat", Value: strings.Join(r.DSHCompat, ",")})
	return p.Record(r, fields)
}
