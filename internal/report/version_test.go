package report

import (
	"runtime/debug"
	"testing"
)

func TestVersionFromBuildInfo(t *testing.T) {
	info := &debug.BuildInfo{
		Main: debug.Module{Version: "v1.2.3"},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "abc123"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	r := FromBuildInfo(Version{Version: "(unknown)"}, info)
	if r.Version != "v1.2.3" || r.Commit != "abc123" || !r.Modified {
		t.Errorf("dirty build: %+v", r)
	}
	info.Settings[1].Value = "false"
	if r := FromBuildInfo(Version{}, info); r.Modified {
		t.Errorf("clean build reported modified: %+v", r)
	}
}
