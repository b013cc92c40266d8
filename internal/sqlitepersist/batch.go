package sqlitepersist

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/jsjson"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/storedlog"
)

// closerTypes are the event types an interrupted-turn closer can have.
var closerTypes = []string{session.TypeToolResult, session.TypeStepEnd, session.TypeTurnEnd}

// InspectVerifiedTypes is InspectTypes for many sessions at once, limited to
// the sessions whose logs are recorded as verified and have no torn tail:
// for each it returns the header and the events of the given types, read in
// one snapshot with two queries however many sessions there are. Sessions
// left out of the result (unknown, unverified, torn) must be read one at a
// time with InspectTypes; for the ones returned, InspectTypes would return
// the same header and events.
//
// Closers are not computed, so types must not include a type a closer can
// have (tool/result, step/end, turn/end).
func (s *Store) InspectVerifiedTypes(ctx context.Context, ids []string, types []string) (map[string]*Inspection, error) {
	if len(types) == 0 {
		return nil, fmt.Errorf("inspect verified logs: no event types given")
	}
	for _, t := range types {
		if slices.Contains(closerTypes, t) {
			return nil, fmt.Errorf("inspect verified logs: type %s can be a closer's", t)
		}
	}
	out := make(map[string]*Inspection, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	idList := jsjson.StringArray(ids)
	err := s.ReadSnapshot(ctx, func(view *Store) error {
		q := view.tx
		rows, err := q.QueryContext(ctx, "SELECT "+headerColumns+` FROM sessions
			WHERE id IN (SELECT value FROM json_each(?)) AND verified = 1
			AND NOT EXISTS (SELECT 1 FROM torn_tails t WHERE t.session_id = sessions.id)`, idList)
		if err != nil {
			return err
		}
		for rows.Next() {
			var r headerRow
			if err := rows.Scan(r.targets()...); err != nil {
				rows.Close()
				return err
			}
			out[r.h.ID] = &Inspection{Header: r.header(), Events: []session.Event{}, Closers: []session.Event{}, Verified: true}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		return readTypedEvents(ctx, q, idList, types, out)
	})
	if err != nil {
		return nil, s.storeError(err, "inspect verified logs")
	}
	return out, nil
}

// readTypedEvents appends the events of the given types of every session in
// into to its inspection, in seq order.
func readTypedEvents(ctx context.Context, q Querier, idList string, types []string, into map[string]*Inspection) error {
	var filter string
	args := []any{idList}
	if len(types) == 1 && types[0] == session.TypeDescriptor {
		// A literal type lets SQLite match the partial index's WHERE clause.
		filter = "type = '" + session.TypeDescriptor + "'"
	} else {
		filter = "type IN (?" + strings.Repeat(", ?", len(types)-1) + ")"
		for _, t := range types {
			args = append(args, t)
		}
	}
	rows, err := q.QueryContext(ctx, "SELECT session_id, "+eventColumns+` FROM events
		WHERE session_id IN (SELECT value FROM json_each(?)) AND `+filter+`
		ORDER BY session_id, seq`, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var r storedlog.Row
		if err := rows.Scan(append([]any{&id}, r.Targets()...)...); err != nil {
			return err
		}
		in, ok := into[id]
		if !ok {
			continue // not verified: read one at a time
		}
		ev, err := r.Decode()
		if err != nil {
			return storedlog.CorruptRow(id, r.Seq, err.Error())
		}
		in.Events = append(in.Events, ev)
	}
	return rows.Err()
}

// ColdVerdicts implements backend.ColdVerdictReader: the read failures
// recorded by the imports that stored these logs and the registry folds
// recorded by their writers (migration 0007), in one query.
func (s *Store) ColdVerdicts(ctx context.Context, ids []string) (map[string]backend.ColdVerdict, error) {
	out := map[string]backend.ColdVerdict{}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := s.Querier().QueryContext(ctx, `SELECT id, read_failure, registry_fold FROM sessions
		WHERE id IN (SELECT value FROM json_each(?)) AND (read_failure IS NOT NULL OR registry_fold IS NOT NULL)`, jsjson.StringArray(ids))
	if err != nil {
		return nil, s.storeError(err, "read recorded cold verdicts")
	}
	defer rows.Close()
	for rows.Next() {
		var (
			id      string
			failure sql.NullString
			fold    []byte
		)
		if err := rows.Scan(&id, &failure, &fold); err != nil {
			return nil, s.storeError(err, "read recorded cold verdicts")
		}
		var v backend.ColdVerdict
		if failure.Valid {
			v.ReadErr = storedlog.RecordedReadFailure(id, failure.String)
		} else {
			v.RegistryFold = fold
		}
		out[id] = v
	}
	if err := rows.Err(); err != nil {
		return nil, s.storeError(err, "read recorded cold verdicts")
	}
	return out, nil
}
