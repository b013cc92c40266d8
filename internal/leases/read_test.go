package leases

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/sqlitepersist"
)

// Read on a real store: every lease with its holder and its own times
// (acquired and renewed apart), judged by the store's clock; with a parent,
// only the leases of that parent's children — not its grandchildren's, not
// another tree's, not the parent's own.
func TestReadKeepsTheParentsChildrenWithTheirOwnTimes(t *testing.T) {
	ctx := context.Background()
	clock := time.UnixMilli(1_700_000_000_000)
	st, err := sqlitepersist.Open(ctx, filepath.Join(t.TempDir(), "dsh.db"), sqlitepersist.Options{Clock: func() time.Time { return clock }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	header := func(id string, parent *string) session.Header {
		cwd := "/work"
		h := session.Header{Version: session.FormatVersion, ID: id, CreatedAt: 1_600_000_000_000, Cwd: &cwd, ParentSession: parent}
		if parent != nil {
			origin, depth := session.OriginSubagent, int64(1)
			h.Origin, h.DelegationDepth = &origin, &depth
		}
		return h
	}
	p, c1 := "p", "c1"
	for _, h := range []session.Header{header("p", nil), header("c1", &p), header("c2", &p), header("g", &c1), header("other", nil)} {
		if err := st.CreateSession(ctx, h, nil); err != nil {
			t.Fatal(err)
		}
	}
	holder := func(id, host string, pid int, ttl time.Duration) backend.LeaseHolder {
		return backend.LeaseHolder{ID: id, Host: host, PID: pid, TTL: ttl}
	}
	hc1 := holder("holder-c1", "host-1", 11, time.Minute)
	for _, l := range []struct {
		id string
		h  backend.LeaseHolder
	}{
		{"p", holder("holder-p", "host-p", 10, time.Minute)},
		{"c1", hc1},
		{"c2", holder("holder-c2", "host-2", 12, time.Second)},
		{"g", holder("holder-g", "host-g", 13, time.Minute)},
		{"other", holder("holder-o", "host-o", 14, time.Minute)},
	} {
		if _, err := st.AcquireLease(ctx, l.id, l.h); err != nil {
			t.Fatal(err)
		}
	}
	acquired := clock.UnixMilli()
	clock = clock.Add(5 * time.Second) // c2's lease has expired
	if err := st.HeartbeatLease(ctx, "c1", hc1, nil); err != nil {
		t.Fatal(err)
	}
	renewed := clock.UnixMilli()

	got, err := Read(ctx, st, &p)
	if err != nil {
		t.Fatal(err)
	}
	want := Table{Now: renewed, Rows: []Row{
		{SessionID: "c1", Holder: "holder-c1", Host: "host-1", PID: 11, AcquiredAt: acquired, HeartbeatAt: renewed, ExpiresAt: renewed + 60_000, State: Live},
		{SessionID: "c2", Holder: "holder-c2", Host: "host-2", PID: 12, AcquiredAt: acquired, HeartbeatAt: acquired, ExpiresAt: acquired + 1_000, State: Expired},
	}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Read(parent p) =\n%+v\nwant\n%+v", got, want)
	}
	if h := got.Holders(); len(h) != 1 || h["c1"].Holder != "holder-c1" {
		t.Errorf("Holders = %+v; want c1's holder only", h)
	}

	all, err := Read(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range all.Rows {
		ids = append(ids, r.SessionID)
	}
	if want := []string{"c1", "c2", "g", "other", "p"}; !reflect.DeepEqual(ids, want) {
		t.Errorf("Read(no parent) sessions %q, want %q", ids, want)
	}

	none := "c2"
	if empty, err := Read(ctx, st, &none); err != nil || empty.Rows == nil || len(empty.Rows) != 0 {
		t.Errorf("Read(a parent without children) = %+v, %v; want no rows (an empty list, not null)", empty, err)
	}
}
