package torture

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"
)

// roleEnv makes the test binary play a helper process instead of running
// tests (see TestMain).
const roleEnv = "DSH_TORTURE_ROLE"

func TestMain(m *testing.M) {
	switch os.Getenv(roleEnv) {
	case "":
		code := m.Run()
		// The dsh binary is built once for every test and removed only
		// here, when none can still run it.
		if builtDir != "" {
			os.RemoveAll(builtDir)
		}
		os.Exit(code)
	case crashWriterRole:
		os.Exit(runCrashWriter())
	default:
		fmt.Fprintf(os.Stderr, "%s=%q: unknown role\n", roleEnv, os.Getenv(roleEnv))
		os.Exit(100)
	}
}

// requireTorture skips a torture test unless DSH_TORTURE is set: they take
// seconds to minutes and are run by scripts/torture (and CI's short run).
func requireTorture(t *testing.T) {
	t.Helper()
	if os.Getenv("DSH_TORTURE") == "" || testing.Short() {
		t.Skip("torture test: set DSH_TORTURE=1 to run it (scripts/torture does)")
	}
}

// envInt reads a positive count from the environment, def when unset.
func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// envDuration reads a positive duration from the environment, def when unset.
func envDuration(t *testing.T, name string, def time.Duration) time.Duration {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		t.Fatalf("%s=%q: want a positive duration", name, v)
	}
	return d
}

var (
	buildOnce sync.Once
	builtDir  string
	builtDsh  string
	buildErr  error
)

// dshBinary is the dsh program the tests run as separate processes:
// DSH_TORTURE_DSH when set (scripts/torture builds it once), else built
// here on first use into a directory TestMain removes after the last test.
func dshBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("DSH_TORTURE_DSH"); p != "" {
		return p
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "dsh-torture-bin")
		if err != nil {
			buildErr = err
			return
		}
		builtDir = dir
		builtDsh = filepath.Join(dir, "dsh")
		out, err := exec.Command("go", "build", "-o", builtDsh, "github.com/dsh-project/dsh/cmd/dsh").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtDsh
}

// dshResult is one finished dsh process.
type dshResult struct {
	stdout, stderr string
	code           int
}

func (r dshResult) String() string {
	return fmt.Sprintf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
}

// runDsh runs dsh against db with an isolated configuration.
func runDsh(ctx context.Context, bin, db string, args ...string) (dshResult, error) {
	cmd := exec.CommandContext(ctx, bin, append([]string{"--db", db}, args...)...)
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+filepath.Dir(db), "NO_COLOR=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := dshResult{stdout: stdout.String(), stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		res.code = exit.ExitCode()
		err = nil
	}
	return res, err
}
