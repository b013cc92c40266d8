package pgstore

import (
	"context"
	"testing"
	"time"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/pgtest"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/storetest"
)

// Every write a listing, an audit or a lease listing can see wakes a
// watcher, not only a session created: a lease taken, renewed or released
// changes a child's activity, a checkpoint put or deleted what a warm
// listing serves, appended events an audit's verdict. (Each of these
// writes touches its own table, so each needs that table's trigger.)
func TestWatchChangesWokenByEveryWrite(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	w := openT(t, url)
	s, err := OpenReadOnly(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := w.CreateSession(ctx, session.Header{ID: "p", CreatedAt: 1}, nil); err != nil {
		t.Fatal(err)
	}
	watch := storetest.Watch(ctx, t, s)
	// One transaction is one wake-up; a late duplicate is let arrive and
	// dropped, so the next write is judged alone.
	wait := func(what string) {
		t.Helper()
		watch.Next(what, 5*time.Second)
		time.Sleep(100 * time.Millisecond)
		watch.Drain()
	}
	wait("the watch in place")

	h := backend.LeaseHolder{ID: "holder", Host: "h", PID: 1, TTL: time.Hour}
	for _, step := range []struct {
		what  string
		write func() error
	}{
		{"a lease taken", func() error { _, err := w.AcquireLease(ctx, "p", h); return err }},
		{"a lease renewed", func() error { return w.HeartbeatLease(ctx, "p", h, nil) }},
		{"a lease released", func() error { return w.ReleaseLease(ctx, "p", h) }},
		{"a checkpoint put", func() error {
			return w.PutCheckpoint(ctx, backend.CheckpointRecord{Witness: session.Header{ID: "p", CreatedAt: 1}, AsOfSeq: -1, Rows: []byte(`{}`)})
		}},
		{"a checkpoint deleted", func() error { return w.DeleteCheckpoint(ctx, "p") }},
	} {
		if err := step.write(); err != nil {
			t.Fatalf("%s: %v", step.what, err)
		}
		wait(step.what)
	}
	watch.Stop(5 * time.Second)
}
