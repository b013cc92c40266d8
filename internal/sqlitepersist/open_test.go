package sqlitepersist

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/session"
)

func TestOpenCreatesPrivateDirAndFileAndMigrates(t *testing.T) {
	ctx := context.Background()
	s, path := openStore(t)

	dirInfo, err := os.Stat(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	if got := dirInfo.Mode().Perm(); got&0o077 != 0 {
		t.Errorf("directory mode %v, want no group/other bits", got)
	}
	fileInfo, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fileInfo.Mode().Perm(); got != 0o600 {
		t.Errorf("file mode %v, want 0600", got)
	}

	q := s.Querier()
	for pragma, want := range map[string]string{
		"journal_mode":   "wal",
		"synchronous":    "2",
		"foreign_keys":   "1",
		"busy_timeout":   "5000",
		"trusted_schema": "0",
		"application_id": "1146308657",
	} {
		var got string
		if err := q.QueryRowContext(ctx, "PRAGMA "+pragma).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("PRAGMA %s = %s, want %s", pragma, got, want)
		}
	}

	latest, err := LatestSchemaVersion()
	if err != nil {
		t.Fatal(err)
	}
	v, err := s.SchemaVersion(ctx)
	if err != nil || v != latest || v < 1 {
		t.Fatalf("SchemaVersion = %d, %v; want %d", v, err, latest)
	}
	var name string
	var count int
	if err := q.QueryRowContext(ctx, "SELECT name FROM schema_migrations WHERE version = 1").Scan(&name); err != nil || name != "session_store" {
		t.Errorf("schema_migrations row 1: name %q, %v", name, err)
	}
	if err := q.QueryRowContext(ctx, "SELECT count(*) FROM schema_migrations").Scan(&count); err != nil || count != latest {
		t.Errorf("schema_migrations has %d rows (%v), want %d", count, err, latest)
	}
}

func TestOpenHonoursBusyTimeout(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dsh.db")
	s, err := Open(context.Background(), path, Options{BusyTimeout: 1234_000_000})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var got int
	if err := s.Querier().QueryRowContext(context.Background(), "PRAGMA busy_timeout").Scan(&got); err != nil || got != 1234 {
		t.Fatalf("busy_timeout = %d (%v), want 1234", got, err)
	}
	if _, err := Open(context.Background(), path, Options{BusyTimeout: -1}); dsherr.CodeOf(err) != dsherr.InvalidInput {
		t.Fatalf("negative busy timeout: %v, want INVALID_INPUT", err)
	}
}

func TestReopenKeepsDataAndDoesNotRemigrate(t *testing.T) {
	ctx := context.Background()
	s, path := openStore(t)
	if err := s.CreateSession(ctx, rootHeader("s1"), newLog().completeTurn("hi").events); err != nil {
		t.Fatal(err)
	}
	var applied int64
	s.Querier().QueryRowContext(ctx, "SELECT applied_at FROM schema_migrations WHERE version = 1").Scan(&applied)
	s.Close()

	s2 := reopen(t, path)
	var again int64
	s2.Querier().QueryRowContext(ctx, "SELECT applied_at FROM schema_migrations WHERE version = 1").Scan(&again)
	if again != applied {
		t.Errorf("migration 1 re-applied: applied_at %d then %d", applied, again)
	}
	ins, err := s2.Inspect(ctx, "s1")
	if err != nil || len(ins.Events) != 6 {
		t.Fatalf("Inspect after reopen: %v, %d events", err, len(ins.Events))
	}
}

// rawDB opens a SQLite file directly, for files dsh must refuse.
func rawDB(t *testing.T, path string, stmts ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, stmt := range stmts {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
}

func TestOpenRefusesForeignDatabases(t *testing.T) {
	cases := map[string][]string{
		"tables without application id": {"CREATE TABLE notes (body TEXT)"},
		"other application id":          {"PRAGMA application_id = 12345", "CREATE TABLE t (x)"},
		"DSH schema-17 store":           {"PRAGMA application_id = 1146308688", "PRAGMA user_version = 17"},
	}
	for name, stmts := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "other.db")
			rawDB(t, path, stmts...)
			before := statFile(t, path)
			for opener, open := range map[string]func(context.Context, string, Options) (*Store, error){"Open": Open, "OpenReadOnly": OpenReadOnly} {
				s, err := open(context.Background(), path, Options{})
				if err == nil {
					s.Close()
					t.Fatalf("%s accepted a foreign database", opener)
				}
				if !errors.Is(err, backend.ErrForeignDatabase) || dsherr.CodeOf(err) != dsherr.StoreUnavailable {
					t.Errorf("%s: %v, want backend.ErrForeignDatabase with STORE_UNAVAILABLE", opener, err)
				}
			}
			if after := statFile(t, path); after != before {
				t.Errorf("refused database was modified")
			}
		})
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	_, path := openStore(t)
	latest, _ := LatestSchemaVersion()
	s := reopen(t, path)
	mustExec(t, s, "PRAGMA user_version = "+strconv.Itoa(latest+1))
	s.Close()
	for opener, open := range map[string]func(context.Context, string, Options) (*Store, error){"Open": Open, "OpenReadOnly": OpenReadOnly} {
		s, err := open(context.Background(), path, Options{})
		if err == nil {
			s.Close()
			t.Fatalf("%s accepted a schema newer than the binary", opener)
		}
		if !errors.Is(err, backend.ErrSchemaTooNew) || !strings.Contains(err.Error(), "upgrade dsh") {
			t.Errorf("%s: %v, want backend.ErrSchemaTooNew", opener, err)
		}
	}
}

func TestOpenReadOnlyMissingDatabaseCreatesNothing(t *testing.T) {
	root := t.TempDir()
	for _, path := range []string{
		filepath.Join(root, "missing.db"),
		filepath.Join(root, "no", "such", "dir", "dsh.db"),
	} {
		s, err := OpenReadOnly(context.Background(), path, Options{})
		if err == nil {
			s.Close()
			t.Fatalf("OpenReadOnly(%s) succeeded", path)
		}
		if !errors.Is(err, backend.ErrNoDatabase) || dsherr.CodeOf(err) != dsherr.StoreUnavailable || !strings.Contains(err.Error(), path) {
			t.Errorf("OpenReadOnly(%s): %v, want backend.ErrNoDatabase naming the path", path, err)
		}
	}
	if names := dirNames(t, root); len(names) != 0 {
		t.Errorf("read-only open created %v", names)
	}
}

func TestOpenReadOnlyRefusesUninitializedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "empty.db")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := OpenReadOnly(context.Background(), path, Options{})
	if err == nil {
		s.Close()
		t.Fatal("OpenReadOnly accepted an empty file")
	}
	if !errors.Is(err, backend.ErrNoDatabase) {
		t.Errorf("got %v, want backend.ErrNoDatabase", err)
	}
	if fi, _ := os.Stat(path); fi.Size() != 0 {
		t.Errorf("empty file grew to %d bytes", fi.Size())
	}
}

func TestOpenRefusesSymlinksAndNonRegularFiles(t *testing.T) {
	root := t.TempDir()
	realDir := filepath.Join(root, "real")
	if err := os.Mkdir(realDir, 0o700); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(realDir, "target.db")
	s, err := Open(context.Background(), target, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()

	linkDB := filepath.Join(root, "link.db")
	if err := os.Symlink(target, linkDB); err != nil {
		t.Fatal(err)
	}
	linkDir := filepath.Join(root, "linkdir")
	if err := os.Symlink(realDir, linkDir); err != nil {
		t.Fatal(err)
	}
	dirAtPath := filepath.Join(root, "adir.db")
	if err := os.Mkdir(dirAtPath, 0o700); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(root, "fifo.db")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	parentIsFile := filepath.Join(target, "dsh.db")

	cases := map[string]struct{ path, want string }{
		"symlinked database":       {linkDB, "symbolic link"},
		"symlinked parent":         {filepath.Join(linkDir, "target.db"), "symbolic link"},
		"directory at db path":     {dirAtPath, "is a directory, not a database file"},
		"fifo at db path":          {fifo, "is a FIFO, not a database file"},
		"parent is a regular file": {parentIsFile, "not a directory"},
	}
	before := statFile(t, target)
	for name, c := range cases {
		for opener, open := range map[string]func(context.Context, string, Options) (*Store, error){"Open": Open, "OpenReadOnly": OpenReadOnly} {
			s, err := open(context.Background(), c.path, Options{})
			if err == nil {
				s.Close()
				t.Errorf("%s/%s: opened %s", name, opener, c.path)
				continue
			}
			if dsherr.CodeOf(err) != dsherr.StoreUnavailable || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s/%s: %v, want STORE_UNAVAILABLE mentioning %q", name, opener, err, c.want)
			}
		}
	}
	if after := statFile(t, target); after != before {
		t.Error("the symlink target was modified")
	}
}

func TestReadOnlyStoreRefusesWrites(t *testing.T) {
	ctx := context.Background()
	s, path := openStore(t)
	if err := s.CreateSession(ctx, rootHeader("s1"), newLog().turnStart().events); err != nil {
		t.Fatal(err)
	}
	s.Close()
	ro := openRO(t, path)
	writes := map[string]error{
		"CreateSession": ro.CreateSession(ctx, rootHeader("s2"), nil),
		"Append":        ro.Append(ctx, "s1", 1, continueFrom(newLog().turnStart().events).turnEnd().events),
		"Update":        ro.update(ctx, func(*Store) error { return nil }),
	}
	_, writes["Load"] = ro.Load(ctx, "s1")
	_, writes["ImportSession"] = ro.ImportSession(ctx, rootHeader("s3"), nil, nil)
	for name, err := range writes {
		if err == nil || dsherr.CodeOf(err) != dsherr.StoreUnavailable {
			t.Errorf("%s on a read-only store: %v, want STORE_UNAVAILABLE", name, err)
		}
	}
	if _, err := ro.Querier().ExecContext(ctx, "DELETE FROM events"); err == nil {
		t.Error("raw DELETE through a read-only store succeeded")
	}
}

// TestReadOnlyReadsLeaveFilesUntouched runs every read on a read-only store
// and checks the database and its WAL keep their bytes and mtime, and that
// no file appears next to them.
func TestReadOnlyReadsLeaveFilesUntouched(t *testing.T) {
	ctx := context.Background()
	s, path := openStore(t)
	parent := rootHeader("parent")
	b := newLog().completeTurn("spawn").descriptor("child")
	if err := s.CreateSession(ctx, parent, b.events); err != nil {
		t.Fatal(err)
	}
	child := rootHeader("child")
	child.ParentSession, child.Origin, child.DelegationDepth = ptr("parent"), ptr(session.OriginSubagent), ptr(int64(1))
	if err := s.CreateSession(ctx, child, newLog().turnStart().user("work").stepStart().events); err != nil {
		t.Fatal(err)
	}
	s.Close()

	before := dbFiles(t, path)
	namesBefore := dirNames(t, filepath.Dir(path))
	ro := openRO(t, path)
	mustRead := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	_, err := ro.Header(ctx, "parent")
	mustRead("Header", err)
	mustRead("ListHeaders", ro.ListHeaders(ctx, func(session.Header) error { return nil }))
	mustRead("ChildrenOf", ro.ChildrenOf(ctx, "parent", func(session.Header) error { return nil }))
	_, err = ro.HasSubagentChild(ctx, "parent")
	mustRead("HasSubagentChild", err)
	_, err = ro.Inspect(ctx, "child")
	mustRead("Inspect", err)
	_, err = ro.InspectTypes(ctx, "parent", session.TypeDescriptor)
	mustRead("InspectTypes", err)
	_, err = ro.SchemaVersion(ctx)
	mustRead("SchemaVersion", err)
	mustRead("View", ro.view(ctx, func(v *Store) error {
		_, err := v.Inspect(ctx, "parent")
		return err
	}))
	_, err = ro.Header(ctx, "nope")
	if !errors.Is(err, backend.ErrNotFound) {
		t.Fatalf("Header of unknown id: %v", err)
	}
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}
	if after := dbFiles(t, path); after != before {
		t.Errorf("read-only reads changed the files:\nbefore %+v\nafter  %+v", before, after)
	}
	if names := dirNames(t, filepath.Dir(path)); strings.Join(names, ",") != strings.Join(namesBefore, ",") {
		t.Errorf("files before %v, after %v", namesBefore, names)
	}
}
