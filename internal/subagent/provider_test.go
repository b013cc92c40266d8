package subagent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func runExec(t *testing.T, ctx context.Context, command, message string) (string, error) {
	t.Helper()
	p, r, err := ProviderConfig{Name: ProviderExec, Command: command}.open()
	if err != nil {
		t.Fatal(err)
	}
	if r.provider != ProviderExec || r.model != ProviderExec {
		t.Fatalf("route %+v, want exec/exec", r)
	}
	return p.Run(ctx, message)
}

func TestEchoProvider(t *testing.T) {
	p, r, err := ProviderConfig{Name: ProviderEcho, Model: "m"}.open()
	if err != nil || r != (route{provider: "echo", model: "m"}) {
		t.Fatalf("open: %+v, %v", r, err)
	}
	if got, err := p.Run(context.Background(), "a\nb"); err != nil || got != "echo: a\nb" {
		t.Errorf("echo = %q, %v", got, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := p.Run(ctx, "x"); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled echo = %v", err)
	}
}

func TestExecProviderReply(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name, command, message, want string
	}{
		{"stdin to stdout", "tr a-z A-Z", "hello", "HELLO"},
		{"trailing newlines go, inner ones stay", `printf 'a\n\nb\n\n\n'`, "", "a\n\nb"},
		{"empty", "true", "ignored", ""},
		{"not UTF-8", `printf '\377ok'`, "", "\uFFFDok"},
		{"the message is all of stdin", "wc -c | tr -d ' '", "12345", "5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := runExec(t, ctx, tt.command, tt.message)
			if err != nil || got != tt.want {
				t.Errorf("reply %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestExecProviderFailures(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name, command, want string
	}{
		{"non-zero exit quotes stderr", `echo partial; echo 'first' >&2; echo 'boom happened' >&2; exit 3`,
			"exec provider: command exited with status 3: boom happened"},
		{"silent failure", "exit 1", "exec provider: command exited with status 1"},
		{"killed by a signal", "kill -TERM $$", "exec provider: command ended: signal: terminated"},
		{"too much output", "head -c 9000000 /dev/zero", "exec provider: the command wrote more than 8388608 bytes to stdout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := runExec(t, ctx, tt.command, "")
			var f *TurnFailure
			if !errors.As(err, &f) || f.Code != FailureExec || f.Message != tt.want {
				t.Errorf("err = %#v, want EXEC_FAILED %q", err, tt.want)
			}
		})
	}
}

// processGone waits until pid has exited (and is at most a zombie waiting
// for init to reap it); it fails the test if that does not happen.
func processGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return
		}
		if stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat")); err == nil {
			if f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:])); len(f) > 0 && f[0] == "Z" {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	syscall.Kill(pid, syscall.SIGKILL)
	t.Fatalf("process %d still running", pid)
}

func readPid(t *testing.T, path string) int {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(path); err == nil && strings.HasSuffix(string(b), "\n") {
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatal(err)
			}
			return pid
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s never written", path)
	return 0
}

// Nothing the command starts outlives its turn: a background process that
// keeps stdout open is killed with the command's process group.
func TestExecProviderLeavesNoProcesses(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "bg.pid")
	got, err := runExec(t, context.Background(), "sleep 60 & echo $! > "+pidFile+"; echo ok", "")
	if err != nil || got != "ok" {
		t.Fatalf("reply %q, %v", got, err)
	}
	processGone(t, readPid(t, pidFile))
}

// Cancelling the turn kills the command at once.
func TestExecProviderCancel(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "sh.pid")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := runExec(t, ctx, "echo $$ > "+pidFile+"; sleep 60; echo late", "")
		done <- err
	}()
	pid := readPid(t, pidFile)
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled run = %v", err)
		}
	case <-time.After(turnDeadline):
		t.Fatalf("the cancelled command still runs after %s", turnDeadline)
	}
	processGone(t, pid)
}
