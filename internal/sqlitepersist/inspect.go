package sqlitepersist

import (
	"context"
	"database/sql"
	"strings"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/sqlstore"
	"github.com/dsh-project/dsh/internal/storedlog"
)

func readDamagedLog(ctx context.Context, q Querier, id string) (*backend.DamagedLog, error) {
	var d backend.DamagedLog
	err := q.QueryRowContext(ctx, "SELECT from_seq, reason, encoding, raw FROM damaged_logs WHERE session_id = ?", id).
		Scan(&d.FromSeq, &d.Reason, &d.Encoding, &d.Raw)
	if err == sql.ErrNoRows {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &d, nil
}

// sessionState is a sessions row: the header and dsh's bookkeeping.
type sessionState struct {
	header         session.Header
	nextSeq        int64
	verified       bool
	validatorState []byte
}

func readSessionState(ctx context.Context, q Querier, id string) (sessionState, error) {
	var r headerRow
	var st sessionState
	var verified int64
	err := q.QueryRowContext(ctx, "SELECT "+sqlstore.HeaderColumns+", next_seq, verified, validator_state FROM sessions WHERE id = ?", id).
		Scan(append(r.targets(), &st.nextSeq, &verified, &st.validatorState)...)
	if err == sql.ErrNoRows {
		return st, storedlog.NotFound(id)
	}
	if err != nil {
		return st, err
	}
	st.header = r.header()
	st.verified = verified == 1
	return st, nil
}

func readTornTail(ctx context.Context, q Querier, id string) (*backend.TornTail, error) {
	var t backend.TornTail
	err := q.QueryRowContext(ctx, "SELECT from_seq, reason, raw FROM torn_tails WHERE session_id = ?", id).
		Scan(&t.FromSeq, &t.Reason, &t.Raw)
	if err == sql.ErrNoRows {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &t, nil
}

// storedLog is a session's log read back and split at its torn tail.
type storedLog struct {
	state sessionState
	// events is the contiguous decodable prefix, seqs 0..len-1.
	events []session.Event
	torn   *backend.TornTail
}

// scanLog reads session id's whole log and applies DSH's commit rule: a row
// that cannot be decoded, or whose seq breaks contiguity, starts a torn tail
// when no decodable turn/end follows it, and is corruption otherwise. A
// torn_tails entry cuts the log at its from_seq as well; the earlier cut wins.
// A damaged_logs entry is corruption at its from_seq; a session kept only as
// a refused header reads as its refusal (backend.RefusedError).
func scanLog(ctx context.Context, q Querier, id string) (*storedLog, error) {
	st, err := readSessionState(ctx, q, id)
	if err != nil {
		return nil, err
	}
	if !st.verified {
		// A header kept for a session an import refused has no log to
		// read: it reads as the refusal (dsh never verifies one).
		refused, err := sqlstore.ReadRefusal(ctx, sqliteTx{q}, st.header)
		if err != nil {
			return nil, err
		}
		if refused != nil {
			return nil, refused.Error()
		}
	}
	damaged, err := readDamagedLog(ctx, q, id)
	if err != nil {
		return nil, err
	}
	if damaged != nil {
		return nil, storedlog.CorruptRow(id, damaged.FromSeq, damaged.Reason)
	}
	imported, err := readTornTail(ctx, q, id)
	if err != nil {
		return nil, err
	}
	query := "SELECT " + eventColumns + " FROM events WHERE session_id = ? ORDER BY seq"
	args := []any{id}
	if imported != nil {
		query = "SELECT " + eventColumns + " FROM events WHERE session_id = ? AND seq < ? ORDER BY seq"
		args = append(args, imported.FromSeq)
	}
	rows, err := decodeRows(ctx, q, min(st.nextSeq, 1<<16), query, args...)
	if err != nil {
		return nil, err
	}
	events, torn, err := storedlog.Split(id, rows, imported)
	if err != nil {
		return nil, err
	}
	return &storedLog{state: st, events: events, torn: torn}, nil
}

// decodeRows reads and decodes the rows of an events query; sizeHint is the
// expected row count (next_seq), used only to preallocate.
func decodeRows(ctx context.Context, q Querier, sizeHint int64, query string, args ...any) ([]storedlog.Decoded, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return storedlog.DecodeAll(rows, sizeHint)
}

// Inspect reads session id without changing anything: the header, the valid
// stored prefix of its log (a torn tail is cut off in the result, not in the
// file) and the closers an interrupted turn would get. A log that fails DSH's
// validation is an error wrapping *session.ValidationError; damage before the
// last committed turn/end is an error wrapping ErrCorrupt.
func (s *Store) Inspect(ctx context.Context, id string) (*backend.Inspection, error) {
	var ins *backend.Inspection
	err := s.read(ctx, func(q Querier) error {
		log, err := scanLog(ctx, q, id)
		if err != nil {
			return err
		}
		ins, err = storedlog.Inspect(log.state.header, log.events, log.torn, log.state.verified)
		return err
	})
	if err != nil {
		return nil, s.storeError(err, "inspect session "+id)
	}
	return ins, nil
}

// InspectTypes is Inspect with Events and Closers filtered to the given
// types (all types when none are given). For a log recorded as verified with
// no torn tail it reads only the matching rows (descriptors through the
// events_descriptors index) plus the open turn, if any, for the closers.
func (s *Store) InspectTypes(ctx context.Context, id string, types ...string) (*backend.Inspection, error) {
	if len(types) == 0 {
		return s.Inspect(ctx, id)
	}
	var ins *backend.Inspection
	err := s.view(ctx, func(view *Store) error {
		q := view.tx
		st, err := readSessionState(ctx, q, id)
		if err != nil {
			return err
		}
		tail, err := readTornTail(ctx, q, id)
		if err != nil {
			return err
		}
		if st.verified && tail == nil {
			ins, err = inspectVerifiedTypes(ctx, q, st, types)
			return err
		}
		full, err := view.Inspect(ctx, id)
		if err != nil {
			return err
		}
		ins = full
		ins.Events = storedlog.FilterTypes(ins.Events, types)
		ins.Closers = storedlog.FilterTypes(ins.Closers, types)
		return nil
	})
	if err != nil {
		return nil, s.storeError(err, "inspect session "+id)
	}
	return ins, nil
}

// verifiedTypesQuery is the statement reading one session's (?1) events of
// the given types, and its type arguments: a literal predicate where a
// partial index covers the types, so that SQLite uses it.
func verifiedTypesQuery(types []string) (string, []any) {
	switch {
	case len(types) == 1 && types[0] == session.TypeDescriptor:
		return "SELECT " + eventColumns + " FROM events WHERE session_id = ? AND type = '" + session.TypeDescriptor + "' ORDER BY seq", nil
	case storedlog.CatalogIndexed(types):
		// The catalog index's predicate, literally (migration 0008).
		return "SELECT " + eventColumns + " FROM events WHERE session_id = ? AND " + storedlog.CatalogIndexFilter("type") + " AND " + storedlog.TypeList("type", types) + " ORDER BY seq", nil
	}
	args := make([]any, len(types))
	for i, t := range types {
		args[i] = t
	}
	return "SELECT " + eventColumns + " FROM events WHERE session_id = ? AND type IN (?" + strings.Repeat(", ?", len(types)-1) + ") ORDER BY seq", args
}

// inspectVerifiedTypes is InspectTypes' fast path. Its result equals the
// filtered full Inspect because verified = 1 means every row was validated
// by a dsh write path and no row changed since (the triggers of migration
// 0001 clear the flag on any other change).
func inspectVerifiedTypes(ctx context.Context, q Querier, st sessionState, types []string) (*backend.Inspection, error) {
	id := st.header.ID
	query, typeArgs := verifiedTypesQuery(types)
	args := append([]any{id}, typeArgs...)
	events, err := decodeVerified(ctx, q, id, query, args...)
	if err != nil {
		return nil, err
	}
	closers, err := openTurnClosers(ctx, q, id)
	if err != nil {
		return nil, err
	}
	return &backend.Inspection{
		Header:   st.header,
		Events:   events,
		Closers:  storedlog.FilterTypes(closers, types),
		Verified: true,
	}, nil
}

// openTurnClosers computes InterruptedTurnClosers from the rows since the
// last turn boundary: DSH's closer scan resets its state at every turn/start,
// so that suffix yields the same closers as the whole log.
func openTurnClosers(ctx context.Context, q Querier, id string) ([]session.Event, error) {
	var seq int64
	var typ string
	err := q.QueryRowContext(ctx, `SELECT seq, type FROM events
		WHERE session_id = ? AND type IN ('`+session.TypeTurnStart+`', '`+session.TypeTurnEnd+`')
		ORDER BY seq DESC LIMIT 1`, id).Scan(&seq, &typ)
	if err == sql.ErrNoRows || (err == nil && typ != session.TypeTurnStart) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	suffix, err := decodeVerified(ctx, q, id,
		"SELECT "+eventColumns+" FROM events WHERE session_id = ? AND seq >= ? ORDER BY seq", id, seq)
	if err != nil {
		return nil, err
	}
	return session.InterruptedTurnClosers(suffix), nil
}

// decodeVerified decodes rows of a verified log, where any undecodable row
// means the file changed behind the triggers' back.
func decodeVerified(ctx context.Context, q Querier, id, query string, args ...any) ([]session.Event, error) {
	rows, err := decodeRows(ctx, q, 0, query, args...)
	if err != nil {
		return nil, err
	}
	return storedlog.Verified(id, rows)
}
