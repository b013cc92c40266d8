package pgstore

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/sqlstore"
	"github.com/dsh-project/dsh/internal/storedlog"
)

// eventColumns are the events columns storedlog.Row.Targets scans, in order.
const eventColumns = "seq, type, time, data, source_event_seqs, surface_op, ignorable::int, unknown_keys"

// Inspect implements backend.LogReader in one read-only snapshot.
func (s *Store) Inspect(ctx context.Context, id string) (*backend.Inspection, error) {
	var ins *backend.Inspection
	err := s.view(ctx, func(view *Store) error {
		log, err := sqlstore.ScanLog(ctx, pgTx{view.tx}, &dialect, id, false)
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

// InspectTypes implements backend.LogReader. For a log recorded as
// verified with no torn tail it reads only the matching rows (descriptors
// through the events_descriptors index) plus the open turn, if any, for the
// closers; any other log is read and judged whole.
func (s *Store) InspectTypes(ctx context.Context, id string, types ...string) (*backend.Inspection, error) {
	if len(types) == 0 {
		return s.Inspect(ctx, id)
	}
	var ins *backend.Inspection
	err := s.view(ctx, func(view *Store) error {
		q := view.tx
		st, err := sqlstore.ReadSessionState(ctx, pgTx{q}, &dialect, id, false)
		if err != nil {
			return err
		}
		tail, err := sqlstore.ReadTornTail(ctx, pgTx{q}, id)
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

// typeFilter is the SQL condition on type for types, and its argument. A
// lone descriptor type is a literal so the planner matches the partial
// events_descriptors index.
func typeFilter(types []string) (string, []any) {
	if len(types) == 1 && types[0] == session.TypeDescriptor {
		return "type = '" + session.TypeDescriptor + "'", nil
	}
	if storedlog.CatalogIndexed(types) {
		// Constants PostgreSQL can prove imply the catalog index's
		// predicate (migration 0008).
		return storedlog.TypeList("type", types), nil
	}
	return "type = ANY($2::text[])", []any{types}
}

// inspectVerifiedTypes is InspectTypes' fast path; verified means every
// row was validated by a dsh write path and none changed since (the
// triggers of migration 0001 clear the flag on any other change).
func inspectVerifiedTypes(ctx context.Context, q querier, st sqlstore.SessionState, types []string) (*backend.Inspection, error) {
	id := st.Header.ID
	filter, args := typeFilter(types)
	events, err := decodeVerified(ctx, q, id,
		"SELECT "+eventColumns+" FROM events WHERE session_id = $1 AND "+filter+" ORDER BY seq", append([]any{id}, args...)...)
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
// last turn boundary: DSH's closer scan resets its state at every
// turn/start, so that suffix yields the same closers as the whole log.
func openTurnClosers(ctx context.Context, q querier, id string) ([]session.Event, error) {
	var seq int64
	var typ string
	err := q.QueryRow(ctx, `SELECT seq, type FROM events
		WHERE session_id = $1 AND type IN ('`+session.TypeTurnStart+`', '`+session.TypeTurnEnd+`')
		ORDER BY seq DESC LIMIT 1`, id).Scan(&seq, &typ)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && typ != session.TypeTurnStart) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	suffix, err := decodeVerified(ctx, q, id,
		"SELECT "+eventColumns+" FROM events WHERE session_id = $1 AND seq >= $2 ORDER BY seq", id, seq)
	if err != nil {
		return nil, err
	}
	return session.InterruptedTurnClosers(suffix), nil
}

// decodeVerified decodes rows of a verified log, where any undecodable row
// means the database changed behind the triggers' back.
func decodeVerified(ctx context.Context, q querier, id, query string, args ...any) ([]session.Event, error) {
	rows, err := sqlstore.DecodeRows(ctx, pgTx{q}, 0, query, args...)
	if err != nil {
		return nil, err
	}
	return storedlog.Verified(id, rows)
}

// InspectVerifiedTypes is InspectTypes for many sessions at once, limited
// to the sessions whose logs are recorded as verified and have no torn
// tail: the header and the events of the given types of each, read in one
// snapshot with two queries however many sessions there are. Sessions left
// out (unknown, unverified, torn) must be read one at a time with
// InspectTypes. Closers are not computed, so types must not include a type
// a closer can have.
func (s *Store) InspectVerifiedTypes(ctx context.Context, ids []string, types []string) (map[string]*backend.Inspection, error) {
	if len(types) == 0 {
		return nil, errors.New("inspect verified logs: no event types given")
	}
	for _, t := range types {
		if slices.Contains(storedlog.CloserTypes, t) {
			return nil, errors.New("inspect verified logs: type " + t + " can be a closer's")
		}
	}
	out := make(map[string]*backend.Inspection, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	err := s.view(ctx, func(view *Store) error {
		q := view.tx
		rows, err := q.Query(ctx, "SELECT "+sqlstore.HeaderColumns+` FROM sessions
			WHERE id = ANY($1::text[]) AND verified
			AND NOT EXISTS (SELECT 1 FROM torn_tails t WHERE t.session_id = sessions.id)`, ids)
		if err != nil {
			return err
		}
		var h session.Header
		targets := headerTargets(&h)
		for rows.Next() {
			h = session.Header{}
			if err := rows.Scan(targets...); err != nil {
				rows.Close()
				return err
			}
			out[h.ID] = &backend.Inspection{Header: h, Events: []session.Event{}, Closers: []session.Event{}, Verified: true}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		filter, args := typeFilter(types)
		evRows, err := q.Query(ctx, "SELECT session_id, "+eventColumns+` FROM events
			WHERE session_id = ANY($1::text[]) AND `+filter+` ORDER BY session_id, seq`, append([]any{ids}, args...)...)
		if err != nil {
			return err
		}
		defer evRows.Close()
		var id string
		var r storedlog.Row
		evTargets := append([]any{&id}, r.Targets()...)
		for evRows.Next() {
			r = storedlog.Row{}
			if err := evRows.Scan(evTargets...); err != nil {
				return err
			}
			in, ok := out[id]
			if !ok {
				continue // not verified: read one at a time
			}
			ev, err := r.Decode()
			if err != nil {
				return storedlog.CorruptRow(id, r.Seq, err.Error())
			}
			in.Events = append(in.Events, ev)
		}
		return evRows.Err()
	})
	if err != nil {
		return nil, s.storeError(err, "inspect verified logs")
	}
	return out, nil
}

// ColdVerdicts implements backend.ColdVerdictReader: the read failures
// recorded by the imports that stored these logs and the registry folds
// recorded by their writers (migration 0007), in one query.
func (s *Store) ColdVerdicts(ctx context.Context, ids []string) (map[string]backend.ColdVerdict, error) {
	out := map[string]backend.ColdVerdict{}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := s.q().Query(ctx, `SELECT id, read_failure, registry_fold FROM sessions
		WHERE id = ANY($1::text[]) AND (read_failure IS NOT NULL OR registry_fold IS NOT NULL)`, ids)
	if err != nil {
		return nil, s.storeError(err, "read recorded cold verdicts")
	}
	defer rows.Close()
	for rows.Next() {
		var (
			id            string
			failure, fold *string
		)
		if err := rows.Scan(&id, &failure, &fold); err != nil {
			return nil, s.storeError(err, "read recorded cold verdicts")
		}
		var (
			failureText string
			foldText    []byte
		)
		if failure != nil {
			failureText = *failure
		}
		if fold != nil {
			foldText = []byte(*fold)
		}
		if v := storedlog.RecordedVerdict(id, failureText, failure != nil, foldText); v != nil {
			out[id] = *v
		}
	}
	if err := rows.Err(); err != nil {
		return nil, s.storeError(err, "read recorded cold verdicts")
	}
	return out, nil
}

// Audit implements backend.LogReader: the raw facts of session id beside
// the verdict Inspect would give, without changing anything.
func (s *Store) Audit(ctx context.Context, id string) (*backend.AuditRead, error) {
	var a *backend.AuditRead
	err := s.view(ctx, func(view *Store) error {
		var err error
		a, err = auditOne(ctx, view.tx, id)
		return err
	})
	if err != nil {
		return nil, s.storeError(err, "audit session "+id)
	}
	return a, nil
}

func auditOne(ctx context.Context, q querier, id string) (*backend.AuditRead, error) {
	log, err := sqlstore.ScanLog(ctx, pgTx{q}, &dialect, id, false)
	var refused *backend.RefusedError
	if errors.As(err, &refused) {
		st, serr := sqlstore.ReadSessionState(ctx, pgTx{q}, &dialect, id, false)
		if serr != nil {
			return nil, serr
		}
		return &backend.AuditRead{Header: st.Header, ReadErr: err}, nil
	}
	if errors.Is(err, backend.ErrCorrupt) {
		st, serr := sqlstore.ReadSessionState(ctx, pgTx{q}, &dialect, id, false)
		if serr != nil {
			return nil, serr
		}
		gaps, gerr := seqGaps(ctx, q, id)
		if gerr != nil {
			return nil, gerr
		}
		a := &backend.AuditRead{Header: st.Header, Gaps: gaps, Verified: st.Verified, ReadErr: err}
		a.Damaged, a.Prefix, err = sqlstore.ReadDamagedPrefix(ctx, pgTx{q}, &dialect, id)
		return a, err
	}
	if err != nil {
		return nil, err
	}
	// A verified log was written contiguously by dsh and no row has
	// changed since (the triggers clear the flag on any other change),
	// so only other logs can have holes.
	var gaps []backend.SeqGap
	if !log.State.Verified {
		if gaps, err = seqGaps(ctx, q, id); err != nil {
			return nil, err
		}
	}
	return storedlog.Audit(log.State.Header, log.Events, log.Torn, log.State.Verified, gaps), nil
}

// AuditEach implements backend.BatchAuditor in a fixed number of queries
// for the whole batch, as sqlitepersist does: the sessions rows (with
// whether a torn_tails or damaged_logs entry exists), then every event row
// of every id in one stream by (session_id, seq), judged by
// storedlog.AuditBatch while it is read. The few logs an import recorded as
// torn or damaged, and a log whose rows are corrupt before its last
// turn/end, are audited after the stream by Audit's own path.
func (s *Store) AuditEach(ctx context.Context, ids []string, fn func(*backend.AuditRead) error) error {
	err := s.view(ctx, func(view *Store) error {
		q := view.tx
		states, err := auditStates(ctx, q, ids)
		if err != nil {
			return err
		}
		return storedlog.AuditEach(ctx, ids, states, func(send func(string, []storedlog.Row) error) error {
			rows, err := q.Query(ctx, "SELECT session_id, "+eventColumns+
				" FROM events WHERE session_id = ANY($1::text[]) ORDER BY session_id, seq", ids)
			if err != nil {
				return err
			}
			defer rows.Close()
			return storedlog.StreamLogs(rows, send)
		}, func(id string) (*backend.AuditRead, error) { return auditOne(ctx, q, id) }, fn)
	})
	if err != nil {
		return s.storeError(err, fmt.Sprintf("audit %d sessions", len(ids)))
	}
	return nil
}

func auditStates(ctx context.Context, q querier, ids []string) (map[string]*storedlog.AuditState, error) {
	rows, err := q.Query(ctx, "SELECT "+sqlstore.HeaderColumns+`, verified,
		EXISTS (SELECT 1 FROM torn_tails t WHERE t.session_id = s.id) OR EXISTS (SELECT 1 FROM damaged_logs d WHERE d.session_id = s.id)
			OR EXISTS (SELECT 1 FROM import_refusals r WHERE r.session_id = s.id AND r.listed)
		FROM sessions s WHERE id = ANY($1::text[])`, ids)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	states := map[string]*storedlog.AuditState{}
	for rows.Next() {
		st := &storedlog.AuditState{}
		if err := rows.Scan(append(headerTargets(&st.Header), &st.Verified, &st.Recorded)...); err != nil {
			return nil, err
		}
		states[st.Header.ID] = st
	}
	return states, rows.Err()
}

// seqGaps finds the holes in session id's stored seqs with one pass over
// its primary-key range.
func seqGaps(ctx context.Context, q querier, id string) ([]backend.SeqGap, error) {
	rows, err := q.Query(ctx, `SELECT prev + 1, seq - 1 FROM (
		SELECT seq, lag(seq, 1, -1::bigint) OVER (ORDER BY seq) AS prev
		  FROM events WHERE session_id = $1) AS s
		WHERE seq > prev + 1 ORDER BY seq`, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var gaps []backend.SeqGap
	for rows.Next() {
		var g backend.SeqGap
		if err := rows.Scan(&g.From, &g.To); err != nil {
			return nil, err
		}
		gaps = append(gaps, g)
	}
	return gaps, rows.Err()
}
