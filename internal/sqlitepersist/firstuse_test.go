package sqlitepersist

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/dsh-project/dsh/internal/backend"
)

// Any number of first users of a new file each end up with the migrated
// store: none sees another's migration half-way (tables without the
// application id the same commit sets) or gives up on its locks. The
// processes' version of this is internal/torture's TestTortureFirstUse.
func TestConcurrentFirstOpens(t *testing.T) {
	const openers = 16
	rounds := 50
	if testing.Short() {
		rounds = 5 // -short: a tenth of the rounds (the full 50 take about 8 s)
	}
	ctx := context.Background()
	latest, err := LatestSchemaVersion()
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	for round := range rounds {
		path := filepath.Join(root, strconv.Itoa(round), "dsh.db")
		var wg sync.WaitGroup
		errs := make([]error, openers)
		for i := range openers {
			wg.Go(func() {
				s, err := Open(ctx, path, Options{})
				if err != nil {
					errs[i] = err
					return
				}
				defer s.Close()
				if v, err := s.SchemaVersion(ctx); err != nil || v != latest {
					errs[i] = fmt.Errorf("schema version %d (%v), want %d", v, err, latest)
				}
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
	}
}

// A schema_migrations row ahead of user_version is a migration this dsh did
// not apply: the file is refused as newer, by writers and readers alike.
func TestOpenRefusesMigrationRowAheadOfVersion(t *testing.T) {
	s, path := openStore(t)
	latest, _ := LatestSchemaVersion()
	mustExec(t, s, "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, 'from_the_future', 0)", latest+1)
	s.Close()
	before := dbFiles(t, path)
	for opener, open := range map[string]func(context.Context, string, Options) (*Store, error){"Open": Open, "OpenReadOnly": OpenReadOnly} {
		s, err := open(context.Background(), path, Options{})
		if err == nil {
			s.Close()
			t.Fatalf("%s accepted a file with migration %d recorded", opener, latest+1)
		}
		if !errors.Is(err, backend.ErrSchemaTooNew) || !strings.Contains(err.Error(), "schema_migrations") {
			t.Errorf("%s: %v, want backend.ErrSchemaTooNew naming schema_migrations", opener, err)
		}
	}
	if after := dbFiles(t, path); after != before {
		t.Error("the refused file changed")
	}
}

// A write open refused because the file is newer creates nothing beside it:
// a file copied without its -wal and -shm stays the only file.
func TestRefusedWriteOpenCreatesNothing(t *testing.T) {
	s, path := openStore(t)
	latest, _ := LatestSchemaVersion()
	mustExec(t, s, "PRAGMA user_version = "+strconv.Itoa(latest+1))
	s.Close()
	for _, side := range []string{"-wal", "-shm"} {
		if err := os.Remove(path + side); err != nil {
			t.Fatal(err)
		}
	}
	before := statFile(t, path)
	if s, err := Open(context.Background(), path, Options{}); !errors.Is(err, backend.ErrSchemaTooNew) {
		if err == nil {
			s.Close()
		}
		t.Fatalf("Open: %v, want backend.ErrSchemaTooNew", err)
	}
	if names := dirNames(t, filepath.Dir(path)); strings.Join(names, " ") != "dsh.db" {
		t.Errorf("the refused open left %v", names)
	}
	if statFile(t, path) != before {
		t.Error("the refused file changed")
	}
}

// killedBeforeFirstCommit leaves the store at path as a writer SIGKILLed in
// its first milliseconds leaves it: the -wal holds the header the writer
// began it with and, when committed, the frames of its one transaction
// ("killed"); the -shm, which no connection holds, still has the salts of
// the -wal before (SQLite's own read-only reader retries on that for
// seconds and then fails with SQLITE_PROTOCOL).
func killedBeforeFirstCommit(t *testing.T, path string, committed bool) {
	t.Helper()
	ctx := context.Background()
	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CreateSession(ctx, rootHeader("before-the-kill"), newLog().completeTurn("hi").events); err != nil {
		t.Fatal(err)
	}
	s.Close()
	// The files as the killed writer found them.
	db, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	shm, err := os.ReadFile(path + "-shm")
	if err != nil {
		t.Fatal(err)
	}
	// Its -wal as it was when it died: a new generation (new salts)
	// holding its transaction, or only the header.
	s = reopen(t, path)
	if err := s.CreateSession(ctx, rootHeader("killed"), newLog().completeTurn("hi").events); err != nil {
		t.Fatal(err)
	}
	wal, err := os.ReadFile(path + "-wal")
	if err != nil || len(wal) < 32 {
		t.Fatalf("the open store's -wal: %d bytes, %v", len(wal), err)
	}
	s.Close()
	if !committed {
		wal = wal[:32]
	}
	for name, b := range map[string][]byte{path: db, path + "-shm": shm, path + "-wal": wal} {
		if err := os.WriteFile(name, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if len(shm) < 48 || bytes.Equal(shm[32:40], wal[16:24]) {
		t.Fatalf("set-up: the -shm (%d bytes) must hold other salts than the -wal header", len(shm))
	}
}

// Reads work after a writer was killed before its first commit, with and
// without the -shm, and after one killed between its commit and the index
// update (read through a private copy, removed on Close); none writes
// anything beside the file.
func TestReadAfterWriterKilledEarly(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name      string
		committed bool // the -wal holds the killed writer's commit
		index     bool // the stale -shm is kept
	}{
		{"header only, stale index", false, true},
		{"header only, no index", false, false},
		{"commit, stale index", true, true},
		{"commit, no index", true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			tmp := t.TempDir()
			t.Setenv("TMPDIR", tmp)
			path := filepath.Join(t.TempDir(), "dsh.db")
			killedBeforeFirstCommit(t, path, c.committed)
			if !c.index {
				if err := os.Remove(path + "-shm"); err != nil {
					t.Fatal(err)
				}
			}
			before := [3]fileState{statFile(t, path), statFile(t, path+"-wal"), statFile(t, path+"-shm")}
			ro, err := OpenReadOnly(ctx, path, Options{})
			if err != nil {
				t.Fatalf("OpenReadOnly: %v", err)
			}
			ids := []string{"before-the-kill"}
			if c.committed {
				ids = append(ids, "killed")
			}
			for _, id := range ids {
				if ins, err := ro.Inspect(ctx, id); err != nil || len(ins.Events) != 6 {
					t.Errorf("Inspect %s: %v", id, err)
				}
			}
			if err := ro.Close(); err != nil {
				t.Fatal(err)
			}
			if after := [3]fileState{statFile(t, path), statFile(t, path+"-wal"), statFile(t, path+"-shm")}; after != before {
				t.Error("the read changed the files")
			}
			if left := dirNames(t, tmp); len(left) != 0 {
				t.Errorf("the read left %v in TMPDIR", left)
			}
			// A writer recovers the state; the sessions are all there.
			s := reopen(t, path)
			for _, id := range ids {
				if _, err := s.Header(ctx, id); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
