package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/sqlitepersist"
)

// fileState is what a read must leave alone: a file's presence, bytes and
// modification time.
type fileState struct {
	exists  bool
	content []byte
	mtime   time.Time
}

func stateOf(t *testing.T, path string) fileState {
	t.Helper()
	fi, err := os.Stat(path)
	if os.IsNotExist(err) {
		return fileState{}
	}
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return fileState{exists: true, content: b, mtime: fi.ModTime()}
}

func event(typ string, seq int64, data string) session.Event {
	return session.Event{Type: typ, Seq: seq, Time: 1700000000000 + seq, Data: json.RawMessage(data)}
}

// openSeedStore opens (creating) the database a test seeds through dsh's own
// write paths; closeSeedStore closes it, failing the test if that fails.
func openSeedStore(t *testing.T, db string) *sqlitepersist.Store {
	t.Helper()
	s, err := sqlitepersist.Open(context.Background(), db, sqlitepersist.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func closeSeedStore(t *testing.T, s *sqlitepersist.Store) {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// A corpus with a balanced session, one with an interrupted turn and one
// with a torn tail: the cases where a careless read would repair.
func seedReadOnlyCorpus(t *testing.T, db string) {
	t.Helper()
	s := openSeedStore(t, db)
	defer closeSeedStore(t, s)
	ctx := context.Background()
	cwd := t.TempDir()
	header := func(id string) session.Header {
		return session.Header{ID: id, CreatedAt: 1700000000000, Cwd: &cwd}
	}
	turn := []session.Event{
		event(session.TypeTurnStart, 0, `{"turn":1}`),
		event(session.TypeTurnEnd, 1, `{"turn":1,"reason":{"kind":"completed"}}`),
	}
	if err := s.CreateSession(ctx, header("balanced"), turn); err != nil {
		t.Fatal(err)
	}
	open := append(turn[:2:2], event(session.TypeTurnStart, 2, `{"turn":2}`))
	if err := s.CreateSession(ctx, header("interrupted"), open); err != nil {
		t.Fatal(err)
	}
	// Subagent children of "balanced": one served by a cold read, one
	// whose log has a torn tail (a listing must not repair it either).
	child := func(id string) session.Header {
		h := header(id)
		h.ParentSession, h.Origin, h.DelegationDepth = strPtr("balanced"), strPtr(session.OriginSubagent), int64Ptr(1)
		return h
	}
	described := []session.Event{
		event(session.TypeDescriptor, 0, `{"version":2,"mode":"continuable","provider":"spawn","label":"kept"}`),
		event(session.TypeEndSeed, 1, `{}`),
	}
	if err := s.CreateSession(ctx, child("child"), described); err != nil {
		t.Fatal(err)
	}
	childTail := &backend.TornTail{FromSeq: 2, Reason: "truncated line", Raw: []byte(`{"type":"turn/st`)}
	if _, err := s.ImportSession(ctx, child("torn-child"), described, childTail); err != nil {
		t.Fatal(err)
	}
	tail := &backend.TornTail{FromSeq: 2, Reason: "truncated line", Raw: []byte(`{"type":"turn/st`)}
	if _, err := s.ImportSession(ctx, header("torn"), turn, tail); err != nil {
		t.Fatal(err)
	}
}

// readCommands is every read command over the corpus seedReadOnlyCorpus
// writes (and its fork "fork"); export writes under exportDir only.
func readCommands(exportDir string) [][]string {
	reads := [][]string{
		{"session", "ls"},
		{"session", "ls", "-o", "json"},
		{"session", "ls", "-o", "jsonl"},
		{"config"},
		{"version"},
		{"session", "show", "no-such-session"},
		{"session", "events", "no-such-session"},
		{"list", "--parent", "balanced"},
		{"list", "--parent", "balanced", "--scope", "descendants", "-o", "json"},
		{"list", "--parent", "no-such-session", "--strict"},
		{"list", "--parent", "balanced", "-o", "wide"},
		{"lease", "ls"},
		{"lease", "ls", "--parent", "balanced", "-o", "json"},
		{"usage", "balanced"},
		{"usage", "--parent", "balanced", "-o", "json"},
		{"search", "hello OR turn*"},
		{"search", "x", "--parent", "balanced", "-o", "json"},
		{"cache", "stats"},
		{"cache", "verify", "--all"},
		{"export", "--to", exportDir, "--all"},
	}
	for _, id := range []string{"balanced", "interrupted", "torn", "fork"} {
		reads = append(reads,
			[]string{"session", "show", id},
			[]string{"session", "show", id, "-o", "json"},
			[]string{"session", "events", id},
			[]string{"session", "events", id, "--from", "1"},
			[]string{"session", "events", id, "--type", session.TypeTurnEnd},
		)
	}
	return reads
}

// Read commands never create, migrate or modify the database: the file, its
// WAL and the WAL's index keep their bytes and modification times.
func TestReadCommandsLeaveDatabaseUntouched(t *testing.T) {
	home := isolateEnv(t)
	db := filepath.Join(home, "corpus", "dsh.db")
	t.Setenv("DSH_DB", db)
	seedReadOnlyCorpus(t, db)
	if _, stderr, code := runDsh(t, "session", "fork", "balanced", "--id", "fork"); code != 0 {
		t.Fatalf("fork: exit %d: %s", code, stderr)
	}

	reads := readCommands(filepath.Join(home, "export"))
	files := []string{db, db + "-wal", db + "-shm"}
	before := make([]fileState, len(files))
	for i, f := range files {
		before[i] = stateOf(t, f)
	}
	if !before[0].exists {
		t.Fatal("database missing after setup")
	}
	// Let any modification show up in the mtime, whatever the file
	// system's timestamp granularity.
	time.Sleep(10 * time.Millisecond)
	for _, args := range reads {
		runDsh(t, args...)
		for i, f := range files {
			after := stateOf(t, f)
			switch {
			case after.exists != before[i].exists:
				t.Errorf("dsh %v: %s existence changed: %v → %v", args, filepath.Base(f), before[i].exists, after.exists)
			case !bytes.Equal(after.content, before[i].content):
				t.Errorf("dsh %v: %s bytes changed", args, filepath.Base(f))
			case !after.mtime.Equal(before[i].mtime):
				t.Errorf("dsh %v: %s modification time changed", args, filepath.Base(f))
			}
		}
	}

	// The reads saw the torn tail and the open turn, and left both for a
	// resume to repair.
	stdout, _, _ := runDsh(t, "session", "show", "torn", "-o", "json")
	if !bytes.Contains([]byte(stdout), []byte(`"tornTail":{"fromSeq":2`)) {
		t.Errorf("show torn: %s", stdout)
	}
	stdout, _, _ = runDsh(t, "session", "show", "interrupted", "-o", "json")
	if !bytes.Contains([]byte(stdout), []byte(`"openTurn":true`)) {
		t.Errorf("show interrupted: %s", stdout)
	}
	// The listing read both children's logs (no checkpoints were written).
	stdout, _, _ = runDsh(t, "list", "--parent", "balanced", "-o", "json")
	want := `[{"kind":"child","id":"child","mode":"continuable","label":"kept","activity":"inactive","hasChildren":false},` +
		`{"kind":"child","id":"torn-child","mode":"continuable","label":"kept","activity":"inactive","hasChildren":false}]` + "\n"
	if stdout != want {
		t.Errorf("list: %s, want %s", stdout, want)
	}
}

// A read command given a path with no database creates nothing there.
func TestReadCommandOnMissingDatabaseCreatesNothing(t *testing.T) {
	home := isolateEnv(t)
	dir := filepath.Join(home, "nothing-here")
	for _, args := range [][]string{{"session", "ls"}, {"session", "show", "x"}, {"session", "events", "x"}} {
		_, stderr, code := runDsh(t, append([]string{"--db", filepath.Join(dir, "dsh.db")}, args...)...)
		if code != exitStore {
			t.Errorf("dsh %v: exit %d (%s), want %d", args, code, stderr, exitStore)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("read commands created %s (stat: %v)", dir, err)
	}
}

// A database archived without its -wal and -shm, read-only in a read-only
// directory: every read command works and creates nothing beside it, run as
// a user the modes bind (nobody under root) and as the test's own user
// (root in CI, whom the modes do not stop).
func TestReadCommandsOnArchivedReadOnlyDatabase(t *testing.T) {
	home := isolateEnv(t)
	live := filepath.Join(home, "live", "dsh.db")
	t.Setenv("DSH_DB", live)
	seedReadOnlyCorpus(t, live)
	if _, stderr, code := runDsh(t, "session", "fork", "balanced", "--id", "fork"); code != 0 {
		t.Fatalf("fork: exit %d: %s", code, stderr)
	}
	// Closing the last connection checkpointed the WAL into the file: the
	// file alone is the whole database, as a backup copies it.
	dir := filepath.Join(home, "archive")
	db := filepath.Join(dir, "dsh.db")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(live)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(db, b, 0o444); err != nil {
		t.Fatal(err)
	}
	exportDir := filepath.Join(home, "export")
	if err := os.MkdirAll(exportDir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(exportDir, 0o777); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DSH_DB", db)
	want, _, code := runDsh(t, "list", "--parent", "balanced", "-o", "json")
	if code != 0 || !strings.Contains(want, `"id":"torn-child"`) {
		t.Fatalf("list of the archive: exit %d: %s", code, want)
	}
	unprivileged := unprivilegedDsh(t, dir, exportDir)
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o755) })
	before := stateOf(t, db)
	for _, runner := range []struct {
		name string
		run  dshRunner
	}{{"unprivileged", unprivileged}, {"own user", runDsh}} {
		for _, args := range readCommands(filepath.Join(exportDir, strings.ReplaceAll(runner.name, " ", "-"))) {
			stdout, stderr, code := runner.run(t, args...)
			wantCode := 0
			if strings.Contains(strings.Join(args, " "), "no-such-session") {
				wantCode = exitUsage
			}
			if code != wantCode {
				t.Errorf("%s: dsh %v: exit %d, want %d: %s", runner.name, args, code, wantCode, stderr)
			}
			if strings.Contains(stderr, "readonly") || strings.Contains(stdout, "readonly") {
				t.Errorf("%s: dsh %v: %s%s", runner.name, args, stdout, stderr)
			}
			if got := dirNames(t, dir); strings.Join(got, " ") != "dsh.db" {
				t.Fatalf("%s: dsh %v left %q in the archive directory", runner.name, args, got)
			}
		}
		got, _, _ := runner.run(t, "list", "--parent", "balanced", "-o", "json")
		if got != want {
			t.Errorf("%s: list %s, want %s", runner.name, got, want)
		}
	}
	if after := stateOf(t, db); !bytes.Equal(after.content, before.content) || !after.mtime.Equal(before.mtime) {
		t.Error("the archived database changed")
	}
}

// A dsh database read as --source dsh: is left as --db leaves it: every
// read command that takes --source, over the same corpus, keeps the file,
// its WAL and the WAL's index byte for byte with their modification times,
// and creates no configured database either.
func TestReadCommandsLeaveDSHSourceUntouched(t *testing.T) {
	home := isolateEnv(t)
	db := filepath.Join(home, "corpus", "dsh.db")
	t.Setenv("DSH_DB", db)
	seedReadOnlyCorpus(t, db)
	if _, stderr, code := runDsh(t, "session", "fork", "balanced", "--id", "fork"); code != 0 {
		t.Fatalf("fork: exit %d: %s", code, stderr)
	}
	configured := filepath.Join(home, "configured", "dsh.db")
	t.Setenv("DSH_DB", configured)
	var reads [][]string
	for _, args := range append(readCommands(filepath.Join(home, "export")),
		[]string{"diagnose", "--all"}, []string{"diagnose", "--parent", "balanced", "-o", "json"}) {
		if args[0] == "list" || args[0] == "diagnose" || len(args) > 1 && args[0] == "session" && (args[1] == "show" || args[1] == "events") {
			reads = append(reads, append(slices.Clone(args), "--source", "dsh:"+db))
		}
	}
	files := []string{db, db + "-wal", db + "-shm"}
	before := make([]fileState, len(files))
	for i, f := range files {
		before[i] = stateOf(t, f)
	}
	time.Sleep(10 * time.Millisecond)
	for _, args := range reads {
		_, stderr, code := runDsh(t, args...)
		if code > 1 && !strings.Contains(strings.Join(args, " "), "no-such-session") {
			t.Errorf("dsh %v: exit %d: %s", args, code, stderr)
		}
		for i, f := range files {
			after := stateOf(t, f)
			switch {
			case after.exists != before[i].exists:
				t.Errorf("dsh %v: %s existence changed: %v → %v", args, filepath.Base(f), before[i].exists, after.exists)
			case !bytes.Equal(after.content, before[i].content):
				t.Errorf("dsh %v: %s bytes changed", args, filepath.Base(f))
			case !after.mtime.Equal(before[i].mtime):
				t.Errorf("dsh %v: %s modification time changed", args, filepath.Base(f))
			}
		}
	}
	if len(reads) < 20 {
		t.Errorf("only %d reads ran", len(reads))
	}
	if _, err := os.Stat(filepath.Dir(configured)); !os.IsNotExist(err) {
		t.Errorf("a --source read created the configured database's directory (stat: %v)", err)
	}
	stdout, _, _ := runDsh(t, "list", "--parent", "balanced", "-o", "json", "--source", "dsh:"+db)
	if !strings.Contains(stdout, `"id":"torn-child"`) {
		t.Errorf("list --source dsh:: %s", stdout)
	}
}
