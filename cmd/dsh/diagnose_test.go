package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/projcache"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/subagent"
)

// seedDamagedChildren stores, under parent "p", a child with a torn tail,
// one whose holder crashed mid-turn (an expired lease and an open turn), and
// one whose checkpoint does not decode: every case where a careless reader
// would repair, expire or rewrite something.
func seedDamagedChildren(t *testing.T, db string) {
	t.Helper()
	s := openSeedStore(t, db)
	defer closeSeedStore(t, s)
	ctx := context.Background()
	cwd := t.TempDir()
	child := func(id string) session.Header {
		return session.Header{ID: id, CreatedAt: 1700000000000, Cwd: &cwd, ParentSession: strPtr("p"),
			Origin: strPtr(session.OriginSubagent), DelegationDepth: int64Ptr(1)}
	}
	described := []session.Event{
		event(session.TypeDescriptor, 0, `{"version":2,"mode":"continuable","provider":"spawn","label":"work"}`),
		event(session.TypeTurnStart, 1, `{"turn":1}`),
		event(session.TypeTurnEnd, 2, `{"turn":1,"reason":{"kind":"completed"}}`),
	}
	if err := s.CreateSession(ctx, session.Header{ID: "p", CreatedAt: 1700000000000, Cwd: &cwd}, nil); err != nil {
		t.Fatal(err)
	}
	tail := &backend.TornTail{FromSeq: 3, Reason: "truncated line", Raw: []byte(`{"type":"turn/st`)}
	if _, err := s.ImportSession(ctx, child("torn"), described, tail); err != nil {
		t.Fatal(err)
	}
	crashed := append(described[:3:3], event(session.TypeTurnStart, 3, `{"turn":2}`))
	if err := s.CreateSession(ctx, child("crashed"), crashed); err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(-time.Hour)
	holder := backend.LeaseHolder{ID: "dead-holder", PID: 99999, Host: "gone", TTL: time.Minute}
	if _, err := s.WithClock(func() time.Time { return past }).AcquireLease(ctx, "crashed", holder); err != nil {
		t.Fatal(err)
	}
	poisoned := child("poisoned")
	if err := s.CreateSession(ctx, poisoned, described); err != nil {
		t.Fatal(err)
	}
	reg := subagent.NewRegistry()
	fold := reg.NewFold()
	fold.Apply(described...)
	cp, err := fold.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	if err := projcache.NewCache(s, reg).Put(ctx, poisoned, fold.AsOfSeq(), cp); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Querier().ExecContext(ctx, `UPDATE projection_checkpoints SET rows = '{"subagent":' WHERE session_id = 'poisoned'`); err != nil {
		t.Fatal(err)
	}
}

func strPtr(s string) *string { return &s }
func int64Ptr(n int64) *int64 { return &n }

// diagnoseAll runs every way of auditing the damaged corpus and checks the
// findings a repair or expiry would have erased are reported each time.
func diagnoseAll(t *testing.T, run dshRunner) {
	t.Helper()
	for _, args := range [][]string{
		{"diagnose", "--fail-on", "warning"},
		{"diagnose", "--all", "-o", "json", "--fail-on", "warning"},
		{"diagnose", "--parent", "p", "--scope", "descendants", "-o", "jsonl", "--fail-on", "warning"},
		{"diagnose", "torn", "crashed", "poisoned", "--fail-on", "info"},
	} {
		stdout, stderr, code := run(t, args...)
		if code != exitFound {
			t.Errorf("dsh %v: exit %d, want %d (stderr %q)", args, code, exitFound, stderr)
		}
		for _, code := range []string{"LOG_TORN_TAIL", "LEASE_STALE", "TURN_INTERRUPTED", "CACHE_POISONED"} {
			if !strings.Contains(stdout, code) {
				t.Errorf("dsh %v: no %s in\n%s", args, code, stdout)
			}
		}
	}
}

// diagnose never repairs a torn tail, closes a turn, expires a lease or
// rewrites a checkpoint: the database and its WAL keep their bytes and
// modification times, and a second audit finds the same damage.
func TestDiagnoseLeavesDatabaseUntouched(t *testing.T) {
	home := isolateEnv(t)
	db := filepath.Join(home, "corpus", "dsh.db")
	t.Setenv("DSH_DB", db)
	seedDamagedChildren(t, db)
	files := []string{db, db + "-wal"}
	before := make([]fileState, len(files))
	for i, f := range files {
		before[i] = stateOf(t, f)
	}
	if !before[0].exists || !before[1].exists {
		t.Fatal("database or WAL missing after setup")
	}
	// Any write would show in the mtime, whatever the timestamp
	// granularity.
	time.Sleep(10 * time.Millisecond)
	diagnoseAll(t, runDsh)
	for i, f := range files {
		after := stateOf(t, f)
		switch {
		case !after.exists:
			t.Errorf("%s disappeared", filepath.Base(f))
		case !bytes.Equal(after.content, before[i].content):
			t.Errorf("%s bytes changed", filepath.Base(f))
		case !after.mtime.Equal(before[i].mtime):
			t.Errorf("%s modification time changed", filepath.Base(f))
		}
	}
	diagnoseAll(t, runDsh)
	// Nothing was created beside the database either (a probe file, a
	// journal): the directory holds the database, its WAL and its index.
	if got := dirNames(t, filepath.Dir(db)); strings.Join(got, " ") != "dsh.db dsh.db-shm dsh.db-wal" {
		t.Errorf("the database directory holds %q after diagnose", got)
	}
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	return names
}

// diagnose reads a database whose file and directory are read-only, run as
// a user the permissions bind (nobody, when the test runs as root): it
// audits as usual and creates nothing.
func TestDiagnoseReadOnlyFileAndDirectory(t *testing.T) {
	home := isolateEnv(t)
	dir := filepath.Join(home, "corpus")
	db := filepath.Join(dir, "dsh.db")
	t.Setenv("DSH_DB", db)
	seedDamagedChildren(t, db)
	run := unprivilegedDsh(t, dir)
	for _, f := range []string{db, db + "-wal", db + "-shm"} {
		if err := os.Chmod(f, 0o444); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o700) })
	diagnoseAll(t, run)
	if got := dirNames(t, dir); strings.Join(got, " ") != "dsh.db dsh.db-shm dsh.db-wal" {
		t.Errorf("the read-only directory holds %q after diagnose, want the database, WAL and index", got)
	}
}

// On a terminal stdout and stderr are one screen: the progress bar is
// cleared before each finding is printed, so no finding shares a line with
// the bar.
func TestDiagnoseProgressClearedBeforeFindings(t *testing.T) {
	home := isolateEnv(t)
	db := filepath.Join(home, "dsh.db")
	t.Setenv("DSH_DB", db)
	seedDamagedChildren(t, db)
	var screen bytes.Buffer
	code := run(context.Background(), []string{"diagnose", "--progress", "--fail-on", "info"}, strings.NewReader(""), &screen, &screen, time.Now)
	if code != exitFound {
		t.Fatalf("exit %d: %s", code, screen.String())
	}
	findings := 0
	for _, line := range strings.Split(screen.String(), "\n") {
		// What a terminal shows of the line: the text after the last
		// carriage return.
		shown := line[strings.LastIndex(line, "\r")+1:]
		for _, sev := range []string{"error ", "warning ", "info "} {
			if i := strings.Index(shown, sev); i >= 0 {
				findings++
				if i != 0 {
					t.Errorf("finding shares its line with the bar: %q", shown)
				}
			}
		}
	}
	if findings == 0 {
		t.Fatalf("no findings printed: %q", screen.String())
	}
}

// --fail-on at each severity, through the command: a session whose worst
// finding has severity S fails `diagnose ID --fail-on T` (exit 1, the
// summary naming T) exactly when S is at or above T, and passes (exit 0)
// otherwise. The three sessions' worst findings are an info, a warning and
// an error, as the JSON report gives them.
func TestDiagnoseFailOnEachSeverity(t *testing.T) {
	home := isolateEnv(t)
	db := filepath.Join(home, "dsh.db")
	t.Setenv("DSH_DB", db)
	s := openSeedStore(t, db)
	ctx := context.Background()
	cwd := t.TempDir()
	turn := []session.Event{
		event(session.TypeTurnStart, 0, `{"turn":1}`),
		event(session.TypeTurnEnd, 1, `{"turn":1,"reason":{"kind":"completed"}}`),
	}
	header := func(id string) session.Header { return session.Header{ID: id, CreatedAt: 1700000000000, Cwd: &cwd} }
	if err := s.CreateSession(ctx, header("open-turn"), append(turn[:2:2], event(session.TypeTurnStart, 2, `{"turn":2}`))); err != nil {
		t.Fatal(err)
	}
	tail := &backend.TornTail{FromSeq: 2, Reason: "truncated line", Raw: []byte(`{"type":"turn/st`)}
	if _, err := s.ImportSession(ctx, header("torn"), turn, tail); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateSession(ctx, header("gap"), append(turn[:2:2], event(session.TypeTurnStart, 2, `{"turn":2}`),
		event(session.TypeTurnEnd, 3, `{"turn":2,"reason":{"kind":"completed"}}`))); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Querier().ExecContext(ctx, `DELETE FROM events WHERE session_id = 'gap' AND seq = 1`); err != nil {
		t.Fatal(err)
	}
	closeSeedStore(t, s)

	severities := []string{"info", "warning", "error"}
	rank := map[string]int{"info": 0, "warning": 1, "error": 2}
	worstSeen := map[string]bool{}
	for _, id := range []string{"open-turn", "torn", "gap"} {
		out, stderr, _ := runDsh(t, "diagnose", id, "-o", "json", "--fail-on", "error")
		var doc struct {
			Sessions []struct {
				Findings []struct{ Severity string }
			}
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Sessions) != 1 {
			t.Fatalf("diagnose %s -o json: %v\n%s%s", id, err, out, stderr)
		}
		worst := -1
		for _, f := range doc.Sessions[0].Findings {
			worst = max(worst, rank[f.Severity])
		}
		if worst < 0 {
			t.Fatalf("diagnose %s reports no finding", id)
		}
		worstSeen[severities[worst]] = true
		for _, threshold := range severities {
			_, stderr, code := runDsh(t, "diagnose", id, "--fail-on", threshold)
			fails := worst >= rank[threshold]
			switch {
			case fails && (code != exitFound || !strings.Contains(stderr, "at or above "+threshold)):
				t.Errorf("diagnose %s (worst %s) --fail-on %s: exit %d, stderr %q; want exit %d naming the threshold", id, severities[worst], threshold, code, stderr, exitFound)
			case !fails && code != exitOK:
				t.Errorf("diagnose %s (worst %s) --fail-on %s: exit %d, stderr %q; want 0", id, severities[worst], threshold, code, stderr)
			}
		}
	}
	if len(worstSeen) != 3 {
		t.Errorf("the sessions' worst findings cover %v, want each severity", worstSeen)
	}
}
