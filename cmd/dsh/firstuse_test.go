package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dsh-project/dsh/internal/pgtest"
)

// firstUseRound runs procs dsh processes with args at once on the new
// database db and returns how each that failed ended.
func firstUseRound(t *testing.T, db string, procs int, args ...string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		failures []string
	)
	for i := range procs {
		wg.Go(func() {
			cmd := exec.CommandContext(ctx, "dsh", append([]string{"--db", db}, args...)...)
			cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir(), "DSH_NO_PROGRESS=1")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Run(); err != nil {
				var exit *exec.ExitError
				if !errors.As(err, &exit) {
					t.Errorf("run dsh: %v", err)
				}
				mu.Lock()
				failures = append(failures, fmt.Sprintf("process %d: %v: %s", i, err, strings.TrimSpace(stderr.String())))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return failures
}

// Sixteen processes that are all the first users of a new database (dsh
// session new, and dsh demo with its fixed ids) all succeed: one creates
// and migrates the store, the others wait for it; of the demos one writes
// each session and the others find it. internal/torture's
// TestTortureFirstUse runs more rounds.
func TestFirstUseByConcurrentProcesses(t *testing.T) {
	isolateEnv(t)
	backends := map[string]func(t *testing.T) string{
		"sqlite": func(t *testing.T) string { return filepath.Join(t.TempDir(), "dsh.db") },
	}
	if _, err := pgtest.Probe(); err == nil || pgtest.Required() {
		backends["postgres"] = func(t *testing.T) string { return pgtest.NewDatabase(t) }
	}
	const procs, rounds = 16, 1
	for name, fresh := range backends {
		t.Run(name, func(t *testing.T) {
			for round := range rounds {
				for _, args := range [][]string{{"session", "new"}, {"demo", "-o", "json"}} {
					db := fresh(t)
					if failures := firstUseRound(t, db, procs, args...); len(failures) > 0 {
						t.Fatalf("round %d, dsh %v: %d of %d failed:\n%s", round, args, len(failures), procs, strings.Join(failures, "\n"))
					}
					if args[0] != "demo" {
						continue
					}
					stdout, stderr, code := runDsh(t, "--db", db, "session", "ls", "-o", "jsonl")
					if code != 0 || strings.Count(stdout, "\n") != 6 {
						t.Fatalf("after %d demos at once: exit %d, %q %s; want the 6 demo sessions once", procs, code, stdout, stderr)
					}
				}
			}
		})
	}
}
