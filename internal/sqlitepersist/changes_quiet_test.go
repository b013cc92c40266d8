package sqlitepersist

import (
	"context"
	"errors"
	"testing"
	"time"
)

// The change signal calls once per change it sees: after a commit has
// woken the watcher, nothing more comes until the next commit.
func TestWatchChangesQuietBetweenCommits(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, _ := openStore(t)
	wakes := make(chan struct{}, 64)
	done := make(chan error, 1)
	go func() { done <- s.WatchChanges(ctx, func() { wakes <- struct{}{} }) }()
	wait := func(what string) {
		t.Helper()
		select {
		case <-wakes:
		case err := <-done:
			t.Fatalf("%s: WatchChanges returned %v", what, err)
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no call", what)
		}
	}
	quiet := func(what string) {
		t.Helper()
		// Several polls of the signal with nothing written.
		select {
		case <-wakes:
			t.Fatalf("%s: called again with nothing written", what)
		case <-time.After(5 * changePollInterval):
		}
	}
	wait("the watch in place")
	quiet("once in place")
	for _, id := range []string{"a", "b"} {
		if err := s.CreateSession(ctx, rootHeader(id), nil); err != nil {
			t.Fatal(err)
		}
		wait("session " + id + " created")
		quiet("after session " + id)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("WatchChanges after cancel = %v", err)
	}
}
