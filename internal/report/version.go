package report

import (
	"runtime"
	"runtime/debug"

	"github.com/dsh-project/dsh/internal/dshcompat"
	"github.com/dsh-project/dsh/internal/sqlitepersist"
)

// Version is what `dsh version` reports.
type Version struct {
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

// BuildVersion is this binary's version: what the Go toolchain stamped
// into it (the module version for go install …@version, (devel) for a
// local build, plus the VCS revision when built from a checkout), the
// schema it migrates to and the profiles it knows.
func BuildVersion() (Version, error) {
	r := Version{Version: "(unknown)", GoVersion: runtime.Version()}
	if info, ok := debug.ReadBuildInfo(); ok {
		r = FromBuildInfo(r, info)
	}
	schema, err := sqlitepersist.LatestSchemaVersion()
	if err != nil {
		return r, err
	}
	r.SchemaVersion = schema
	r.DSHCompat = dshcompat.Names()
	return r, nil
}

// FromBuildInfo fills r from the build information the Go toolchain
// recorded.
func FromBuildInfo(r Version, info *debug.BuildInfo) Version {
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
