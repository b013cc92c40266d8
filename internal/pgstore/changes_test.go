package pgstore

import (
	"context"
	"testing"
	"time"

	"github.com/dsh-project/dsh/internal/pgtest"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/storetest"
)

// A role that may only SELECT can watch: LISTEN needs no privilege, and
// the writer's triggers send the notification.
func TestWatchChangesWithSelectOnlyRole(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	writer := openT(t, url)
	s, err := OpenReadOnly(ctx, pgtest.NewReadOnlyRole(t, url))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	w := storetest.Watch(ctx, t, s)
	next := func(what string) { t.Helper(); w.Next(what, 5*time.Second) }
	next("the watch in place")
	if err := writer.CreateSession(ctx, session.Header{ID: "p", CreatedAt: 1}, nil); err != nil {
		t.Fatal(err)
	}
	next("a session created")
	w.Stop(5 * time.Second)
}

// A catalog migrated before the triggers existed would never notify: the
// watch says so instead of waiting forever. Such a catalog has none of the
// later migrations either.
func TestWatchChangesRefusesCatalogWithoutTriggers(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	openT(t, url).Close()
	pgtest.Exec(t, url, `DROP FUNCTION dsh_notify_change() CASCADE;
		DELETE FROM `+migrationsTable+` WHERE version >= (SELECT version FROM `+migrationsTable+` WHERE name = '`+changeMigration+`')`)
	s, err := OpenReadOnly(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	err = s.WatchChanges(ctx, func() { t.Error("notify called on a catalog without triggers") })
	wantStoreError(t, err, nil, "change notifications need version", "run dsh init")
}

// Two catalogs in two schemas of one database share the channel: a watcher
// of one is not woken by a write to the other.
func TestWatchChangesIgnoresAnotherSchema(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	pgtest.Exec(t, url, "CREATE SCHEMA other")
	mine := openT(t, url)
	theirs := openT(t, url+"&search_path=other")
	w := storetest.Watch(ctx, t, mine)
	w.Next("the watch in place", 5*time.Second)
	if err := theirs.CreateSession(ctx, session.Header{ID: "elsewhere", CreatedAt: 1}, nil); err != nil {
		t.Fatal(err)
	}
	w.Quiet("a write to the catalog in schema other", 500*time.Millisecond)
	if err := mine.CreateSession(ctx, session.Header{ID: "here", CreatedAt: 1}, nil); err != nil {
		t.Fatal(err)
	}
	w.Next("a write to the watched catalog", 5*time.Second)
	w.Stop(5 * time.Second)
}
