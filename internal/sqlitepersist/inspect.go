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

// Inspect reads session id without changing anything: the header, the valid
// stored prefix of its log (a torn tail is cut off in the result, not in the
// file) and the closers an interrupted turn would get. A log that fails DSH's
// validation is an error wrapping *session.ValidationError; damage before the
// last committed turn/end is an error wrapping ErrCorrupt.
func (s *Store) Inspect(ctx context.Context, id string) (*backend.Inspection, error) {
	var ins *backend.Inspection
	err := s.read(ctx, func(q Querier) error {
		log, err := sqlstore.ScanLog(ctx, sqliteTx{q}, &dialect, id, false)
		if err != nil {
			return err
		}
		ins, err = storedlog.Inspect(log.State.Header, log.Events, log.Torn, log.State.Verified)
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
		st, err := sqlstore.ReadSessionState(ctx, sqliteTx{q}, &dialect, id, false)
		if err != nil {
			return err
		}
		tail, err := sqlstore.ReadTornTail(ctx, sqliteTx{q}, id)
		if err != nil {
			return err
		}
		if st.Verified && tail == nil {
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
func inspectVerifiedTypes(ctx context.Context, q Querier, st sqlstore.SessionState, types []string) (*backend.Inspection, error) {
	id := st.Header.ID
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
		Header:   st.Header,
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
	rows, err := sqlstore.DecodeRows(ctx, sqliteTx{q}, 0, query, args...)
	if err != nil {
		return nil, err
	}
	return storedlog.Verified(id, rows)
}
