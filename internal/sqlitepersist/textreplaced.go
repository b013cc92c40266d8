package sqlitepersist

import (
	"context"
	"database/sql"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/jsjson"
	"github.com/dsh-project/dsh/internal/storedlog"
)

// RecordTextReplaced implements backend.TextReplacementRecorder
// (migration 0010): nil clears the record.
func (s *Store) RecordTextReplaced(ctx context.Context, id string, r *backend.TextReplaced) error {
	var first, events any
	if r != nil {
		first, events = r.FirstSeq, r.Events
	}
	res, err := s.Querier().ExecContext(ctx, "UPDATE sessions SET text_replaced_first_seq = ?, text_replaced_events = ? WHERE id = ?", first, events, id)
	if err != nil {
		return s.storeError(err, "record the replaced text of "+id)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return storedlog.NotFound(id)
	}
	return nil
}

// TextReplacedOf implements backend.TextReplacementReader in one query.
func (s *Store) TextReplacedOf(ctx context.Context, ids []string) (map[string]backend.TextReplaced, error) {
	out := map[string]backend.TextReplaced{}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := s.Querier().QueryContext(ctx, `SELECT id, text_replaced_first_seq, text_replaced_events FROM sessions
		WHERE id IN (SELECT value FROM json_each(?)) AND text_replaced_events IS NOT NULL`, jsjson.StringArray(ids))
	if err != nil {
		return nil, s.storeError(err, "read the records of replaced text")
	}
	defer rows.Close()
	for rows.Next() {
		var (
			id    string
			first sql.NullInt64
			r     backend.TextReplaced
		)
		if err := rows.Scan(&id, &first, &r.Events); err != nil {
			return nil, s.storeError(err, "read the records of replaced text")
		}
		r.FirstSeq = first.Int64
		out[id] = r
	}
	if err := rows.Err(); err != nil {
		return nil, s.storeError(err, "read the records of replaced text")
	}
	return out, nil
}
