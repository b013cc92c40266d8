package sqlstore

import (
	"context"
	"errors"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/storedlog"
)

// SessionState is a sessions row: the header and dsh's bookkeeping.
type SessionState struct {
	Header         session.Header
	NextSeq        int64
	Verified       bool
	ValidatorState []byte
}

// ReadSessionState reads session id's row; with lock it also takes the
// row's lock (Dialect.LockRow), which every writer of the session's log
// takes first, so writers of one session run one after the other and each
// sees the bookkeeping its predecessor committed.
func ReadSessionState(ctx context.Context, q Tx, d *Dialect, id string, lock bool) (SessionState, error) {
	var st SessionState
	query := "SELECT " + HeaderColumns + ", next_seq, verified, validator_state FROM sessions WHERE id = ?"
	if lock {
		query += d.LockRow
	}
	hs := d.NewHeaderScan()
	err := q.QueryRow(ctx, query, id).Scan(withTargets(hs, &st.NextSeq, &st.Verified, &st.ValidatorState)...)
	if errors.Is(err, ErrNoRows) {
		return st, storedlog.NotFound(id)
	}
	st.Header = hs.Header()
	return st, err
}

// ReadTornTail reads the torn tail an import kept for session id, nil when
// it has none.
func ReadTornTail(ctx context.Context, q Tx, id string) (*backend.TornTail, error) {
	var t backend.TornTail
	err := q.QueryRow(ctx, "SELECT from_seq, reason, raw FROM torn_tails WHERE session_id = ?", id).
		Scan(&t.FromSeq, &t.Reason, &t.Raw)
	if errors.Is(err, ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if t.Raw == nil {
		t.Raw = []byte{}
	}
	return &t, nil
}

// ReadDamagedLog reads what an import kept of a log damaged inside its
// committed region (migration 0005), nil when the session has none.
func ReadDamagedLog(ctx context.Context, q Tx, id string) (*backend.DamagedLog, error) {
	var d backend.DamagedLog
	err := q.QueryRow(ctx, "SELECT from_seq, reason, encoding, raw FROM damaged_logs WHERE session_id = ?", id).
		Scan(&d.FromSeq, &d.Reason, &d.Encoding, &d.Raw)
	if errors.Is(err, ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if d.Raw == nil {
		d.Raw = []byte{}
	}
	return &d, nil
}

// ReadDamagedPrefix reads an imported damaged log and the events before
// its damage, nil when the session has none.
func ReadDamagedPrefix(ctx context.Context, q Tx, d *Dialect, id string) (*backend.DamagedLog, []session.Event, error) {
	dl, err := ReadDamagedLog(ctx, q, id)
	if err != nil || dl == nil {
		return nil, nil, err
	}
	rows, err := DecodeRows(ctx, q, 0, "SELECT "+d.EventColumns+" FROM events WHERE session_id = ? ORDER BY seq", id)
	if err != nil {
		return nil, nil, err
	}
	prefix, torn, err := storedlog.Split(id, rows, nil)
	if err != nil {
		return nil, nil, err
	}
	if torn != nil {
		return nil, nil, storedlog.CorruptRow(id, torn.FromSeq, torn.Reason)
	}
	return dl, prefix, nil
}

// StoredLog is a session's log read back and split at its torn tail.
type StoredLog struct {
	State SessionState
	// Events is the contiguous decodable prefix, seqs 0..len-1.
	Events []session.Event
	Torn   *backend.TornTail
}

// ScanLog reads session id's whole log and applies DSH's commit rule
// (storedlog.Split): a row that cannot be decoded, or whose seq breaks
// contiguity, starts a torn tail when no decodable turn/end follows it,
// and is corruption otherwise. A torn_tails entry cuts the log at its
// from_seq as well; the earlier cut wins. A damaged_logs entry is
// corruption at its from_seq; a session kept only as a refused header
// reads as its refusal (backend.RefusedError). lock is ReadSessionState's.
func ScanLog(ctx context.Context, q Tx, d *Dialect, id string, lock bool) (*StoredLog, error) {
	st, err := ReadSessionState(ctx, q, d, id, lock)
	if err != nil {
		return nil, err
	}
	if !st.Verified {
		// A header kept for a session an import refused has no log to
		// read: it reads as the refusal (dsh never verifies one).
		refused, err := ReadRefusal(ctx, q, st.Header)
		if err != nil {
			return nil, err
		}
		if refused != nil {
			return nil, refused.Error()
		}
	}
	damaged, err := ReadDamagedLog(ctx, q, id)
	if err != nil {
		return nil, err
	}
	if damaged != nil {
		return nil, storedlog.CorruptRow(id, damaged.FromSeq, damaged.Reason)
	}
	imported, err := ReadTornTail(ctx, q, id)
	if err != nil {
		return nil, err
	}
	query := "SELECT " + d.EventColumns + " FROM events WHERE session_id = ? ORDER BY seq"
	args := []any{id}
	if imported != nil {
		query = "SELECT " + d.EventColumns + " FROM events WHERE session_id = ? AND seq < ? ORDER BY seq"
		args = append(args, imported.FromSeq)
	}
	rows, err := DecodeRows(ctx, q, min(st.NextSeq, 1<<16), query, args...)
	if err != nil {
		return nil, err
	}
	events, torn, err := storedlog.Split(id, rows, imported)
	if err != nil {
		return nil, err
	}
	return &StoredLog{State: st, Events: events, Torn: torn}, nil
}

// DecodeRows reads and decodes the rows of an events query
// (Dialect.EventColumns); sizeHint is the expected row count (next_seq),
// used only to preallocate.
func DecodeRows(ctx context.Context, q Tx, sizeHint int64, query string, args ...any) ([]storedlog.Decoded, error) {
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return storedlog.DecodeAll(rows, sizeHint)
}
