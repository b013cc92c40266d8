package sqlstore

import (
	"context"
	"database/sql"

	"github.com/dsh-project/dsh/internal/backend"
)

// RecordTextReplaced implements backend.TextReplacementRecorder
// (migration 0010): nil clears the record.
func (c Core) RecordTextReplaced(ctx context.Context, id string, r *backend.TextReplaced) error {
	var first, events *int64
	if r != nil {
		f, n := r.FirstSeq, int64(r.Events)
		first, events = &f, &n
	}
	if err := execLater(ctx, c.db.Q(), foundRow(id), "UPDATE sessions SET text_replaced_first_seq = ?, text_replaced_events = ? WHERE id = ?", first, events, id); err != nil {
		return c.db.StoreError(err, "record the replaced text of "+id)
	}
	return nil
}

// TextReplacedOf implements backend.TextReplacementReader in one query.
func (c Core) TextReplacedOf(ctx context.Context, ids []string) (map[string]backend.TextReplaced, error) {
	out := map[string]backend.TextReplaced{}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := c.db.Q().Query(ctx, `SELECT id, text_replaced_first_seq, text_replaced_events FROM sessions
		WHERE `+c.d.InIDs("id")+` AND text_replaced_events IS NOT NULL`, c.d.IDs(ids))
	if err != nil {
		return nil, c.db.StoreError(err, "read the records of replaced text")
	}
	defer rows.Close()
	for rows.Next() {
		var (
			id     string
			first  sql.NullInt64
			events int64
		)
		if err := rows.Scan(&id, &first, &events); err != nil {
			return nil, c.db.StoreError(err, "read the records of replaced text")
		}
		out[id] = backend.TextReplaced{FirstSeq: first.Int64, Events: int(events)}
	}
	if err := rows.Err(); err != nil {
		return nil, c.db.StoreError(err, "read the records of replaced text")
	}
	return out, nil
}
