package sqlitepersist

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/dsh-project/dsh/internal/backend"
)

// A lease is live until the instant it expires and expired from that
// instant on, and every reader agrees: LiveSessions, Lease.Expired on the
// rows of Leases, and an acquirer (refused a millisecond before, taking it
// over at the instant). The lease expires exactly TTL after it was taken.
func TestLeaseExpiresAtItsExpiryInstant(t *testing.T) {
	ctx := context.Background()
	start := time.UnixMilli(1_700_000_000_000)
	clock := start
	s, err := Open(ctx, filepath.Join(t.TempDir(), "dsh.db"), Options{Clock: func() time.Time { return clock }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.CreateSession(ctx, rootHeader("s"), nil); err != nil {
		t.Fatal(err)
	}
	a := backend.LeaseHolder{ID: "a", Host: "h", PID: 1, TTL: time.Second}
	b := backend.LeaseHolder{ID: "b", Host: "h", PID: 2, TTL: time.Second}
	if _, err := s.AcquireLease(ctx, "s", a); err != nil {
		t.Fatal(err)
	}
	judge := func(when string) (live, expired bool) {
		t.Helper()
		ls, err := s.LiveSessions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_, live = ls["s"]
		rows, err := s.Leases(ctx)
		if err != nil || len(rows) != 1 {
			t.Fatalf("%s: Leases = %+v, %v", when, rows, err)
		}
		if want := start.Add(time.Second).UnixMilli(); rows[0].ExpiresAt != want {
			t.Errorf("%s: lease expires at %d, want %d (taken plus its TTL)", when, rows[0].ExpiresAt, want)
		}
		return live, rows[0].Expired(clock)
	}

	clock = start.Add(999 * time.Millisecond)
	if live, expired := judge("a millisecond before"); !live || expired {
		t.Errorf("a millisecond before expiry: live %v, expired %v; want live", live, expired)
	}
	if _, err := s.AcquireLease(ctx, "s", b); !errors.As(err, new(*backend.LeaseHeldError)) {
		t.Errorf("acquire a millisecond before expiry: %v; want held", err)
	}

	clock = start.Add(time.Second)
	if live, expired := judge("at the instant"); live || !expired {
		t.Errorf("at the expiry instant: live %v, expired %v; want expired", live, expired)
	}
	replaced, err := s.AcquireLease(ctx, "s", b)
	if err != nil || replaced == nil || replaced.Holder != "a" {
		t.Fatalf("acquire at the expiry instant = %+v, %v; want a's lease taken over", replaced, err)
	}
	if err := s.HeartbeatLease(ctx, "s", a, nil); !errors.Is(err, backend.ErrLeaseLost) {
		t.Errorf("a's heartbeat after the takeover: %v; want ErrLeaseLost", err)
	}
}
