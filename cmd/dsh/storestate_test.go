package main

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-project/dsh/internal/sqlitepersist"
	"github.com/dsh-project/dsh/migrations"
)

// oldSchemaDatabase writes a dsh database at schema version v, as a dsh
// that had only the first v migrations left it.
func oldSchemaDatabase(t *testing.T, path string, v int) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	names, err := fs.Glob(migrations.FS, "*.sql")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names[:v] {
		text, err := fs.ReadFile(migrations.FS, name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(string(text)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	for _, stmt := range []string{
		"CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT",
		fmt.Sprintf("PRAGMA user_version = %d", v),
		fmt.Sprintf("PRAGMA application_id = %d", sqlitepersist.ApplicationID),
	} {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
	for i, name := range names[:v] {
		if _, err := db.Exec("INSERT INTO schema_migrations VALUES (?, ?, 0)", i+1, strings.TrimSuffix(name[5:], ".sql")); err != nil {
			t.Fatal(err)
		}
	}
}

// A database from an older dsh: read commands say which schema it has and
// that dsh init migrates it, instead of failing on a missing table; after
// dsh init they read it.
func TestReadCommandsOnOlderSchema(t *testing.T) {
	home := isolateEnv(t)
	db := filepath.Join(home, "dsh.db")
	t.Setenv("DSH_DB", db)
	oldSchemaDatabase(t, db, 2)
	latest, err := sqlitepersist.LatestSchemaVersion()
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("dsh: STORE_UNAVAILABLE: %s has dsh schema version 2; this dsh reads version %d: run dsh init to migrate it\n", db, latest)
	for _, args := range [][]string{{"list", "--parent", "p"}, {"diagnose"}, {"session", "ls"}} {
		stdout, stderr, code := runDsh(t, args...)
		if code != exitStore || stderr != want || stdout != "" {
			t.Errorf("dsh %v: exit %d, stdout %q, stderr %q; want %d, %q", args, code, stdout, stderr, exitStore, want)
		}
	}
	if _, stderr, code := runDsh(t, "init"); code != 0 {
		t.Fatalf("init: exit %d: %s", code, stderr)
	}
	for _, args := range [][]string{{"list", "--parent", "p"}, {"diagnose"}} {
		if _, stderr, code := runDsh(t, args...); code != 0 {
			t.Errorf("after init, dsh %v: exit %d: %s", args, code, stderr)
		}
	}
}

// hotJournalCopy leaves at path a copy of a dsh database taken while a
// writer, in rollback-journal mode (an external tool switched it out of
// WAL), was in the middle of a transaction whose pages had already spilled
// into the file: the database and a hot journal, as that writer's crash
// leaves them. It returns the sessions the file held before.
func hotJournalCopy(t *testing.T, path string) string {
	t.Helper()
	src := filepath.Join(t.TempDir(), "dsh.db")
	t.Setenv("DSH_DB", src)
	for _, id := range []string{"a", "b"} {
		if _, stderr, code := runDsh(t, "session", "new", "--id", id); code != 0 {
			t.Fatalf("session new: %s", stderr)
		}
	}
	before, _, _ := runDsh(t, "session", "ls")
	db, err := sql.Open("sqlite", "file:"+src+"?_pragma=cache_size(2)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec("PRAGMA journal_mode = DELETE"); err != nil {
		t.Fatal(err)
	}
	tx, err := db.BeginTx(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	for i := range 200 {
		if _, err := tx.Exec("INSERT INTO sessions (id, version, created_at) VALUES (?, 0, 1)", fmt.Sprintf("tx-%03d-%s", i, strings.Repeat("x", 900))); err != nil {
			t.Fatal(err)
		}
	}
	for _, suffix := range []string{"", "-journal"} {
		b, err := os.ReadFile(src + suffix)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path+suffix, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return before
}

// A hot rollback journal beside the database: a read command explains it
// and points at dsh init, which rolls it back; then every command works and
// the crashed transaction is gone.
func TestHotRollbackJournal(t *testing.T) {
	home := isolateEnv(t)
	db := filepath.Join(home, "dsh.db")
	before := hotJournalCopy(t, db)
	t.Setenv("DSH_DB", db)
	want := fmt.Sprintf("dsh: STORE_UNAVAILABLE: %s has a hot rollback journal (%s-journal): a writer crashed mid-transaction after the file was switched out of WAL mode, and a read-only command cannot roll it back; run dsh init to recover it: ", db, db)
	for _, args := range [][]string{{"session", "ls"}, {"list", "--parent", "a"}, {"diagnose"}} {
		_, stderr, code := runDsh(t, args...)
		if code != exitStore || !strings.HasPrefix(stderr, want) {
			t.Errorf("dsh %v: exit %d, stderr %q; want %d, %q…", args, code, stderr, exitStore, want)
		}
	}
	if _, stderr, code := runDsh(t, "init"); code != 0 {
		t.Fatalf("init with a hot journal: exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(db + "-journal"); !os.IsNotExist(err) {
		t.Errorf("the journal is still there after init (%v)", err)
	}
	if after, stderr, code := runDsh(t, "session", "ls"); code != 0 || after != before {
		t.Errorf("after init: exit %d (%s), sessions %q, want %q", code, stderr, after, before)
	}
}
