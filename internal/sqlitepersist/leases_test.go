package sqlitepersist

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/session"
)

// holderAt is a holder with a 5s TTL and s seen by a clock fixed at now:
// how s judges that holder's leases when it acts at now.
func holderAt(s *Store, id string, now time.Time) (*Store, backend.LeaseHolder) {
	return s.WithClock(func() time.Time { return now }), backend.LeaseHolder{ID: id, PID: 4242, Host: "test-host", TTL: 5 * time.Second}
}

// liveHolder is a holder on the real clock: its leases count as live.
func liveHolder(id string) backend.LeaseHolder {
	return backend.LeaseHolder{ID: id, PID: 4242, Host: "test-host", TTL: time.Hour}
}

func leaseRows(t *testing.T, s *Store) []backend.Lease {
	t.Helper()
	ls, err := s.Leases(context.Background())
	if err != nil {
		t.Fatalf("Leases: %v", err)
	}
	return ls
}

func createRoot(t *testing.T, s *Store, id string) {
	t.Helper()
	if err := s.CreateSession(context.Background(), rootHeader(id), nil); err != nil {
		t.Fatalf("CreateSession %s: %v", id, err)
	}
}

func TestAcquireLeaseUnknownSession(t *testing.T) {
	s, _ := openStore(t)
	_, err := s.AcquireLease(context.Background(), "nope", liveHolder("a"))
	if !errors.Is(err, backend.ErrNotFound) || dsherr.CodeOf(err) != dsherr.NotFound {
		t.Fatalf("AcquireLease(unknown) = %v, want NOT_FOUND wrapping backend.ErrNotFound", err)
	}
	if ls := leaseRows(t, s); len(ls) != 0 {
		t.Fatalf("leases after refused acquire: %+v", ls)
	}
}

func TestAcquireLeaseConflict(t *testing.T) {
	ctx := context.Background()
	s, _ := openStore(t)
	createRoot(t, s, "c1")
	t0 := time.UnixMilli(1_800_000_000_000)
	sa, a := holderAt(s, "holder-a", t0)
	if replaced, err := sa.AcquireLease(ctx, "c1", a); err != nil || replaced != nil {
		t.Fatalf("first AcquireLease = %v, %v", replaced, err)
	}
	want := backend.Lease{SessionID: "c1", Holder: "holder-a", PID: 4242, Host: "test-host",
		AcquiredAt: t0.UnixMilli(), HeartbeatAt: t0.UnixMilli(), ExpiresAt: t0.UnixMilli() + 5000}
	if ls := leaseRows(t, s); len(ls) != 1 || ls[0].Snapshot != nil || fmt.Sprint(ls[0]) != fmt.Sprint(want) {
		t.Fatalf("leases = %+v, want [%+v]", ls, want)
	}
	before := dumpSession(t, s, "c1")

	// Another holder, one millisecond before the lease expires: refused.
	sb, b := holderAt(s, "holder-b", t0.Add(4999*time.Millisecond))
	_, err := sb.AcquireLease(ctx, "c1", b)
	var held *backend.LeaseHeldError
	if !errors.As(err, &held) || !errors.Is(err, backend.ErrLeaseHeld) || dsherr.CodeOf(err) != dsherr.NotDelivered {
		t.Fatalf("conflicting AcquireLease = %v, want NOT_DELIVERED wrapping *backend.LeaseHeldError", err)
	}
	if !strings.Contains(err.Error(), "not delivered") || !strings.Contains(err.Error(), "pid 4242 on test-host") ||
		!strings.Contains(err.Error(), "expires in 1ms") {
		t.Errorf("conflict message %q lacks the holder or %q", err, "not delivered")
	}
	if held.Lease.Holder != "holder-a" {
		t.Errorf("backend.LeaseHeldError names holder %q, want holder-a", held.Lease.Holder)
	}
	if ls := leaseRows(t, s); len(ls) != 1 || fmt.Sprint(ls[0]) != fmt.Sprint(want) {
		t.Fatalf("a refused acquire changed the lease: %+v", ls)
	}
	if after := dumpSession(t, s, "c1"); after != before {
		t.Fatalf("a refused acquire changed the session:\n%s\nwant\n%s", after, before)
	}

	// The holder itself re-acquires: its lease is renewed, not refused.
	sa2, a2 := holderAt(s, "holder-a", t0.Add(time.Second))
	if _, err := sa2.AcquireLease(ctx, "c1", a2); err != nil {
		t.Fatalf("re-acquire by the holder: %v", err)
	}
	if ls := leaseRows(t, s); ls[0].ExpiresAt != t0.UnixMilli()+6000 {
		t.Errorf("re-acquire: expires %d, want %d", ls[0].ExpiresAt, t0.UnixMilli()+6000)
	}
}

func TestExpiredLeaseIsTakenOver(t *testing.T) {
	ctx := context.Background()
	s, _ := openStore(t)
	createRoot(t, s, "c1")
	t0 := time.UnixMilli(1_800_000_000_000)
	sc, crashed := holderAt(s, "crashed", t0)
	if _, err := sc.AcquireLease(ctx, "c1", crashed); err != nil {
		t.Fatal(err)
	}
	snap := backend.LiveSnapshot{Subagent: json.RawMessage(`{"mode":"continuable","label":"x","seq":0}`), AsOfSeq: 3}
	if err := sc.HeartbeatLease(ctx, "c1", crashed, &snap); err != nil {
		t.Fatal(err)
	}

	// Exactly at expiry the lease no longer counts.
	sn, next := holderAt(s, "next", t0.Add(5*time.Second))
	replaced, err := sn.AcquireLease(ctx, "c1", next)
	if err != nil {
		t.Fatalf("takeover of an expired lease: %v", err)
	}
	if replaced == nil || replaced.Holder != "crashed" || replaced.Snapshot == nil || replaced.Snapshot.AsOfSeq != 3 {
		t.Fatalf("replaced = %+v, want the crashed holder's lease with its snapshot", replaced)
	}
	ls := leaseRows(t, s)
	if len(ls) != 1 || ls[0].Holder != "next" || ls[0].Snapshot != nil || ls[0].AcquiredAt != t0.UnixMilli()+5000 {
		t.Fatalf("after takeover: %+v, want a fresh lease of holder next without a snapshot", ls)
	}

	// The old holder comes back: it may neither renew nor release.
	for name, call := range map[string]func() error{
		"heartbeat": func() error { return s.HeartbeatLease(ctx, "c1", crashed, nil) },
		"publish":   func() error { return s.HeartbeatLease(ctx, "c1", crashed, &snap) },
		"release":   func() error { return s.ReleaseLease(ctx, "c1", crashed) },
	} {
		err := call()
		if !errors.Is(err, backend.ErrLeaseLost) || dsherr.CodeOf(err) != dsherr.NotDelivered {
			t.Errorf("%s by the replaced holder = %v, want NOT_DELIVERED wrapping backend.ErrLeaseLost", name, err)
		}
	}
	if after := leaseRows(t, s); fmt.Sprint(after) != fmt.Sprint(ls) {
		t.Fatalf("the replaced holder changed the lease: %+v", after)
	}
}

func TestHeartbeatPublishRelease(t *testing.T) {
	ctx := context.Background()
	s, path := openStore(t)
	createRoot(t, s, "p")
	child := rootHeader("c1")
	child.ParentSession = ptr("p")
	child.Origin = ptr(session.OriginSubagent)
	child.DelegationDepth = ptr(int64(1))
	if err := s.CreateSession(ctx, child, nil); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	h := backend.LeaseHolder{ID: "h", PID: 7, Host: "box", TTL: time.Hour}
	if _, err := s.WithClock(func() time.Time { return now }).AcquireLease(ctx, "c1", h); err != nil {
		t.Fatal(err)
	}

	// Before anything is published the session is live without a snapshot.
	ro := openRO(t, path)
	live, err := ro.LiveSessions(ctx)
	if err != nil {
		t.Fatalf("LiveSessions: %v", err)
	}
	got, ok := live["c1"]
	if len(live) != 1 || !ok || got.Subagent != nil || got.Holder != "h" || got.Header.Witness() != child.Witness() {
		t.Fatalf("LiveSessions = %+v, want c1 held by h with its header and no snapshot", live)
	}

	later := now.Add(2 * time.Second)
	view := json.RawMessage(`{"mode":"continuable","label":"work","seq":0}`)
	if err := s.WithClock(func() time.Time { return later }).HeartbeatLease(ctx, "c1", h, &backend.LiveSnapshot{Subagent: view, AsOfSeq: 12}); err != nil {
		t.Fatalf("HeartbeatLease with snapshot: %v", err)
	}
	ls := leaseRows(t, s)
	if ls[0].HeartbeatAt != later.UnixMilli() || ls[0].ExpiresAt != later.Add(time.Hour).UnixMilli() || ls[0].AcquiredAt != now.UnixMilli() {
		t.Errorf("heartbeat times = %+v", ls[0])
	}
	live, err = ro.LiveSessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := live["c1"]; string(got.Subagent) != string(view) || got.AsOfSeq != 12 || got.UnitFailure != "" {
		t.Fatalf("published snapshot = %+v", got)
	}

	// A heartbeat without a snapshot keeps the published one.
	if err := s.HeartbeatLease(ctx, "c1", h, nil); err != nil {
		t.Fatal(err)
	}
	if got := leaseRows(t, s)[0].Snapshot; got == nil || string(got.Subagent) != string(view) {
		t.Fatalf("plain heartbeat dropped the snapshot: %+v", got)
	}

	// A failed unit is published as such (null view, failure text).
	fail := backend.LiveSnapshot{Subagent: json.RawMessage(`null`), AsOfSeq: 13, UnitFailure: "projection unit \"subagent\": boom"}
	if err := s.HeartbeatLease(ctx, "c1", h, &fail); err != nil {
		t.Fatal(err)
	}
	live, _ = ro.LiveSessions(ctx)
	if got := live["c1"]; got.UnitFailure != fail.UnitFailure || string(got.Subagent) != "null" || got.AsOfSeq != 13 {
		t.Fatalf("failure snapshot = %+v", got)
	}

	if err := s.HeartbeatLease(ctx, "c1", h, &backend.LiveSnapshot{Subagent: json.RawMessage(`{"mode"`)}); dsherr.CodeOf(err) != dsherr.Internal {
		t.Errorf("publishing a view that is not JSON = %v, want INTERNAL", err)
	}

	if err := s.ReleaseLease(ctx, "c1", h); err != nil {
		t.Fatalf("ReleaseLease: %v", err)
	}
	if ls := leaseRows(t, s); len(ls) != 0 {
		t.Fatalf("leases after release: %+v", ls)
	}
	if err := s.ReleaseLease(ctx, "c1", h); !errors.Is(err, backend.ErrLeaseLost) {
		t.Errorf("second release = %v, want backend.ErrLeaseLost", err)
	}
}

func TestLiveSessionsSkipsExpired(t *testing.T) {
	ctx := context.Background()
	s, _ := openStore(t)
	for _, id := range []string{"live", "dead"} {
		createRoot(t, s, id)
	}
	if _, err := s.AcquireLease(ctx, "live", liveHolder("a")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.WithClock(func() time.Time { return time.UnixMilli(1_000_000) }).AcquireLease(ctx, "dead", liveHolder("b")); err != nil {
		t.Fatal(err)
	}
	live, err := s.LiveSessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := live["live"]; len(live) != 1 || !ok {
		t.Fatalf("LiveSessions = %v, want only the unexpired lease", live)
	}
	ls := leaseRows(t, s)
	if len(ls) != 2 || ls[0].SessionID != "dead" || !ls[0].Expired(time.Now()) || ls[1].Expired(time.Now()) {
		t.Fatalf("Leases = %+v, want the expired lease listed too, in id order", ls)
	}
}

// The lease is the condition of an append: inside one Update a lost lease
// leaves the log untouched, a held one commits events and snapshot together.
func TestHeartbeatGuardsAppend(t *testing.T) {
	ctx := context.Background()
	s, _ := openStore(t)
	createRoot(t, s, "c1")
	h := liveHolder("h")
	if _, err := s.AcquireLease(ctx, "c1", h); err != nil {
		t.Fatal(err)
	}
	batch := newLog().completeTurn("hi").events
	snap := backend.LiveSnapshot{Subagent: json.RawMessage(`null`), AsOfSeq: int64(len(batch) - 1)}
	err := s.update(ctx, func(tx *Store) error {
		if err := tx.HeartbeatLease(ctx, "c1", h, &snap); err != nil {
			return err
		}
		return tx.Append(ctx, "c1", 0, batch)
	})
	if err != nil {
		t.Fatalf("guarded append: %v", err)
	}
	if got := leaseRows(t, s)[0].Snapshot; got == nil || got.AsOfSeq != int64(len(batch)-1) {
		t.Fatalf("snapshot after guarded append = %+v", got)
	}

	// Someone takes the lease over (ours is treated as expired).
	thiefClock := func() time.Time { return time.Now().Add(2 * time.Hour) }
	if _, err := s.WithClock(thiefClock).AcquireLease(ctx, "c1", backend.LeaseHolder{ID: "thief", TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	before := dumpSession(t, s, "c1")
	more := continueFrom(batch).completeTurn("again").events
	err = s.update(ctx, func(tx *Store) error {
		if err := tx.HeartbeatLease(ctx, "c1", h, &snap); err != nil {
			return err
		}
		return tx.Append(ctx, "c1", int64(len(batch)), more)
	})
	if !errors.Is(err, backend.ErrLeaseLost) {
		t.Fatalf("append under a lost lease = %v, want backend.ErrLeaseLost", err)
	}
	if after := dumpSession(t, s, "c1"); after != before {
		t.Fatalf("append under a lost lease wrote:\n%s", after)
	}
}

// Creating a session and leasing it is one transaction: a failure after
// the lease leaves neither behind.
func TestCreateAndAcquireAtomically(t *testing.T) {
	ctx := context.Background()
	s, _ := openStore(t)
	boom := errors.New("boom")
	err := s.update(ctx, func(tx *Store) error {
		if err := tx.CreateSession(ctx, rootHeader("c1"), nil); err != nil {
			return err
		}
		if _, err := tx.AcquireLease(ctx, "c1", liveHolder("h")); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Update = %v", err)
	}
	if _, err := s.Header(ctx, "c1"); !errors.Is(err, backend.ErrNotFound) {
		t.Errorf("session survived a rolled-back create: %v", err)
	}
	if ls := leaseRows(t, s); len(ls) != 0 {
		t.Errorf("lease survived a rolled-back create: %+v", ls)
	}
}

// Many processes' connections race for one lease: exactly one wins.
func TestAcquireLeaseRace(t *testing.T) {
	ctx := context.Background()
	s, path := openStore(t)
	createRoot(t, s, "c1")
	const n = 8
	stores := make([]*Store, n)
	for i := range stores {
		stores[i] = reopen(t, path)
	}
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		won     []string
		refused int
	)
	start := make(chan struct{})
	for i, st := range stores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			id := fmt.Sprintf("h%d", i)
			_, err := st.AcquireLease(ctx, "c1", liveHolder(id))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				won = append(won, id)
			case errors.Is(err, backend.ErrLeaseHeld):
				refused++
			default:
				t.Errorf("%s: %v", id, err)
			}
		}()
	}
	close(start)
	wg.Wait()
	if len(won) != 1 || refused != n-1 {
		t.Fatalf("winners %v, refused %d; want exactly one winner", won, refused)
	}
	if ls := leaseRows(t, s); len(ls) != 1 || ls[0].Holder != won[0] {
		t.Fatalf("lease row %+v, want the winner %s", ls, won[0])
	}
}

func TestLeaseHolderChecks(t *testing.T) {
	ctx := context.Background()
	s, _ := openStore(t)
	createRoot(t, s, "c1")
	if _, err := s.AcquireLease(ctx, "c1", backend.LeaseHolder{ID: "h"}); dsherr.CodeOf(err) != dsherr.InvalidInput {
		t.Errorf("zero TTL = %v, want INVALID_INPUT", err)
	}
	if _, err := s.AcquireLease(ctx, "c1", backend.LeaseHolder{TTL: time.Second}); dsherr.CodeOf(err) != dsherr.Internal {
		t.Errorf("holder without id = %v, want INTERNAL", err)
	}
	h := backend.NewLeaseHolder(time.Second)
	if h.ID == "" || h.PID <= 0 || h.Host == "" || h.TTL != time.Second {
		t.Errorf("backend.NewLeaseHolder = %+v", h)
	}
	if backend.NewLeaseHolder(time.Second).ID == h.ID {
		t.Error("two holders share an id")
	}
}
