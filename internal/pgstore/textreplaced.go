package pgstore

import (
	"context"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/storedlog"
)

// RecordTextReplaced implements backend.TextReplacementRecorder
// (migration 0010): nil clears the record.
func (s *Store) RecordTextReplaced(ctx context.Context, id string, r *backend.TextReplaced) error {
	var first, events *int64
	if r != nil {
		f, n := r.FirstSeq, int64(r.Events)
		first, events = &f, &n
	}
	tag, err := s.q().Exec(ctx, "UPDATE sessions SET text_replaced_first_seq = $1, text_replaced_events = $2 WHERE id = $3", first, events, id)
	if err != nil {
		return s.storeError(err, "record the replaced text of "+id)
	}
	if tag.RowsAffected() == 0 {
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
	rows, err := s.q().Query(ctx, `SELECT id, coalesce(text_replaced_first_seq, 0), text_replaced_events FROM sessions
		WHERE id = ANY($1::text[]) AND text_replaced_events IS NOT NULL`, ids)
	if err != nil {
		return nil, s.storeError(err, "read the records of replaced text")
	}
	defer rows.Close()
	for rows.Next() {
		var (
			id            string
			first, events int64
		)
		if err := rows.Scan(&id, &first, &events); err != nil {
			return nil, s.storeError(err, "read the records of replaced text")
		}
		out[id] = backend.TextReplaced{FirstSeq: first, Events: int(events)}
	}
	if err := rows.Err(); err != nil {
		return nil, s.storeError(err, "read the records of replaced text")
	}
	return out, nil
}
