package main

import (
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dsh-project/dsh/internal/dshcompat"
	"github.com/dsh-project/dsh/internal/render"
	"github.com/dsh-project/dsh/internal/sqlitepersist"
)

type versionResult struct {
	Version string `json:"version"`
	Commit  string `json:"commit,omitempty"`
	// Modified is set when the binary was built from a checkout with
	// uncommitted changes (vcs.modified): Commit alone would then claim a
	// build nobody can reproduce.
	Modified  bool   `json:"modified,omitempty"`
	GoVersion string `json:"goVersion"`
	// SchemaVersion is the database schema this build migrates to.
	SchemaVersion int `json:"schemaVersion"`
	// DSHCompat names the --dsh-compat profiles this build knows, the
	// default first.
	DSHCompat []string `json:"dshCompat"`
}

// buildVersion reads the version the Go toolchain stamped into the binary:
// the module version for go install …@version, (devel) for a local build,
// plus the VCS revision when built from a checkout.
func buildVersion() versionResult {
	r := versionResult{Version: "(unknown)", GoVersion: runtime.Version()}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return r
	}
	return versionFromBuildInfo(r, info)
}

// versionFromBuildInfo fills r from the build information the Go toolchain
// recorded.
func versionFromBuildInfo(r versionResult, info *debug.BuildInfo) versionResult {
	if info.Main.Version != "" {
		r.Version = info.Main.Version
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			r.Commit = s.Value
		case "vcs.modified":
			r.Modified = s.Value == "true"
		}
	}
	return r
}

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
	r := buildVersion()
	schema, err := sqlitepersist.LatestSchemaVersion()
	if err != nil {
		return err
	}
	r.SchemaVersion = schema
	r.DSHCompat = dshcompat.Names()
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
