package sqlstore

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/storedlog"
)

// A lease is judged by the store's clock (DB.Clock: SQLite's Options.Clock,
// PostgreSQL's server clock), and acquired under the lock of its session's
// row (Dialect.LockRow), so two acquirers or an acquirer and a writer of
// the same session never decide on the same state.

const leaseColumns = "session_id, holder, pid, host, acquired_at, heartbeat_at, expires_at, subagent, as_of_seq, unit_failure"

// leaseRow holds a lease row while scanning.
type leaseRow struct {
	l    backend.Lease
	snap backend.SnapshotColumns
}

func (r *leaseRow) targets() []any {
	return []any{&r.l.SessionID, &r.l.Holder, &r.l.PID, &r.l.Host, &r.l.AcquiredAt, &r.l.HeartbeatAt, &r.l.ExpiresAt,
		&r.snap.Subagent, &r.snap.AsOfSeq, &r.snap.UnitFailure}
}

func (r *leaseRow) lease() backend.Lease {
	l := r.l
	l.Snapshot = r.snap.Snapshot()
	return l
}

// snapshotArgs are the subagent, as_of_seq and unit_failure column values.
func snapshotArgs(snap backend.LiveSnapshot) ([]any, error) {
	var (
		subagent *string
		asOf     *int64
		failure  *string
	)
	if snap.Subagent != nil {
		if !json.Valid(snap.Subagent) {
			return nil, dsherr.New(dsherr.Internal, "published subagent view is not JSON")
		}
		s, seq := string(snap.Subagent), snap.AsOfSeq
		subagent, asOf = &s, &seq
	}
	if snap.UnitFailure != "" {
		failure = &snap.UnitFailure
	}
	return []any{subagent, asOf, failure}, nil
}

// AcquireLease implements backend.Leaser: it takes the lease on session id
// for h as a compare-and-set in one write transaction (or inside the
// caller's Update, so a session can be created and leased atomically),
// with the session's row locked. A lease h already holds is renewed. An
// unexpired lease of another holder refuses the acquisition with an error
// wrapping *LeaseHeldError (code NOT_DELIVERED) and nothing is written; an
// expired one — a crashed holder — is taken over and returned as replaced.
// The new lease has no published snapshot. An unknown session is an error
// wrapping ErrNotFound.
func (c Core) AcquireLease(ctx context.Context, id string, h backend.LeaseHolder) (replaced *backend.Lease, err error) {
	if err := h.Check(); err != nil {
		return nil, err
	}
	err = c.db.Write(ctx, func(q Tx) error {
		clock, clockArgs := c.db.Clock()
		var now int64
		err := q.QueryRow(ctx, "SELECT "+clock+" FROM sessions WHERE id = ?"+c.d.LockRow, append(clockArgs, id)...).Scan(&now)
		if errors.Is(err, ErrNoRows) {
			return storedlog.NotFound(id)
		}
		if err != nil {
			return err
		}
		var cur leaseRow
		err = q.QueryRow(ctx, "SELECT "+leaseColumns+" FROM leases WHERE session_id = ?", id).Scan(cur.targets()...)
		switch {
		case errors.Is(err, ErrNoRows):
		case err != nil:
			return err
		case cur.l.Holder == h.ID:
		case cur.l.ExpiresAt > now:
			held := &backend.LeaseHeldError{Lease: cur.lease(), Now: now}
			return &dsherr.Error{Code: dsherr.NotDelivered, Msg: held.Error(), Err: held}
		default:
			l := cur.lease()
			replaced = &l
		}
		_, err = q.Exec(ctx, `INSERT INTO leases (`+leaseColumns+`)
			VALUES (?, ?, ?, ?, ?, ?, ?, NULL, NULL, NULL)
			ON CONFLICT (session_id) DO UPDATE SET holder = excluded.holder, pid = excluded.pid, host = excluded.host,
				acquired_at = excluded.acquired_at, heartbeat_at = excluded.heartbeat_at, expires_at = excluded.expires_at,
				subagent = NULL, as_of_seq = NULL, unit_failure = NULL`,
			id, h.ID, h.PID, h.Host, now, now, now+h.TTL.Milliseconds())
		return err
	})
	if err != nil {
		return nil, c.db.StoreError(err, "acquire lease on session "+id)
	}
	return replaced, nil
}

// HeartbeatLease implements backend.Leaser: it renews h's lease on session
// id for another TTL from the store's clock and, when snap is not nil,
// publishes it in the same statement. A lease that is no longer h's (taken
// over after it expired, or released) is an error wrapping ErrLeaseLost,
// and nothing is written. Called inside an Update before an append, it
// makes the append conditional on still holding the lease and publishes
// the snapshot atomically with the events it covers.
func (c Core) HeartbeatLease(ctx context.Context, id string, h backend.LeaseHolder, snap *backend.LiveSnapshot) error {
	if err := h.Check(); err != nil {
		return err
	}
	clock, clockArgs := c.db.Clock()
	set := "heartbeat_at = t.now, expires_at = t.now + ?"
	args := []any{h.TTL.Milliseconds()}
	if snap != nil {
		published, err := snapshotArgs(*snap)
		if err != nil {
			return err
		}
		set += ", subagent = ?, as_of_seq = ?, unit_failure = ?"
		args = append(args, published...)
	}
	query := "UPDATE leases SET " + set + " FROM (SELECT " + clock + " AS now) AS t WHERE session_id = ? AND holder = ?"
	args = append(append(args, clockArgs...), id, h.ID)
	err := c.db.Write(ctx, func(q Tx) error {
		return execOwned(ctx, q, id, h, query, args...)
	})
	if err != nil {
		return c.db.StoreError(err, "renew lease on session "+id)
	}
	return nil
}

// ReleaseLease implements backend.Leaser: it deletes h's lease on session
// id. A lease that is no longer h's is left alone and reported as an error
// wrapping ErrLeaseLost.
func (c Core) ReleaseLease(ctx context.Context, id string, h backend.LeaseHolder) error {
	err := c.db.Write(ctx, func(q Tx) error {
		return execOwned(ctx, q, id, h, "DELETE FROM leases WHERE session_id = ? AND holder = ?", id, h.ID)
	})
	if err != nil {
		return c.db.StoreError(err, "release lease on session "+id)
	}
	return nil
}

// execOwned runs a statement that touches only h's own lease row and turns
// "no such row" into ErrLeaseLost.
func execOwned(ctx context.Context, q Tx, id string, h backend.LeaseHolder, query string, args ...any) error {
	n, err := q.Exec(ctx, query, args...)
	if err != nil {
		return err
	}
	if n == 0 {
		return backend.LeaseLost(id, h)
	}
	return nil
}

// Leases implements backend.LeaseReader: every lease row, expired ones
// included (a crashed holder's lease stays until it is taken over), in
// session id order.
func (c Core) Leases(ctx context.Context) ([]backend.Lease, error) {
	rows, err := c.db.Q().Query(ctx, "SELECT "+leaseColumns+" FROM leases ORDER BY session_id")
	if err != nil {
		return nil, c.db.StoreError(err, "list leases")
	}
	defer rows.Close()
	var out []backend.Lease
	for rows.Next() {
		var r leaseRow
		if err := rows.Scan(r.targets()...); err != nil {
			return nil, c.db.StoreError(err, "list leases")
		}
		out = append(out, r.lease())
	}
	if err := rows.Err(); err != nil {
		return nil, c.db.StoreError(err, "list leases")
	}
	return out, nil
}

// LiveSessions implements backend.LeaseReader: every session with an
// unexpired lease, with its stored header and the holder's published
// snapshot. It reads the lease and sessions tables only, never a log.
func (c Core) LiveSessions(ctx context.Context) (map[string]backend.Live, error) {
	clock, clockArgs := c.db.Clock()
	rows, err := c.db.Q().Query(ctx,
		"SELECT "+Qualified("l", leaseColumns)+", "+Qualified("s", HeaderColumns)+
			" FROM leases l JOIN sessions s ON s.id = l.session_id WHERE l.expires_at > "+clock, clockArgs...)
	if err != nil {
		return nil, c.db.StoreError(err, "list live sessions")
	}
	defer rows.Close()
	live := map[string]backend.Live{}
	var lr leaseRow
	hs := c.d.NewHeaderScan()
	targets := append(lr.targets(), hs.Targets()...)
	for rows.Next() {
		lr = leaseRow{}
		if err := rows.Scan(targets...); err != nil {
			return nil, c.db.StoreError(err, "list live sessions")
		}
		l := lr.lease()
		rec := backend.Live{Holder: l.Holder, Header: hs.Header()}
		if snap := l.Snapshot; snap != nil {
			rec.Subagent, rec.AsOfSeq, rec.UnitFailure = snap.Subagent, snap.AsOfSeq, snap.UnitFailure
		}
		live[l.SessionID] = rec
	}
	if err := rows.Err(); err != nil {
		return nil, c.db.StoreError(err, "list live sessions")
	}
	return live, nil
}

// Qualified prefixes every column of a comma-separated list with table.
func Qualified(table, columns string) string {
	cols := strings.Split(columns, ", ")
	for i, c := range cols {
		cols[i] = table + "." + c
	}
	return strings.Join(cols, ", ")
}
