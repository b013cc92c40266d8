package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/sqlstore"
	"github.com/dsh-project/dsh/internal/storedlog"
)

// serverMillis is the database server's clock in epoch milliseconds. It is
// the only clock leases are judged by: holders on different machines never
// compare their own clocks. clock_timestamp(), not now(): a transaction that
// waited for a row lock must not judge expiry at the time it began.
const serverMillis = "(extract(epoch FROM clock_timestamp()) * 1000)::bigint"

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

// Now implements backend.Leaser: the database server's clock.
func (s *Store) Now(ctx context.Context) (time.Time, error) {
	var ms int64
	if err := s.q().QueryRow(ctx, "SELECT "+serverMillis).Scan(&ms); err != nil {
		return time.Time{}, s.storeError(err, "read the server's clock")
	}
	return time.UnixMilli(ms), nil
}

// AcquireLease implements backend.Leaser as a compare-and-set: the
// session's row is locked (every acquirer and writer of the session takes
// that lock first), the current lease is judged against the server's
// clock, and the new one is written, all in one transaction.
func (s *Store) AcquireLease(ctx context.Context, id string, h backend.LeaseHolder) (replaced *backend.Lease, err error) {
	if err := h.Check(); err != nil {
		return nil, err
	}
	err = s.update(ctx, func(view *Store) error {
		q := view.tx
		var now int64
		err := q.QueryRow(ctx, "SELECT "+serverMillis+" FROM sessions WHERE id = $1 FOR NO KEY UPDATE", id).Scan(&now)
		if errors.Is(err, pgx.ErrNoRows) {
			return storedlog.NotFound(id)
		}
		if err != nil {
			return err
		}
		var cur leaseRow
		err = q.QueryRow(ctx, "SELECT "+leaseColumns+" FROM leases WHERE session_id = $1", id).Scan(cur.targets()...)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
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
			VALUES ($1, $2, $3, $4, $5, $5, $6, NULL, NULL, NULL)
			ON CONFLICT (session_id) DO UPDATE SET holder = EXCLUDED.holder, pid = EXCLUDED.pid, host = EXCLUDED.host,
				acquired_at = EXCLUDED.acquired_at, heartbeat_at = EXCLUDED.heartbeat_at, expires_at = EXCLUDED.expires_at,
				subagent = NULL, as_of_seq = NULL, unit_failure = NULL`,
			id, h.ID, h.PID, h.Host, now, now+h.TTL.Milliseconds())
		return err
	})
	if err != nil {
		return nil, s.storeError(err, "acquire lease on session "+id)
	}
	return replaced, nil
}

// HeartbeatLease implements backend.Leaser with one conditional update
// judged by the server's clock.
func (s *Store) HeartbeatLease(ctx context.Context, id string, h backend.LeaseHolder, snap *backend.LiveSnapshot) error {
	if err := h.Check(); err != nil {
		return err
	}
	ttl := h.TTL.Milliseconds()
	query := `UPDATE leases SET heartbeat_at = t.now, expires_at = t.now + $1
		FROM (SELECT ` + serverMillis + ` AS now) AS t WHERE session_id = $2 AND holder = $3`
	args := []any{ttl, id, h.ID}
	if snap != nil {
		published, err := snapshotArgs(*snap)
		if err != nil {
			return err
		}
		query = `UPDATE leases SET heartbeat_at = t.now, expires_at = t.now + $1,
			subagent = $4, as_of_seq = $5, unit_failure = $6
			FROM (SELECT ` + serverMillis + ` AS now) AS t WHERE session_id = $2 AND holder = $3`
		args = append(args, published...)
	}
	err := s.update(ctx, func(view *Store) error {
		return execOwned(ctx, view.tx, id, h, query, args...)
	})
	if err != nil {
		return s.storeError(err, "renew lease on session "+id)
	}
	return nil
}

// ReleaseLease implements backend.Leaser.
func (s *Store) ReleaseLease(ctx context.Context, id string, h backend.LeaseHolder) error {
	err := s.update(ctx, func(view *Store) error {
		return execOwned(ctx, view.tx, id, h, "DELETE FROM leases WHERE session_id = $1 AND holder = $2", id, h.ID)
	})
	if err != nil {
		return s.storeError(err, "release lease on session "+id)
	}
	return nil
}

// execOwned runs a statement that touches only h's own lease row and turns
// "no such row" into ErrLeaseLost.
func execOwned(ctx context.Context, q querier, id string, h backend.LeaseHolder, query string, args ...any) error {
	tag, err := q.Exec(ctx, query, args...)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return backend.LeaseLost(id, h)
	}
	return nil
}

// Leases implements backend.Leaser.
func (s *Store) Leases(ctx context.Context) ([]backend.Lease, error) {
	rows, err := s.q().Query(ctx, "SELECT "+leaseColumns+" FROM leases ORDER BY session_id")
	if err != nil {
		return nil, s.storeError(err, "list leases")
	}
	defer rows.Close()
	var out []backend.Lease
	for rows.Next() {
		var r leaseRow
		if err := rows.Scan(r.targets()...); err != nil {
			return nil, s.storeError(err, "list leases")
		}
		out = append(out, r.lease())
	}
	if err := rows.Err(); err != nil {
		return nil, s.storeError(err, "list leases")
	}
	return out, nil
}

// LiveSessions implements backend.Leaser from the lease and sessions
// tables only, never a log.
func (s *Store) LiveSessions(ctx context.Context) (map[string]backend.Live, error) {
	rows, err := s.q().Query(ctx,
		"SELECT "+qualified("l", leaseColumns)+", "+qualified("s", sqlstore.HeaderColumns)+
			" FROM leases l JOIN sessions s ON s.id = l.session_id WHERE l.expires_at > "+serverMillis)
	if err != nil {
		return nil, s.storeError(err, "list live sessions")
	}
	defer rows.Close()
	live := map[string]backend.Live{}
	for rows.Next() {
		var lr leaseRow
		var rec backend.Live
		targets := append(lr.targets(), headerTargets(&rec.Header)...)
		if err := rows.Scan(targets...); err != nil {
			return nil, s.storeError(err, "list live sessions")
		}
		l := lr.lease()
		rec.Holder = l.Holder
		if snap := l.Snapshot; snap != nil {
			rec.Subagent, rec.AsOfSeq, rec.UnitFailure = snap.Subagent, snap.AsOfSeq, snap.UnitFailure
		}
		live[rec.Header.ID] = rec
	}
	if err := rows.Err(); err != nil {
		return nil, s.storeError(err, "list live sessions")
	}
	return live, nil
}

// qualified prefixes every column of a comma-separated list with table.
func qualified(table, columns string) string {
	cols := strings.Split(columns, ", ")
	for i, c := range cols {
		cols[i] = table + "." + c
	}
	return strings.Join(cols, ", ")
}
