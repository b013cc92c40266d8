package sqlitepersist

import (
	"context"
	"fmt"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/jsjson"

	"github.com/dsh-project/dsh/internal/sqlstore"
	"github.com/dsh-project/dsh/internal/storedlog"
)

// AuditEach implements backend.BatchAuditor in a fixed number of queries
// for the whole batch: the sessions rows (with whether a torn_tails or
// damaged_logs entry exists), then every event row of every id in one
// stream by (session_id, seq), judged by storedlog.AuditBatch while it is
// read. The few logs an import recorded as torn or damaged, and a log whose
// rows are corrupt before its last turn/end, are audited after the stream
// by Audit's own path.
func (s *Store) AuditEach(ctx context.Context, ids []string, fn func(*backend.AuditRead) error) error {
	err := s.read(ctx, func(q Querier) error {
		list := jsjson.StringArray(ids)
		states, err := auditStates(ctx, q, list)
		if err != nil {
			return err
		}
		return storedlog.AuditEach(ctx, ids, states, func(send func(string, []storedlog.Row) error) error {
			rows, err := q.QueryContext(ctx, "SELECT session_id, "+eventColumns+
				" FROM events WHERE session_id IN (SELECT value FROM json_each(?)) ORDER BY session_id, seq", list)
			if err != nil {
				return err
			}
			defer rows.Close()
			return storedlog.StreamLogs(rows, send)
		}, func(id string) (*backend.AuditRead, error) { return s.AuditOne(ctx, sqliteTx{q}, id) }, fn)
	})
	if err != nil {
		return s.storeError(err, fmt.Sprintf("audit %d sessions", len(ids)))
	}
	return nil
}

func auditStates(ctx context.Context, q Querier, list string) (map[string]*storedlog.AuditState, error) {
	rows, err := q.QueryContext(ctx, "SELECT "+sqlstore.HeaderColumns+`, verified,
		EXISTS (SELECT 1 FROM torn_tails t WHERE t.session_id = s.id) OR EXISTS (SELECT 1 FROM damaged_logs d WHERE d.session_id = s.id)
			OR EXISTS (SELECT 1 FROM import_refusals r WHERE r.session_id = s.id AND r.listed = 1)
		FROM sessions s WHERE id IN (SELECT value FROM json_each(?))`, list)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	states := map[string]*storedlog.AuditState{}
	for rows.Next() {
		var r headerRow
		var verified int64
		st := &storedlog.AuditState{}
		if err := rows.Scan(append(r.targets(), &verified, &st.Recorded)...); err != nil {
			return nil, err
		}
		st.Header, st.Verified = r.header(), verified == 1
		states[st.Header.ID] = st
	}
	return states, rows.Err()
}
