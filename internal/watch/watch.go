// Package watch keeps a listing current (`dsh list --watch`): it reads the
// listing once, then again on every change signal of the store
// (backend.ChangeNotifier) and whenever the earliest live lease expires —
// a running child becomes inactive then without anything being written —
// and reports each row that was added, changed or removed, by row id.
package watch

import (
	"context"
	"time"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/leases"
	"github.com/dsh-project/dsh/internal/subagent"
)

// Type is what happened to a row, named as Kubernetes' watch events are.
type Type string

// The three event types.
const (
	Added    Type = "ADDED"
	Modified Type = "MODIFIED"
	Deleted  Type = "DELETED"
)

// Event is one row that changed: for Deleted, the row as last listed.
type Event struct {
	Type Type
	Row  subagent.Row
}

// Snapshot is one reading of the listing.
type Snapshot struct {
	Rows []subagent.Row
	// Leases are the store's leases at the reading: the holders of its
	// running rows, and when the next one expires.
	Leases leases.Table
}

// Diff is what changed from old to new, rows matched by id: new's rows that
// old lacks (Added) or holds otherwise (Modified), in new's order, then
// old's rows that new lacks (Deleted), in old's order.
func Diff(old, new []subagent.Row) []Event {
	before := make(map[string]subagent.Row, len(old))
	for _, r := range old {
		before[r.ID] = r
	}
	var out []Event
	seen := make(map[string]bool, len(new))
	for _, r := range new {
		seen[r.ID] = true
		prev, ok := before[r.ID]
		switch {
		case !ok:
			out = append(out, Event{Type: Added, Row: r})
		case !sameRow(prev, r):
			out = append(out, Event{Type: Modified, Row: r})
		}
	}
	for _, r := range old {
		if !seen[r.ID] {
			out = append(out, Event{Type: Deleted, Row: r})
		}
	}
	return out
}

func sameRow(a, b subagent.Row) bool {
	if (a.Label == nil) != (b.Label == nil) || a.Label != nil && *a.Label != *b.Label {
		return false
	}
	a.Label, b.Label = nil, nil
	return a == b
}

// Watcher is one watch of a listing.
type Watcher struct {
	// Signal is the store's change signal.
	Signal backend.ChangeNotifier
	// Read reads the listing.
	Read func(ctx context.Context) (Snapshot, error)
	// First is called with the first reading, once the signal is in place
	// (no commit after that reading goes unseen).
	First func(Snapshot) error
	// Changed is called with every later reading that differs from the one
	// before, and what changed.
	Changed func(Snapshot, []Event) error
}

// expiryMargin is how long after a lease's expiry the listing is read
// again: the lease is judged by the store's clock, which a reading may
// find a hair behind.
const expiryMargin = 50 * time.Millisecond

// Run watches until ctx ends (returning ctx.Err()), the signal is lost, or
// a read or a callback fails (returning that error).
func (w Watcher) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	changed := make(chan struct{}, 1)
	lost := make(chan error, 1)
	go func() {
		lost <- w.Signal.WatchChanges(ctx, func() {
			select {
			case changed <- struct{}{}:
			default:
			}
		})
	}()
	stop := func(err error) error {
		cancel()
		<-lost
		return err
	}
	// The signal's first call says it is in place.
	select {
	case <-ctx.Done():
		return stop(ctx.Err())
	case err := <-lost:
		return err
	case <-changed:
	}
	last, err := w.Read(ctx)
	if err != nil {
		return stop(err)
	}
	if err := w.First(last); err != nil {
		return stop(err)
	}
	for {
		// A nil channel never fires: with no live lease, only the
		// signal wakes the watch. (An unstopped timer is collected once
		// unreferenced, so the returns need not stop it.)
		var expiry <-chan time.Time
		if d, ok := last.Leases.NextExpiry(); ok {
			expiry = time.After(max(d, 0) + expiryMargin)
		}
		select {
		case <-ctx.Done():
			return stop(ctx.Err())
		case err := <-lost:
			return err
		case <-changed:
		case <-expiry:
		}
		next, err := w.Read(ctx)
		if err != nil {
			return stop(err)
		}
		if events := Diff(last.Rows, next.Rows); len(events) > 0 {
			if err := w.Changed(next, events); err != nil {
				return stop(err)
			}
		}
		last = next
	}
}
