// Package leases is who holds which session, as people and watchers read
// it: each stored lease with its holder (holder id, host, pid), when it was
// taken and renewed and when it expires, judged live or expired by the
// backend's clock (backend.LeaseReader.Now), never by the reader's. It
// reads; how a lease looks is render's business.
package leases

import (
	"context"
	"time"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/session"
)

// State says whether a lease still makes its session live.
type State string

// The two states of a lease.
const (
	Live    State = "live"
	Expired State = "expired"
)

// Row is one lease as dsh prints it (`dsh lease ls -o json`); times are
// epoch milliseconds of the backend's clock.
type Row struct {
	SessionID   string `json:"sessionId"`
	Holder      string `json:"holder"`
	Host        string `json:"host"`
	PID         int    `json:"pid"`
	AcquiredAt  int64  `json:"acquiredAt"`
	HeartbeatAt int64  `json:"heartbeatAt"`
	ExpiresAt   int64  `json:"expiresAt"`
	State       State  `json:"state"`
}

// Table is a store's leases read at one moment of its clock.
type Table struct {
	// Now is the backend's clock when the leases were judged, epoch ms.
	Now int64
	// Rows are the leases by session id, expired ones included.
	Rows []Row
}

// Source is what the leases are read from.
type Source interface {
	backend.LeaseReader
	backend.ChildrenReader
}

// Read reads every lease of src, judged at src's Now read after them (a
// lease that expires meanwhile is reported expired, as an acquirer would
// find it). With parent set, only the leases of sessions whose
// parentSession is *parent are kept.
func Read(ctx context.Context, src Source, parent *string) (Table, error) {
	ls, err := src.Leases(ctx)
	if err != nil {
		return Table{}, err
	}
	now, err := src.Now(ctx)
	if err != nil {
		return Table{}, err
	}
	var keep map[string]bool
	if parent != nil {
		keep = map[string]bool{}
		if err := src.ChildrenOf(ctx, *parent, func(h session.Header) error {
			keep[h.ID] = true
			return nil
		}); err != nil {
			return Table{}, err
		}
	}
	t := Table{Now: now.UnixMilli(), Rows: []Row{}}
	for _, l := range ls {
		if keep != nil && !keep[l.SessionID] {
			continue
		}
		t.Rows = append(t.Rows, NewRow(l, now))
	}
	return t, nil
}

// NewRow is l as dsh prints it, judged at now.
func NewRow(l backend.Lease, now time.Time) Row {
	state := Live
	if l.Expired(now) {
		state = Expired
	}
	return Row{
		SessionID:   l.SessionID,
		Holder:      l.Holder,
		Host:        l.Host,
		PID:         l.PID,
		AcquiredAt:  l.AcquiredAt,
		HeartbeatAt: l.HeartbeatAt,
		ExpiresAt:   l.ExpiresAt,
		State:       state,
	}
}

// Holders are the live leases of t, by session id.
func (t Table) Holders() map[string]Row {
	out := make(map[string]Row)
	for _, r := range t.Rows {
		if r.State == Live {
			out[r.SessionID] = r
		}
	}
	return out
}

// NextExpiry is how long after t.Now the earliest live lease expires; ok
// is false when none is live. A listing changes then without any write: a
// running child whose holder stopped renewing becomes inactive.
func (t Table) NextExpiry() (d time.Duration, ok bool) {
	var first int64
	for _, r := range t.Rows {
		if r.State == Live && (!ok || r.ExpiresAt < first) {
			first, ok = r.ExpiresAt, true
		}
	}
	return time.Duration(first-t.Now) * time.Millisecond, ok
}
