package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dsh-project/dsh/internal/unprivileged"
)

// runDsh runs dsh in-process and returns its output and exit status.
func runDsh(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	if testBeforeRun != nil {
		testBeforeRun()
	}
	var out, errOut bytes.Buffer
	code = run(context.Background(), args, strings.NewReader(""), &out, &errOut, time.Now)
	return out.String(), errOut.String(), code
}

// testBeforeRun, when set, runs before each runDsh (the damage catalogue
// lays out again what a command removed).
var testBeforeRun func()

// isolateEnv points every default path into a temp dir and clears the
// variables dsh reads, so a test sees only what it sets itself.
func isolateEnv(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	for _, k := range []string{"XDG_CONFIG_HOME", "XDG_DATA_HOME", "NO_COLOR", configEnv} {
		t.Setenv(k, "")
	}
	var c config
	for _, s := range c.settings("") {
		t.Setenv(s.envVar(), "")
	}
	return home
}

// dshRunner runs dsh with args and returns its output and exit status:
// runDsh in-process, or unprivilegedDsh's subprocess.
type dshRunner func(t *testing.T, args ...string) (stdout, stderr string, code int)

// unprivilegedDsh returns a runner that executes dsh as a separate process
// under an unprivileged user (nobody when the test runs as root, as in CI),
// with the test's environment, so that file permissions bind it. Each of
// reach is made reachable by that user. The test is skipped, with the
// reason, where no such user can be had.
func unprivilegedDsh(t *testing.T, reach ...string) dshRunner {
	t.Helper()
	u := unprivileged.Require(t)
	exe := unprivileged.Program(t, u, "dsh")
	for _, p := range reach {
		u.Reach(t, p)
	}
	return func(t *testing.T, args ...string) (string, string, int) {
		t.Helper()
		cmd := u.Command(context.Background(), exe, args...)
		cmd.Env = os.Environ()
		cmd.Dir = filepath.Dir(exe)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		var exit *exec.ExitError
		switch {
		case err == nil:
			return out.String(), errOut.String(), 0
		case errors.As(err, &exit):
			return out.String(), errOut.String(), exit.ExitCode()
		}
		t.Fatalf("run dsh as %s: %v", u.Name, err)
		return "", "", 0
	}
}
