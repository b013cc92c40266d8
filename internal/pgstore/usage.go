package pgstore

import (
	"context"

	"github.com/dsh-project/dsh/internal/backend"
)

var _ backend.UsageReader = (*Store)(nil)

// usageChunk bounds the ids bound into one statement.
const usageChunk = 4096

// usageMigration creates session_usage; a catalog opened read-only may
// predate it.
const usageMigration = "session_usage"

// UsageOf implements backend.UsageReader: per chunk of ids, one query over
// session_usage (migration 0012) and the damage records beside the logs.
func (s *Store) UsageOf(ctx context.Context, ids []string, fn func(backend.SessionUsage) error) error {
	if err := s.requireMigration(ctx, usageMigration, "read the token usage of", "token totals"); err != nil {
		return err
	}
	for start := 0; start < len(ids); start += usageChunk {
		got, err := s.usageOf(ctx, ids[start:min(start+usageChunk, len(ids))])
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

func (s *Store) usageOf(ctx context.Context, ids []string) ([]backend.SessionUsage, error) {
	// One row per session and model (a session without usage: one row
	// with a NULL model), sessions in id order.
	rows, err := s.q().Query(ctx, `
		SELECT s.id,
		       coalesce((SELECT from_seq FROM torn_tails WHERE session_id = s.id), -1),
		       coalesce((SELECT from_seq FROM damaged_logs WHERE session_id = s.id), -1),
		       coalesce((SELECT bool_or(listed) FROM import_refusals WHERE session_id = s.id), false),
		       u.model, u.messages, u.input_tokens, u.output_tokens, u.cache_read_tokens, u.reasoning_tokens
		  FROM sessions AS s LEFT JOIN session_usage AS u ON u.session_id = s.id
		 WHERE s.id = ANY($1::text[])
		 ORDER BY s.id, u.model`, ids)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []backend.SessionUsage
	for rows.Next() {
		var (
			id        string
			torn, dmg int64
			refused   bool
			model     *string
			counts    [5]*int64
		)
		if err := rows.Scan(&id, &torn, &dmg, &refused, &model, &counts[0], &counts[1], &counts[2], &counts[3], &counts[4]); err != nil {
			return nil, err
		}
		if len(out) == 0 || out[len(out)-1].ID != id {
			out = append(out, backend.SessionUsage{ID: id, TornFrom: torn, DamagedFrom: dmg, Refused: refused})
		}
		if model == nil {
			continue
		}
		last := &out[len(out)-1]
		last.Models = append(last.Models, backend.ModelUsage{Model: *model, Messages: *counts[0], InputTokens: *counts[1],
			OutputTokens: *counts[2], CacheReadTokens: *counts[3], ReasoningTokens: *counts[4]})
	}
	return out, rows.Err()
}
