package search_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/pgstore"
	"github.com/dsh-project/dsh/internal/pgtest"
	"github.com/dsh-project/dsh/internal/search"
	"github.com/dsh-project/dsh/internal/sqlitepersist"
	"github.com/dsh-project/dsh/migrations"
)

// schema12 writes, with db's exec, migrations 1 to 12 of ms (the schema
// before the search index) and the corpus's sessions as rows, as a dsh of
// that version left them; record records a migration as the store does.
func schema12(t *testing.T, ms []migrations.Migration, exec func(string, ...any) error, record func(migrations.Migration) error) {
	t.Helper()
	for _, m := range ms[:12] {
		if err := exec(m.SQL + m.Backfill); err != nil {
			t.Fatalf("migration %d: %v", m.Version, err)
		}
		if err := record(m); err != nil {
			t.Fatal(err)
		}
	}
	for id, texts := range corpus {
		if err := exec("INSERT INTO sessions (id, version, created_at) VALUES ($1, 0, 1)", id); err != nil {
			t.Fatal(err)
		}
		for i, text := range texts {
			data := fmt.Sprintf(`{"content":[{"type":"text","text":%q}],"source":{"kind":"user"},"role":"user","id":"m%d"}`, text, i)
			if err := exec(`INSERT INTO events (session_id, seq, type, time, data, surface_op) VALUES ($1, $2, 'user/message', $3, $4, '"append"')`, id, i, 1000+i, data); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// A store written before migration 0013 is indexed by it, a chunk of
// sessions at a time, telling its progress from 0 to every session: the
// same hits as a store that had the index all along.
func TestMigrationBackfills(t *testing.T) {
	ctx := context.Background()
	spec := "jsonl:" + writeCorpus(t)
	type step struct{ done, total int }
	check := func(t *testing.T, st backend.Reader, steps []step) {
		t.Helper()
		if len(steps) < 2 || steps[0] != (step{0, len(corpus)}) || steps[len(steps)-1] != (step{len(corpus), len(corpus)}) {
			t.Errorf("progress %v, want 0 to %d", steps, len(corpus))
		}
		c, _ := openSource(t, spec)
		for _, query := range shared {
			if got, want := hits(t, st, query, search.Options{}), hits(t, c, query, search.Options{}); !reflect.DeepEqual(got, want) {
				t.Errorf("%s: migrated store %v, source %v", query, got, want)
			}
		}
	}
	t.Run("sqlite", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "dsh.db")
		db, err := sql.Open("sqlite", path)
		if err != nil {
			t.Fatal(err)
		}
		ms, err := migrations.Load(migrations.FS)
		if err != nil {
			t.Fatal(err)
		}
		exec := func(q string, args ...any) error { _, err := db.Exec(q, args...); return err }
		if err := exec("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT"); err != nil {
			t.Fatal(err)
		}
		schema12(t, ms, exec, func(m migrations.Migration) error {
			return exec("INSERT INTO schema_migrations VALUES ($1, $2, 0)", m.Version, m.Name)
		})
		if err := exec(fmt.Sprintf("PRAGMA user_version = 12; PRAGMA application_id = %d", sqlitepersist.ApplicationID)); err != nil {
			t.Fatal(err)
		}
		db.Close()
		var steps []step
		st, err := sqlitepersist.Open(ctx, path, sqlitepersist.Options{Progress: func(name string, done, total int) {
			if name != "event_search" {
				t.Errorf("progress of %s", name)
			}
			steps = append(steps, step{done, total})
		}})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		check(t, st, steps)
	})
	t.Run("postgres", func(t *testing.T) {
		dsn := pgtest.NewDatabase(t)
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		ms, err := migrations.Load(migrations.PostgresFS)
		if err != nil {
			t.Fatal(err)
		}
		exec := func(q string, args ...any) error { _, err := conn.Exec(ctx, q, args...); return err }
		if err := exec("CREATE TABLE dsh_schema_migrations (version bigint PRIMARY KEY, name text NOT NULL, applied_at bigint NOT NULL)"); err != nil {
			t.Fatal(err)
		}
		schema12(t, ms, exec, func(m migrations.Migration) error {
			return exec("INSERT INTO dsh_schema_migrations VALUES ($1, $2, 0)", m.Version, m.Name)
		})
		conn.Close(ctx)
		var steps []step
		st, err := pgstore.OpenWithProgress(ctx, dsn, func(name string, done, total int) { steps = append(steps, step{done, total}) })
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		check(t, st, steps)
	})
}
