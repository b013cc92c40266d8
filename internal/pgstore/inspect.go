package pgstore

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/sqlstore"
	"github.com/dsh-project/dsh/internal/storedlog"
)

// eventColumns are the events columns storedlog.Row.Targets scans, in order.
const eventColumns = "seq, type, time, data, source_event_seqs, surface_op, ignorable::int, unknown_keys"

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
		filter, args := typeCondition(types)
		evRows, err := q.Query(ctx, rebind("SELECT session_id, "+eventColumns+` FROM events
			WHERE session_id = ANY(?::text[]) AND `+filter+` ORDER BY session_id, seq`), append([]any{ids}, args...)...)
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
		}, func(id string) (*backend.AuditRead, error) { return s.AuditOne(ctx, pgTx{q}, id) }, fn)
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
