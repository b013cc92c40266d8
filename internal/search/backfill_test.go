package search_test

import (
	"context"
	"database/sql"
	"reflect"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/pgstore"
	"github.com/dsh-project/dsh/internal/pgtest"
	"github.com/dsh-project/dsh/internal/search"
	"github.com/dsh-project/dsh/internal/sqlitepersist"
	"github.com/dsh-project/dsh/internal/transfer"
)

// undoSearchMigration takes a store back to before migration 0013 (its
// objects dropped, its version unrecorded), keeping the sessions.
var undoSearchMigration = map[string][]string{
	"sqlite": {
		"DROP TRIGGER events_search_insert", "DROP TRIGGER events_search_delete", "DROP TRIGGER events_search_update",
		"DROP VIEW event_text_of", "DROP VIEW event_content_of", "DROP TABLE event_search_fts", "DROP TABLE event_search",
		"DELETE FROM schema_migrations WHERE version = 13", "PRAGMA user_version = 12",
	},
	"postgres": {
		"DROP TABLE event_search", "DROP TRIGGER events_search_insert ON events", "DROP TRIGGER events_search_delete ON events",
		"DROP TRIGGER events_search_update_1_old ON events", "DROP TRIGGER events_search_update_2_new ON events",
		"DROP TRIGGER events_search_truncate ON events",
		"DROP FUNCTION dsh_search_add, dsh_search_remove, dsh_search_clear, dsh_search_vector, dsh_event_text",
		"DELETE FROM dsh_schema_migrations WHERE version = 13",
	},
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
		st, path := sqliteStore(t)
		_, src := openSource(t, spec)
		if _, err := transfer.Import(ctx, st, src, transfer.ImportOptions{}); err != nil {
			t.Fatal(err)
		}
		st.Close()
		db, err := sql.Open("sqlite", path)
		if err != nil {
			t.Fatal(err)
		}
		for _, stmt := range undoSearchMigration["sqlite"] {
			if _, err := db.Exec(stmt); err != nil {
				t.Fatalf("%s: %v", stmt, err)
			}
		}
		db.Close()
		var steps []step
		st, err = sqlitepersist.Open(ctx, path, sqlitepersist.Options{Progress: func(name string, done, total int) {
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
		st, err := pgstore.Open(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		_, src := openSource(t, spec)
		if _, err := transfer.Import(ctx, st, src, transfer.ImportOptions{}); err != nil {
			t.Fatal(err)
		}
		st.Close()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		for _, stmt := range undoSearchMigration["postgres"] {
			if _, err := conn.Exec(ctx, stmt); err != nil {
				t.Fatalf("%s: %v", stmt, err)
			}
		}
		conn.Close(ctx)
		var steps []step
		st, err = pgstore.OpenWithProgress(ctx, dsn, func(name string, done, total int) { steps = append(steps, step{done, total}) })
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		check(t, st, steps)
	})
}
