package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/render"
	"github.com/dsh-project/dsh/internal/session"
)

func TestClassify(t *testing.T) {
	tests := []struct {
		name     string
		err      error
		started  bool
		wantCode dsherr.Code
		wantExit int
	}{
		{"success", nil, true, "", 0},
		{"cancellation wrapped as a store error", dsherr.Wrap(dsherr.StoreUnavailable, context.Canceled, "read"), true, dsherr.Cancelled, 130},
		{"cancellation bare", fmt.Errorf("load: %w", context.Canceled), true, dsherr.Cancelled, 130},
		{"missing database", fmt.Errorf("open: %w", backend.ErrNoDatabase), true, dsherr.StoreUnavailable, 3},
		{"unknown id", &dsherr.Error{Code: dsherr.NotFound, Msg: "x", Err: backend.ErrNotFound}, true, dsherr.NotFound, 2},
		{"unknown id uncoded", fmt.Errorf("header: %w", backend.ErrNotFound), true, dsherr.NotFound, 2},
		{"duplicate uncoded", fmt.Errorf("create: %w", backend.ErrDuplicate), true, dsherr.AlreadyExists, 2},
		{"usage", dsherr.New(dsherr.Usage, "bad"), false, dsherr.Usage, 2},
		{"invalid input", dsherr.New(dsherr.InvalidInput, "bad"), true, dsherr.InvalidInput, 2},
		{"not resumable", dsherr.New(dsherr.NotResumable, "x"), true, dsherr.NotResumable, 2},
		{"unauthorized", dsherr.New(dsherr.Unauthorized, "x"), true, dsherr.Unauthorized, 2},
		{"depth", dsherr.New(dsherr.DepthExceeded, "x"), true, dsherr.DepthExceeded, 2},
		{"lease conflict", dsherr.New(dsherr.NotDelivered, "x"), true, dsherr.NotDelivered, 4},
		{"stale writer", dsherr.New(dsherr.StaleWriter, "x"), true, dsherr.StaleWriter, 4},
		{"store unavailable", dsherr.New(dsherr.StoreUnavailable, "x"), true, dsherr.StoreUnavailable, 3},
		{"validation failure", fmt.Errorf("inspect: %w", &session.ValidationError{Seq: 3, Rule: "seq-contiguous", Msg: "m"}), true, dsherr.InvalidLog, 3},
		{"outermost code wins", dsherr.Wrap(dsherr.Unauthorized, dsherr.New(dsherr.StoreUnavailable, "inner"), "outer"), true, dsherr.Unauthorized, 2},
		{"uncoded before a command ran is cobra's parsing", errors.New(`unknown shorthand flag: 'x' in -x`), false, dsherr.Usage, 2},
		{"uncoded inside a command", errors.New("surprise"), true, dsherr.Internal, 3},
		{"a code this build does not map", &dsherr.Error{Code: "FUTURE_CODE", Msg: "x"}, true, "FUTURE_CODE", 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, exit := classify(tt.err, tt.started)
			if code != tt.wantCode || exit != tt.wantExit {
				t.Errorf("classify = %s/%d, want %s/%d", code, exit, tt.wantCode, tt.wantExit)
			}
		})
	}
}

func TestEveryCodeHasAnExitStatus(t *testing.T) {
	for _, c := range []dsherr.Code{
		dsherr.Cancelled, dsherr.NotResumable, dsherr.Unauthorized, dsherr.DuplicateChild,
		dsherr.DepthExceeded, dsherr.DescriptorMalformed, dsherr.NotDelivered, dsherr.StaleWriter,
		dsherr.InvalidLog, dsherr.NotFound, dsherr.Usage, dsherr.InvalidInput, dsherr.StoreUnavailable,
		dsherr.UnsupportedFormat, dsherr.Internal,
	} {
		if _, ok := exitCodes[c]; !ok {
			t.Errorf("code %s has no exit status", c)
		}
	}
}

func TestErrorReport(t *testing.T) {
	err := dsherr.New(dsherr.NotFound, "no session with id %q", "a\x1b[2Jb\nc")
	for _, f := range []render.Format{render.Table, render.JSON} {
		var stdout, stderr bytes.Buffer
		a := &app{stdout: &stdout, stderr: &stderr, output: f, started: true}
		if got := a.exit(err); got != exitUsage {
			t.Errorf("%s: exit %d", f, got)
		}
		if want := `dsh: NOT_FOUND: no session with id "a\x1b[2Jb\nc"` + "\n"; stderr.String() != want {
			t.Errorf("%s: stderr %q, want %q", f, stderr.String(), want)
		}
		if f != render.JSON {
			if stdout.Len() != 0 {
				t.Errorf("%s: stdout %q, want nothing", f, stdout.String())
			}
			continue
		}
		var doc struct {
			Error struct{ Code, Message string }
		}
		if err := json.Unmarshal(stdout.Bytes(), &doc); err != nil {
			t.Fatalf("stdout %q: %v", stdout.String(), err)
		}
		if doc.Error.Code != "NOT_FOUND" || doc.Error.Message != err.Error() {
			t.Errorf("JSON error = %+v", doc.Error)
		}
	}
}

// A command interrupted before it finishes exits 130 with CANCELLED.
func TestCancelledCommand(t *testing.T) {
	home := isolateEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var stdout, stderr bytes.Buffer
	code := run(ctx, []string{"--db", home + "/dsh.db", "init"}, strings.NewReader(""), &stdout, &stderr, time.Now)
	if code != exitCancelled || !strings.HasPrefix(stderr.String(), "dsh: CANCELLED: ") || strings.Count(stderr.String(), "\n") != 1 {
		t.Errorf("exit %d, stderr %q", code, stderr.String())
	}
}

// A failed check is exit 1 with its message on stderr, and no error code or
// JSON error document: the command's output is the answer.
func TestFailedCheck(t *testing.T) {
	var stdout, stderr bytes.Buffer
	a := &app{stdout: &stdout, stderr: &stderr, output: render.JSON, started: true}
	err := fmt.Errorf("diagnose: %w", failedCheck("%d findings at or above %s", 2, "error"))
	if got := a.exit(err); got != exitFound {
		t.Errorf("exit %d, want %d", got, exitFound)
	}
	if stderr.String() != "dsh: 2 findings at or above error\n" || stdout.Len() != 0 {
		t.Errorf("stderr %q, stdout %q", stderr.String(), stdout.String())
	}
}

func TestExitStatusHelpInStatusOrder(t *testing.T) {
	got := exitStatusHelp(exitLine{exitConflict, "held elsewhere"}, exitLine{exitFound, "findings"}, exitLine{exitStore, "and the source"})
	var statuses []string
	for line := range strings.Lines(got) {
		if f := strings.Fields(line); len(f) > 1 && strings.HasPrefix(line, "  ") && !strings.HasPrefix(line, "   ") {
			statuses = append(statuses, f[0])
		}
	}
	if want := "0 1 2 3 4 130"; strings.Join(statuses, " ") != want {
		t.Errorf("statuses %v, want %s in\n%s", statuses, want, got)
	}
	if !strings.Contains(got, "\n       and the source\n") {
		t.Errorf("a command's line for a shared status does not continue it:\n%s", got)
	}
}

// Only what cannot be stored intact is refused as an id: bytes that are not
// UTF-8 and NUL (which argv cannot carry, so the check is called directly).
func TestCheckSessionIDRefusesOnlyWhatCannotBeStored(t *testing.T) {
	for _, id := range []string{" zeta", "trail ", "a\tb", "kid\u202e", "\x1b[2J", "⚙"} {
		if err := checkSessionID("id", id); err != nil {
			t.Errorf("%q refused: %v", id, err)
		}
	}
	for id, want := range map[string]string{
		"":       "id: empty session id",
		"a\xffb": `id: session id "a\xffb" is not valid UTF-8 (DSH ids are Unicode text)`,
		"a\x00b": `id: session id "a\x00b" contains NUL, which the store cannot keep intact`,
	} {
		err := checkSessionID("id", id)
		if dsherr.CodeOf(err) != dsherr.InvalidInput || err.Error() != want {
			t.Errorf("%q: %v, want INVALID_INPUT %q", id, err, want)
		}
	}
	isolateEnv(t)
	_, stderr, code := runDsh(t, "session", "show", "a\xffb")
	if code != exitUsage || !strings.Contains(stderr, "is not valid UTF-8") {
		t.Errorf("session show of a non-UTF-8 id: exit %d, %q", code, stderr)
	}
}
