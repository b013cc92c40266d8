package watch

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/leases"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/sqlitepersist"
	"github.com/dsh-project/dsh/internal/subagent"
)

// TestRunReportsEachChangeOnce watches a real SQLite store: a listing of
// parent p's children, running while their lease is live. Each commit that
// changes the listing is reported once, with only what changed since the
// previous report (not since the first listing); a commit that leaves the
// listing as it was reports nothing; a lease that expires without any
// write is reported when it expires, not at the next write; and the watch
// ends with its context's error.
func TestRunReportsEachChangeOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := sqlitepersist.Open(ctx, filepath.Join(t.TempDir(), "dsh.db"), sqlitepersist.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	create := func(id string, parent *string) {
		t.Helper()
		cwd := "/work"
		h := session.Header{Version: session.FormatVersion, ID: id, CreatedAt: 1_600_000_000_000, Cwd: &cwd, ParentSession: parent}
		if parent != nil {
			origin, depth := session.OriginSubagent, int64(1)
			h.Origin, h.DelegationDepth = &origin, &depth
		}
		if err := st.CreateSession(ctx, h, nil); err != nil {
			t.Fatal(err)
		}
	}
	p := "p"
	create("p", nil)
	create("c1", &p)

	row := func(id string, a subagent.Activity) subagent.Row {
		return subagent.Row{Kind: subagent.KindChild, ID: id, Activity: a}
	}
	read := func(ctx context.Context) (Snapshot, error) {
		table, err := leases.Read(ctx, st, &p)
		if err != nil {
			return Snapshot{}, err
		}
		live := table.Holders()
		var rows []subagent.Row
		err = st.ChildrenOf(ctx, p, func(h session.Header) error {
			a := subagent.ActivityInactive
			if _, ok := live[h.ID]; ok {
				a = subagent.ActivityRunning
			}
			rows = append(rows, row(h.ID, a))
			return nil
		})
		return Snapshot{Rows: rows, Leases: table}, err
	}

	first := make(chan Snapshot, 1)
	changes := make(chan []Event, 16)
	done := make(chan error, 1)
	wctx, stop := context.WithCancel(ctx)
	go func() {
		done <- Watcher{
			Signal:  st,
			Read:    read,
			First:   func(s Snapshot) error { first <- s; return nil },
			Changed: func(_ Snapshot, ev []Event) error { changes <- ev; return nil },
		}.Run(wctx)
	}()
	next := func(what string, within time.Duration, want ...Event) {
		t.Helper()
		select {
		case got := <-changes:
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: reported %+v\nwant %+v", what, got, want)
			}
		case err := <-done:
			t.Fatalf("%s: watch ended: %v", what, err)
		case <-time.After(within):
			t.Fatalf("%s: nothing reported within %s; want %+v", what, within, want)
		}
	}

	select {
	case s := <-first:
		if want := []subagent.Row{row("c1", subagent.ActivityInactive)}; !reflect.DeepEqual(s.Rows, want) {
			t.Fatalf("first listing %+v, want %+v", s.Rows, want)
		}
	case err := <-done:
		t.Fatalf("watch ended before its first listing: %v", err)
	}
	// A commit right after the first listing is seen: the signal was in
	// place before the listing was read.
	create("c2", &p)
	next("a child created", 10*time.Second, Event{Added, row("c2", subagent.ActivityInactive)})
	// A commit the listing does not show reports nothing; the next one
	// reports only itself.
	create("elsewhere", nil)
	time.Sleep(300 * time.Millisecond) // a few polls of the signal: read apart from the next
	create("c3", &p)
	next("another child created", 10*time.Second, Event{Added, row("c3", subagent.ActivityInactive)})

	const ttl = 700 * time.Millisecond
	h := backend.LeaseHolder{ID: "holder", Host: "h", PID: 1, TTL: ttl}
	if _, err := st.AcquireLease(ctx, "c1", h); err != nil {
		t.Fatal(err)
	}
	next("a lease taken", 10*time.Second, Event{Modified, row("c1", subagent.ActivityRunning)})
	// Nothing is written when the lease lapses; the watch reads again at
	// its expiry (well before the few seconds allowed here).
	next("the lease expired", ttl+3*time.Second, Event{Modified, row("c1", subagent.ActivityInactive)})

	stop()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Run ended with %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not end with its context")
	}
	select {
	case ev := <-changes:
		t.Errorf("reported %+v after the last change", ev)
	default:
	}
}
