package sqlitepersist

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
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
// for each it returns the header and the events of the given types, read
// with one statement however many sessions there are. Sessions left out of
// the result (unknown, unverified, torn) must be read one at a time with
// InspectTypes; for the ones returned, InspectTypes would return the same
// header and events.
//
// Closers are not computed, so types must not include a type a closer can
// have (tool/result, step/end, turn/end).
func (s *Store) InspectVerifiedTypes(ctx context.Context, ids []string, types []string) (map[string]*backend.Inspection, error) {
	_, out, err := s.inspectCold(ctx, ids, types, false)
	return out, err
}

// InspectColdBatch is ColdVerdicts(ids) followed by InspectVerifiedTypes of
// the ids without a recorded verdict, in one statement: a cold listing's
// whole batch read walks the id list and the sessions by id once.
func (s *Store) InspectColdBatch(ctx context.Context, ids []string, types []string) (map[string]backend.ColdVerdict, map[string]*backend.Inspection, error) {
	return s.inspectCold(ctx, ids, types, true)
}

// inspectCold is InspectVerifiedTypes, and with verdicts InspectColdBatch.
func (s *Store) inspectCold(ctx context.Context, ids []string, types []string, verdicts bool) (map[string]backend.ColdVerdict, map[string]*backend.Inspection, error) {
	if len(types) == 0 {
		return nil, nil, fmt.Errorf("inspect verified logs: no event types given")
	}
	for _, t := range types {
		if slices.Contains(closerTypes, t) {
			return nil, nil, fmt.Errorf("inspect verified logs: type %s can be a closer's", t)
		}
	}
	recorded := map[string]backend.ColdVerdict{}
	out := make(map[string]*backend.Inspection, len(ids))
	if len(ids) == 0 {
		return recorded, out, nil
	}
	// One statement (one snapshot): each header with its typed events
	// joined by the events' key, grouped by session in seq order; a header
	// without such events comes once, with NULL event columns. With verdicts, a
	// session carrying one comes once, its events not joined: the verdict
	// stands for its read.
	filter, typeArgs := joinedTypeFilter(types)
	args := append([]any{jsjson.StringArray(ids)}, typeArgs...)
	readable := "s.verified = 1 AND NOT EXISTS (SELECT 1 FROM torn_tails t WHERE t.session_id = s.id)"
	verdictColumns, join, where := "NULL, NULL", "", readable
	if verdicts {
		verdictColumns = "s.read_failure, s.registry_fold"
		join = "s.read_failure IS NULL AND s.registry_fold IS NULL AND "
		where = "(s.read_failure IS NOT NULL OR s.registry_fold IS NOT NULL OR (" + readable + "))"
	}
	// Sessions are visited in the order of ids, not sorted by id: a
	// listing passes them in creation order, which is the order their rows
	// (and their events' rows) were inserted, so neighbouring reads share
	// pages.
	rows, err := s.Querier().QueryContext(ctx, "SELECT "+verifiedHeaderColumns+", "+verdictColumns+", "+joinedEventColumns+` FROM json_each(?1) j
		JOIN sessions s ON s.id = j.value
		LEFT JOIN events e ON `+join+`e.session_id = s.id AND `+filter+`
		WHERE `+where+`
		ORDER BY j.key, e.seq`, args...)
	if err != nil {
		return nil, nil, s.storeError(err, "inspect verified logs")
	}
	defer rows.Close()
	var (
		h       headerRow
		failure sql.NullString
		fold    []byte
		ev      joinedEvent
		last    *backend.Inspection
		headers sharedHeaders
	)
	targets := append(append(h.targets(), &failure, &fold), ev.targets()...)
	for rows.Next() {
		if err := rows.Scan(targets...); err != nil {
			return nil, nil, s.storeError(err, "inspect verified logs")
		}
		id := h.h.ID
		if v := storedlog.RecordedVerdict(id, failure.String, failure.Valid, fold); v != nil {
			recorded[id] = *v
			continue
		}
		if last == nil || last.Header.ID != id {
			last = &backend.Inspection{Header: headers.header(&h), Events: []session.Event{}, Closers: []session.Event{}, Verified: true}
			out[id] = last
		}
		r, present := ev.row()
		if !present {
			continue
		}
		e, err := r.Decode()
		if err != nil {
			return nil, nil, s.storeError(storedlog.CorruptRow(id, r.Seq, err.Error()), "inspect verified logs")
		}
		last.Events = append(last.Events, e)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, s.storeError(err, "inspect verified logs")
	}
	return recorded, out, nil
}

// joinedTypeFilter is the condition on events e of a statement whose ?1 is
// taken: the types as parameters ?2, ?3… and their values.
func joinedTypeFilter(types []string) (string, []any) {
	if len(types) == 1 && types[0] == session.TypeDescriptor {
		// A literal type lets SQLite match the partial index's WHERE clause.
		return "e.type = '" + session.TypeDescriptor + "'", nil
	}
	if storedlog.CatalogIndexed(types) {
		// The catalog index's own IN list (migration 0008), literally, so
		// that SQLite matches the partial index; the types asked for
		// narrow it.
		return storedlog.CatalogIndexFilter("e.type") + " AND " + storedlog.TypeList("e.type", types), nil
	}
	params := make([]string, len(types))
	args := make([]any, len(types))
	for k, t := range types {
		params[k] = "?" + strconv.Itoa(k+2)
		args[k] = t
	}
	return "e.type IN (" + strings.Join(params, ", ") + ")", args
}

// verifiedHeaderColumns and joinedEventColumns are sqlstore.HeaderColumns and
// eventColumns of sessions s LEFT JOIN events e.
const (
	verifiedHeaderColumns = "s.id, s.version, s.created_at, s.cwd, s.parent_session, s.seed_length, s.origin, s.delegation_depth, s.agent_preset"
	joinedEventColumns    = "e.seq, e.type, e.time, e.data, e.source_event_seqs, e.surface_op, e.ignorable, e.unknown_keys"
)

// joinedEvent scans an event row's columns from the nullable side of a
// LEFT JOIN: all NULL when the header has no matching event.
type joinedEvent struct {
	seq, time, ignorable sql.NullInt64
	typ                  sql.NullString
	r                    storedlog.Row
}

func (j *joinedEvent) targets() []any {
	return []any{&j.seq, &j.typ, &j.time, &j.r.Data, &j.r.SourceEventSeqs, &j.r.SurfaceOp, &j.ignorable, &j.r.UnknownKeys}
}

// row is the scanned event, present false for a header without one (the
// key column is NOT NULL in the table, so NULL means no joined row).
func (j *joinedEvent) row() (storedlog.Row, bool) {
	if !j.seq.Valid {
		return storedlog.Row{}, false
	}
	r := j.r
	r.Seq, r.Type, r.Time, r.Ignorable = j.seq.Int64, j.typ.String, j.time.Int64, j.ignorable.Int64
	return r, true
}
