package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// runDshWithin is runDsh for a command that might hang: it fails the test
// if dsh has not returned within the limit.
func runDshWithin(t *testing.T, limit time.Duration, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	type result struct {
		out, err string
		code     int
	}
	done := make(chan result, 1)
	go func() {
		var out, errOut bytes.Buffer
		c := run(context.Background(), args, strings.NewReader(""), &out, &errOut, time.Now)
		done <- result{out.String(), errOut.String(), c}
	}()
	select {
	case r := <-done:
		return r.out, r.err, r.code
	case <-time.After(limit):
		t.Fatalf("dsh %v did not return within %s", args, limit)
	}
	return "", "", 0
}

// Files a user names for dsh to read — --config, DSH_CONFIG, list --expect,
// --source-cache — are read only when they are regular files, and only up
// to a size: a FIFO, /dev/zero, a directory and an oversized file are
// refused at once with the reason, never read until memory or patience
// runs out.
func TestNamedFilesAreRegularAndBounded(t *testing.T) {
	home := isolateEnv(t)
	t.Setenv("DSH_DB", filepath.Join(home, "dsh.db"))
	if _, stderr, code := runDsh(t, "session", "new", "--id", "p"); code != 0 {
		t.Fatal(stderr)
	}
	fifo := filepath.Join(home, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatalf("mkfifo: %v", err)
	}
	big := filepath.Join(home, "big.yaml")
	if err := os.WriteFile(big, bytes.Repeat([]byte("# padding\n"), 110_000), 0o600); err != nil {
		t.Fatal(err)
	}
	corpus := filepath.Join(home, "corpus")
	writeFile(t, filepath.Join(corpus, "p.jsonl"), `{"type":"session","version":0,"id":"p","createdAt":1,"cwd":"/w","delegationDepth":0}`+"\n")
	bad := map[string]string{fifo: "not a regular file (a FIFO)", "/dev/zero": "not a regular file (a character device)", home: "not a regular file (a directory)"}

	for path, why := range bad {
		for _, c := range []struct {
			name string
			env  bool
			args []string
		}{
			{"--config", false, []string{"--config", path, "session", "ls"}},
			{"DSH_CONFIG", true, []string{"session", "ls"}},
			{"--expect", false, []string{"list", "--parent", "p", "--expect", path}},
		} {
			if c.env {
				t.Setenv(configEnv, path)
			}
			_, stderr, code := runDshWithin(t, 20*time.Second, c.args...)
			t.Setenv(configEnv, "")
			if code != exitUsage || !strings.Contains(stderr, why) || strings.Count(stderr, "\n") != 1 {
				t.Errorf("%s %s: exit %d, stderr %q; want %d naming %q", c.name, path, code, stderr, exitUsage, why)
			}
		}
		// A cache is never a verdict: the source is read without it, and
		// a warning says why. (A directory names DSH's per-record cache.)
		if path == home {
			continue
		}
		_, stderr, code := runDshWithin(t, 20*time.Second, "list", "--source", "jsonl:"+corpus, "--source-cache", path, "--parent", "p")
		if code != 0 || !strings.Contains(stderr, "dsh: warning: --source-cache: ") || !strings.Contains(stderr, why) {
			t.Errorf("--source-cache %s: exit %d, stderr %q", path, code, stderr)
		}
	}
	_, stderr, code := runDshWithin(t, 20*time.Second, "--config", big, "session", "ls")
	if code != exitUsage || !strings.Contains(stderr, "file too large (dsh reads at most 1048576 bytes)") {
		t.Errorf("--config of %d bytes: exit %d, stderr %q", 1_100_000, code, stderr)
	}
}

// start and resume with --message - wait for stdin; Ctrl-C (the context's
// cancellation) ends the wait at once with exit 130, and nothing is written.
func TestMessageFromStdinHonoursInterrupt(t *testing.T) {
	home := isolateEnv(t)
	t.Setenv("DSH_DB", filepath.Join(home, "dsh.db"))
	if _, stderr, code := runDsh(t, "session", "new", "--id", "p"); code != 0 {
		t.Fatal(stderr)
	}
	if _, stderr, code := runDsh(t, "start", "--parent", "p", "--id", "c", "--label", "l", "--message", "hi"); code != 0 {
		t.Fatal(stderr)
	}
	before, _, _ := runDsh(t, "session", "events", "c")
	for _, args := range [][]string{
		{"start", "--parent", "p", "--id", "c2", "--label", "l", "--message", "-"},
		{"resume", "c", "--parent", "p", "--message", "-"},
	} {
		stdin, w := io.Pipe() // a terminal nobody types into
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan int, 1)
		var stderr bytes.Buffer
		go func() { done <- run(ctx, args, stdin, io.Discard, &stderr, time.Now) }()
		time.Sleep(50 * time.Millisecond)
		cancel()
		select {
		case code := <-done:
			if code != exitCancelled || !strings.HasPrefix(stderr.String(), "dsh: CANCELLED: interrupted while reading the message from stdin") {
				t.Errorf("dsh %v: exit %d, stderr %q; want %d", args, code, stderr.String(), exitCancelled)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("dsh %v ignores the interrupt while waiting on stdin", args)
		}
		w.Close()
	}
	if _, _, code := runDsh(t, "session", "show", "c2"); code != exitUsage {
		t.Errorf("the interrupted start created c2 (show exit %d)", code)
	}
	if after, _, _ := runDsh(t, "session", "events", "c"); after != before {
		t.Error("the interrupted resume wrote to c")
	}
}
