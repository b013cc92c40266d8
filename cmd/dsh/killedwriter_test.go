package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dsh-project/dsh/internal/session"
)

// killedWriterDatabase seeds the read-only corpus (and its fork) at db and
// leaves it as a writer SIGKILLed in its first milliseconds leaves it: its
// -wal, a new generation, holds only the header the writer began it with
// or, when committed, its one transaction (session "late"); the -shm, held
// by no process, still has the salts of the -wal before. SQLite's read-only
// reader retries on that for ten seconds, then fails with "locking
// protocol".
func killedWriterDatabase(t *testing.T, db string, committed bool) {
	t.Helper()
	seedReadOnlyCorpus(t, db)
	if _, stderr, code := runDsh(t, "--db", db, "session", "fork", "balanced", "--id", "fork"); code != 0 {
		t.Fatalf("fork: exit %d: %s", code, stderr)
	}
	file, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	shm, err := os.ReadFile(db + "-shm")
	if err != nil {
		t.Fatal(err)
	}
	s := openSeedStore(t, db)
	cwd := t.TempDir()
	turn := []session.Event{
		event(session.TypeTurnStart, 0, `{"turn":1}`),
		event(session.TypeTurnEnd, 1, `{"turn":1,"reason":{"kind":"completed"}}`),
	}
	if err := s.CreateSession(context.Background(), session.Header{ID: "late", CreatedAt: 1700000000001, Cwd: &cwd}, turn); err != nil {
		t.Fatal(err)
	}
	wal, err := os.ReadFile(db + "-wal")
	if err != nil || len(wal) < 32 {
		t.Fatalf("the open store's -wal: %d bytes, %v", len(wal), err)
	}
	closeSeedStore(t, s)
	if !committed {
		wal = wal[:32]
	}
	for name, b := range map[string][]byte{db: file, db + "-shm": shm, db + "-wal": wal} {
		if err := os.WriteFile(name, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if len(shm) < 48 || bytes.Equal(shm[32:40], wal[16:24]) {
		t.Fatalf("set-up: the -shm (%d bytes) must hold other salts than the -wal header", len(shm))
	}
}

// After a writer was killed in its first milliseconds — before its commit,
// or between its commit and the index update — every read command works,
// as the file's owner and (the file and its directory read-only) as a user
// the modes bind, sees every committed session, and writes nothing; without
// the -shm the same.
func TestReadCommandsAfterWriterKilledEarly(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: every early-kill state against every read command (about 11 s); go test ./... runs it")
	}
	home := isolateEnv(t)
	for _, c := range []struct {
		name             string
		committed, index bool
	}{
		{"header-only", false, true},
		{"header-only-no-shm", false, false},
		{"commit", true, true},
		{"commit-no-shm", true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "store")
			db := filepath.Join(dir, "dsh.db")
			killedWriterDatabase(t, db, c.committed)
			sessions := 6 // seedReadOnlyCorpus's and the fork
			if c.committed {
				sessions++ // and "late"
			}
			if !c.index {
				if err := os.Remove(db + "-shm"); err != nil {
					t.Fatal(err)
				}
			}
			t.Setenv("DSH_DB", db)
			exportDir := filepath.Join(home, "export-"+filepath.Base(t.Name()))
			if err := os.MkdirAll(exportDir, 0o777); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(exportDir, 0o777); err != nil {
				t.Fatal(err)
			}
			// The private copy a read may make goes to $TMPDIR, which
			// the unprivileged user must be able to write, as a user's
			// own temporary directory is.
			tmp := filepath.Join(home, "tmp-"+filepath.Base(t.Name()))
			if err := os.MkdirAll(tmp, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(tmp, 0o1777); err != nil {
				t.Fatal(err)
			}
			unprivileged := unprivilegedDsh(t, dir, exportDir, tmp)
			t.Setenv("TMPDIR", tmp)
			files := []string{db, db + "-wal", db + "-shm"}
			before := make([]fileState, len(files))
			for i, f := range files {
				before[i] = stateOf(t, f)
			}
			names := strings.Join(dirNames(t, dir), " ")
			time.Sleep(10 * time.Millisecond)
			for _, runner := range []struct {
				name string
				run  dshRunner
			}{{"own user", runDsh}, {"unprivileged, read-only files", unprivileged}} {
				if runner.name != "own user" {
					for _, f := range files {
						os.Chmod(f, 0o444)
					}
					if err := os.Chmod(dir, 0o555); err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { os.Chmod(dir, 0o755) })
				}
				reads := readCommands(filepath.Join(exportDir, strings.Fields(runner.name)[0]))
				reads = append(reads,
					[]string{"diagnose", "--all"},
					[]string{"list", "--parent", "balanced", "--scope", "descendants"},
					[]string{"--db", filepath.Join(t.TempDir(), "copy.db"), "import", "dsh:" + db},
				)
				for _, args := range reads {
					if runner.name != "own user" && args[0] == "--db" {
						continue // the copy's directory is the test's own
					}
					stdout, stderr, code := runner.run(t, args...)
					wantCode := 0
					switch joined := strings.Join(args, " "); {
					case strings.Contains(joined, "no-such-session"):
						wantCode = exitUsage
					case args[0] == "diagnose" && !strings.Contains(stderr, fmt.Sprintf("examined %d session(s)", sessions)):
						t.Errorf("%s: diagnose did not examine every session: %s", runner.name, stderr)
					}
					if code != wantCode {
						t.Errorf("%s: dsh %v: exit %d, want %d: %s%s", runner.name, args, code, wantCode, stdout, stderr)
					}
					if got := strings.Join(dirNames(t, dir), " "); got != names {
						t.Fatalf("%s: dsh %v: the store's directory holds %q, held %q", runner.name, args, got, names)
					}
					for i, f := range files {
						if after := stateOf(t, f); after.exists != before[i].exists || !bytes.Equal(after.content, before[i].content) || !after.mtime.Equal(before[i].mtime) {
							t.Errorf("%s: dsh %v changed %s", runner.name, args, filepath.Base(f))
						}
					}
				}
				if left := dirNames(t, tmp); len(left) != 0 {
					t.Errorf("%s: the reads left %v in TMPDIR", runner.name, left)
				}
				stdout, stderr, code := runner.run(t, "session", "ls", "-o", "jsonl")
				for _, id := range []string{`"id":"late"`, `"id":"fork"`, `"id":"torn"`} {
					if code != 0 || strings.Contains(stdout, id) != (c.committed || id != `"id":"late"`) {
						t.Errorf("%s: session ls: exit %d, %s%s; want %s only if committed", runner.name, code, stdout, stderr, id)
					}
				}
			}
		})
	}
}
