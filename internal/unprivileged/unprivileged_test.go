package unprivileged

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// probeRole is the name under which this test binary, run by Program,
// reports who it runs as and whether it could write into $PROBE_DIR.
const probeRole = "unprivileged-probe"

func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == probeRole {
		err := os.WriteFile(filepath.Join(os.Getenv("PROBE_DIR"), "written"), nil, 0o644)
		fmt.Printf("%d %v\n", os.Geteuid(), err == nil)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// The subprocess runs as a user the directory's read-only mode binds: it
// cannot create a file there, whoever runs the test.
func TestCommandRunsWithoutPrivileges(t *testing.T) {
	u := Require(t)
	exe := Program(t, u, probeRole)
	dir := filepath.Join(t.TempDir(), "a", "b")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o700) })
	u.Reach(t, dir)

	cmd := u.Command(context.Background(), exe)
	cmd.Env = append(os.Environ(), "PROBE_DIR="+dir)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("probe: %v", err)
	}
	fields := strings.Fields(string(out))
	if len(fields) != 2 {
		t.Fatalf("probe printed %q", out)
	}
	uid, err := strconv.ParseUint(fields[0], 10, 32)
	if err != nil || uint32(uid) != u.UID {
		t.Errorf("probe ran as uid %s, want %d (%s)", fields[0], u.UID, u.Name)
	}
	if uid == 0 {
		t.Error("probe ran as root")
	}
	if fields[1] != "false" {
		t.Error("probe wrote into a 0555 directory: permissions were not enforced")
	}
	if _, err := os.Stat(filepath.Join(dir, "written")); !os.IsNotExist(err) {
		t.Errorf("probe's file exists (stat: %v)", err)
	}
}

// Reach opens a path to the user by search permission only, and never
// outside the temporary directory.
func TestReachGrantsSearchOnly(t *testing.T) {
	u := Require(t)
	if !u.Switch {
		t.Skipf("running as %s, not root: Reach has nothing to change", u.Name)
	}
	top := filepath.Join(t.TempDir(), "top")
	deep := filepath.Join(top, "x", "y")
	if err := os.MkdirAll(deep, 0o700); err != nil {
		t.Fatal(err)
	}
	u.Reach(t, deep)
	for _, d := range []string{top, filepath.Join(top, "x"), deep} {
		fi, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != 0o701 {
			t.Errorf("%s has mode %#o after Reach, want 0701", d, got)
		}
	}

	// A closed directory outside the temporary directory is reported, not
	// opened. The temporary directory is narrowed to a subdirectory so that
	// "outside" exists wherever the sources live (a clone under /tmp too)
	// and nothing is written beside the package's sources.
	base := t.TempDir()
	narrowed := filepath.Join(base, "tmp")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{narrowed, outside} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("TMPDIR", narrowed)
	if err := u.ReachDir(outside); err == nil || !strings.Contains(err.Error(), "outside the temporary directory") {
		t.Errorf("Reach outside the temporary directory: %v", err)
	}
	if fi, err := os.Stat(outside); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("Reach changed %s: %v %v", outside, fi.Mode(), err)
	}
}
