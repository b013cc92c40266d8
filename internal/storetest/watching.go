package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/dsh-project/dsh/internal/backend"
)

// Watching is a backend.ChangeNotifier's WatchChanges running on a
// goroutine of its own, its calls recorded for a test to wait on: the one
// harness of the conformance case and of each store's own signal tests.
type Watching struct {
	t      testing.TB
	wakes  chan time.Time
	done   chan error
	cancel context.CancelFunc
}

// Watch starts n.WatchChanges until ctx ends or Stop is called.
func Watch(ctx context.Context, t testing.TB, n backend.ChangeNotifier) *Watching {
	ctx, cancel := context.WithCancel(ctx)
	w := &Watching{t: t, wakes: make(chan time.Time, 64), done: make(chan error, 1), cancel: cancel}
	t.Cleanup(cancel)
	go func() {
		w.done <- n.WatchChanges(ctx, func() {
			select {
			case w.wakes <- time.Now():
			default:
				// A watcher that stopped reading has already failed.
			}
		})
	}()
	return w
}

// Next waits up to within for the next call and returns when it came; it
// fails the test when none comes or WatchChanges returns first.
func (w *Watching) Next(what string, within time.Duration) time.Time {
	w.t.Helper()
	select {
	case at := <-w.wakes:
		return at
	case err := <-w.done:
		w.t.Fatalf("%s: WatchChanges returned %v before its context ended", what, err)
	case <-time.After(within):
		w.t.Fatalf("%s: no call within %s", what, within)
	}
	return time.Time{}
}

// Quiet fails the test when a call comes within d.
func (w *Watching) Quiet(what string, d time.Duration) {
	w.t.Helper()
	select {
	case <-w.wakes:
		w.t.Fatalf("%s: notify called with nothing written", what)
	case err := <-w.done:
		w.t.Fatalf("%s: WatchChanges returned %v before its context ended", what, err)
	case <-time.After(d):
	}
}

// Drain drops the calls already made.
func (w *Watching) Drain() {
	for {
		select {
		case <-w.wakes:
		default:
			return
		}
	}
}

// Stop cancels the watch and fails the test unless WatchChanges returns
// context.Canceled within d.
func (w *Watching) Stop(d time.Duration) {
	w.t.Helper()
	w.cancel()
	select {
	case err := <-w.done:
		if !errors.Is(err, context.Canceled) {
			w.t.Fatalf("WatchChanges after cancel = %v; want context.Canceled", err)
		}
	case <-time.After(d):
		w.t.Fatalf("WatchChanges still running %s after its context was cancelled", d)
	}
}
