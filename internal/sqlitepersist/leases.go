package sqlitepersist

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strings"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/sqlstore"
	"github.com/dsh-project/dsh/internal/storedlog"
)

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

func scanLease(sc rowScanner) (backend.Lease, error) {
	var r leaseRow
	if err := sc.Scan(r.targets()...); err != nil {
		return backend.Lease{}, err
	}
	return r.lease(), nil
}

// snapshotArgs are the subagent, as_of_seq and unit_failure column values.
func snapshotArgs(snap backend.LiveSnapshot) ([]any, error) {
	args := []any{nil, nil, nil}
	if snap.Subagent != nil {
		if !json.Valid(snap.Subagent) {
			return nil, dsherr.New(dsherr.Internal, "published subagent view is not JSON")
		}
		args[0], args[1] = string(snap.Subagent), snap.AsOfSeq
	}
	if snap.UnitFailure != "" {
		args[2] = snap.UnitFailure
	}
	return args, nil
}

// AcquireLease takes the lease on session id for h, as a compare-and-set in
// one BEGIN IMMEDIATE transaction (or inside the caller's Update, so a
// session can be created and leased atomically). A lease h already holds is
// renewed. An unexpired lease of another holder refuses the acquisition with
// an error wrapping *LeaseHeldError (code NOT_DELIVERED) and nothing is
// written; an expired one — a crashed holder — is taken over and returned as
// replaced. The new lease has no published snapshot. An unknown session is
// an error wrapping ErrNotFound.
func (s *Store) AcquireLease(ctx context.Context, id string, h backend.LeaseHolder) (replaced *backend.Lease, err error) {
	if err := h.Check(); err != nil {
		return nil, err
	}
	err = s.write(ctx, func(q Querier) error {
		var exists bool
		if err := q.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM sessions WHERE id = ?)", id).Scan(&exists); err != nil {
			return err
		}
		if !exists {
			return storedlog.NotFound(id)
		}
		now := s.now()
		cur, err := scanLease(q.QueryRowContext(ctx, "SELECT "+leaseColumns+" FROM leases WHERE session_id = ?", id))
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return err
		case cur.Holder == h.ID:
		case cur.ExpiresAt > now:
			held := &backend.LeaseHeldError{Lease: cur, Now: now}
			return &dsherr.Error{Code: dsherr.NotDelivered, Msg: held.Error(), Err: held}
		default:
			replaced = &cur
		}
		_, err = q.ExecContext(ctx, `INSERT OR REPLACE INTO leases (`+leaseColumns+`)
			VALUES (?, ?, ?, ?, ?, ?, ?, NULL, NULL, NULL)`,
			id, h.ID, h.PID, h.Host, now, now, now+h.TTL.Milliseconds())
		return err
	})
	if err != nil {
		return nil, s.storeError(err, "acquire lease on session "+id)
	}
	return replaced, nil
}

// HeartbeatLease renews h's lease on session id for another TTL and, when
// snap is not nil, publishes it in the same statement. A lease that is no
// longer h's (taken over after it expired, or released) is an error
// wrapping ErrLeaseLost, and nothing is written. Called inside a Update
// before an append, it makes the append conditional on still holding the
// lease and publishes the snapshot atomically with the events it covers.
func (s *Store) HeartbeatLease(ctx context.Context, id string, h backend.LeaseHolder, snap *backend.LiveSnapshot) error {
	if err := h.Check(); err != nil {
		return err
	}
	now := s.now()
	query := "UPDATE leases SET heartbeat_at = ?, expires_at = ? WHERE session_id = ? AND holder = ?"
	args := []any{now, now + h.TTL.Milliseconds(), id, h.ID}
	if snap != nil {
		published, err := snapshotArgs(*snap)
		if err != nil {
			return err
		}
		query = "UPDATE leases SET heartbeat_at = ?, expires_at = ?, subagent = ?, as_of_seq = ?, unit_failure = ? WHERE session_id = ? AND holder = ?"
		args = append(append(args[:2:2], published...), id, h.ID)
	}
	err := s.write(ctx, func(q Querier) error {
		return execOwned(ctx, q, id, h, query, args...)
	})
	if err != nil {
		return s.storeError(err, "renew lease on session "+id)
	}
	return nil
}

// ReleaseLease deletes h's lease on session id. A lease that is no longer
// h's is left alone and reported as an error wrapping ErrLeaseLost.
func (s *Store) ReleaseLease(ctx context.Context, id string, h backend.LeaseHolder) error {
	err := s.write(ctx, func(q Querier) error {
		return execOwned(ctx, q, id, h, "DELETE FROM leases WHERE session_id = ? AND holder = ?", id, h.ID)
	})
	if err != nil {
		return s.storeError(err, "release lease on session "+id)
	}
	return nil
}

// execOwned runs a statement that touches only h's own lease row and turns
// "no such row" into ErrLeaseLost.
func execOwned(ctx context.Context, q Querier, id string, h backend.LeaseHolder, query string, args ...any) error {
	res, err := q.ExecContext(ctx, query, args...)
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return backend.LeaseLost(id, h)
	}
	return nil
}

// Leases lists every lease row, expired ones included (a crashed holder's
// lease stays until it is taken over), in session id order.
func (s *Store) Leases(ctx context.Context) ([]backend.Lease, error) {
	rows, err := s.Querier().QueryContext(ctx, "SELECT "+leaseColumns+" FROM leases ORDER BY session_id")
	if err != nil {
		return nil, s.storeError(err, "list leases")
	}
	defer rows.Close()
	var out []backend.Lease
	for rows.Next() {
		l, err := scanLease(rows)
		if err != nil {
			return nil, s.storeError(err, "list leases")
		}
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, s.storeError(err, "list leases")
	}
	return out, nil
}

// LiveSessions implements backend.LiveSource: every session with an
// unexpired lease, with its stored header and the holder's published
// snapshot. It reads the lease and sessions tables only, never a log.
func (s *Store) LiveSessions(ctx context.Context) (map[string]backend.Live, error) {
	rows, err := s.Querier().QueryContext(ctx,
		"SELECT "+qualified("l", leaseColumns)+", "+qualified("s", sqlstore.HeaderColumns)+
			" FROM leases l JOIN sessions s ON s.id = l.session_id WHERE l.expires_at > ?",
		s.now())
	if err != nil {
		return nil, s.storeError(err, "list live sessions")
	}
	defer rows.Close()
	live := map[string]backend.Live{}
	for rows.Next() {
		var (
			lr leaseRow
			hr headerRow
		)
		if err := rows.Scan(append(lr.targets(), hr.targets()...)...); err != nil {
			return nil, s.storeError(err, "list live sessions")
		}
		l := lr.lease()
		rec := backend.Live{Holder: l.Holder, Header: hr.header()}
		if snap := l.Snapshot; snap != nil {
			rec.Subagent, rec.AsOfSeq, rec.UnitFailure = snap.Subagent, snap.AsOfSeq, snap.UnitFailure
		}
		live[l.SessionID] = rec
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
