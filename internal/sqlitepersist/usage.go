package sqlitepersist

import (
	"context"
	"database/sql"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/jsjson"
)

var _ backend.UsageReader = (*Store)(nil)

// usageChunk bounds the ids bound into one statement.
const usageChunk = 4096

// UsageOf implements backend.UsageReader: per chunk of ids, one query over
// session_usage (migration 0012) and the damage records beside the logs.
func (s *Store) UsageOf(ctx context.Context, ids []string, fn func(backend.SessionUsage) error) error {
	for start := 0; start < len(ids); start += usageChunk {
		chunk := ids[start:min(start+usageChunk, len(ids))]
		var got []backend.SessionUsage
		err := s.read(ctx, func(q Querier) error {
			var err error
			got, err = usageOf(ctx, q, chunk)
			return err
		})
		if err != nil {
			return s.storeError(err, "read the stored token usage")
		}
		for _, u := range got {
			if err := fn(u); err != nil {
				return err
			}
		}
	}
	return nil
}

func usageOf(ctx context.Context, q Querier, ids []string) ([]backend.SessionUsage, error) {
	// One row per session and model (a session without usage: one row
	// with a NULL model), sessions in id order.
	rows, err := q.QueryContext(ctx, `
		SELECT s.id,
		       coalesce((SELECT from_seq FROM torn_tails WHERE session_id = s.id), -1),
		       coalesce((SELECT from_seq FROM damaged_logs WHERE session_id = s.id), -1),
		       coalesce((SELECT max(listed) FROM import_refusals WHERE session_id = s.id), 0),
		       u.model, u.messages, u.input_tokens, u.output_tokens, u.cache_read_tokens, u.reasoning_tokens
		  FROM sessions AS s LEFT JOIN session_usage AS u ON u.session_id = s.id
		 WHERE s.id IN (SELECT value FROM json_each(?))
		 ORDER BY s.id, u.model`, jsjson.StringArray(ids))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []backend.SessionUsage
	for rows.Next() {
		var (
			id        string
			torn, dmg int64
			refused   int64
			model     sql.NullString
			m         backend.ModelUsage
			counts    [5]sql.NullInt64
		)
		if err := rows.Scan(&id, &torn, &dmg, &refused, &model, &counts[0], &counts[1], &counts[2], &counts[3], &counts[4]); err != nil {
			return nil, err
		}
		if len(out) == 0 || out[len(out)-1].ID != id {
			out = append(out, backend.SessionUsage{ID: id, TornFrom: torn, DamagedFrom: dmg, Refused: refused == 1})
		}
		if !model.Valid {
			continue
		}
		m.Model = model.String
		m.Messages, m.InputTokens, m.OutputTokens, m.CacheReadTokens, m.ReasoningTokens =
			counts[0].Int64, counts[1].Int64, counts[2].Int64, counts[3].Int64, counts[4].Int64
		last := &out[len(out)-1]
		last.Models = append(last.Models, m)
	}
	return out, rows.Err()
}
