package pgstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/dsh-project/dsh/internal/pgtest"
	"github.com/dsh-project/dsh/internal/session"
)

// A role that may only SELECT can watch: LISTEN needs no privilege, and
// the writer's triggers send the notification.
func TestWatchChangesWithSelectOnlyRole(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	url := pgtest.NewDatabase(t)
	writer := openT(t, url)
	s, err := OpenReadOnly(ctx, pgtest.NewReadOnlyRole(t, url))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	wakes := make(chan struct{}, 16)
	done := make(chan error, 1)
	go func() { done <- s.WatchChanges(ctx, func() { wakes <- struct{}{} }) }()
	next := func(what string) {
		t.Helper()
		select {
		case <-wakes:
		case err := <-done:
			t.Fatalf("%s: WatchChanges returned %v", what, err)
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: no call", what)
		}
	}
	next("the watch in place")
	if err := writer.CreateSession(ctx, session.Header{ID: "p", CreatedAt: 1}, nil); err != nil {
		t.Fatal(err)
	}
	next("a session created")
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("WatchChanges after cancel = %v", err)
	}
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
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	url := pgtest.NewDatabase(t)
	pgtest.Exec(t, url, "CREATE SCHEMA other")
	mine := openT(t, url)
	theirs := openT(t, url+"&search_path=other")
	wakes := make(chan struct{}, 16)
	done := make(chan error, 1)
	go func() { done <- mine.WatchChanges(ctx, func() { wakes <- struct{}{} }) }()
	select {
	case <-wakes:
	case err := <-done:
		t.Fatalf("WatchChanges returned %v", err)
	case <-time.After(5 * time.Second):
		t.Fatal("no call once the watch was in place")
	}
	if err := theirs.CreateSession(ctx, session.Header{ID: "elsewhere", CreatedAt: 1}, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case <-wakes:
		t.Fatal("a write to the catalog in schema other woke the watcher of public")
	case <-time.After(500 * time.Millisecond):
	}
	if err := mine.CreateSession(ctx, session.Header{ID: "here", CreatedAt: 1}, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case <-wakes:
	case <-time.After(5 * time.Second):
		t.Fatal("a write to the watched catalog did not wake its watcher")
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("WatchChanges after cancel = %v", err)
	}
}
