package sqlstore

import (
	"context"
	"database/sql"

	"github.com/dsh-project/dsh/internal/backend"
)

// usageChunk bounds the ids bound into one statement.
const usageChunk = 4096

// damageColumns are the four columns of backend.LogDamage for the session
// s (id, torn tail's and damage's first seq or -1, refused as 0/1), as the
// store records them beside its log. listed is a boolean in PostgreSQL and
// 0/1 in SQLite: the CASE reads both.
const damageColumns = `s.id,
	coalesce((SELECT from_seq FROM torn_tails WHERE session_id = s.id), -1),
	coalesce((SELECT from_seq FROM damaged_logs WHERE session_id = s.id), -1),
	coalesce((SELECT max(CASE WHEN listed THEN 1 ELSE 0 END) FROM import_refusals WHERE session_id = s.id), 0)`

// UsageOf implements backend.UsageReader: per chunk of ids, one query over
// session_usage (migration 0012) and the damage records beside the logs,
// each chunk in one snapshot.
func (c Core) UsageOf(ctx context.Context, ids []string, fn func(backend.SessionUsage) error) error {
	for start := 0; start < len(ids); start += usageChunk {
		chunk := ids[start:min(start+usageChunk, len(ids))]
		var got []backend.SessionUsage
		err := c.db.Read(ctx, func(q Tx) error {
			var err error
			got, err = c.usageOf(ctx, q, chunk)
			return err
		})
		if err != nil {
			return c.db.StoreError(err, "read the stored token usage")
		}
		for _, u := range got {
			if err := fn(u); err != nil {
				return err
			}
		}
	}
	return nil
}

func (c Core) usageOf(ctx context.Context, q Tx, ids []string) ([]backend.SessionUsage, error) {
	// One row per session and model (a session without usage: one row
	// with a NULL model), sessions in id order.
	rows, err := q.Query(ctx, `
		SELECT `+damageColumns+`,
		       u.model, u.messages, u.input_tokens, u.output_tokens, u.cache_read_tokens, u.reasoning_tokens
		  FROM sessions AS s LEFT JOIN session_usage AS u ON u.session_id = s.id
		 WHERE `+c.d.InIDs("s.id")+`
		 ORDER BY s.id, u.model`, c.d.IDs(ids))
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
			counts    [5]sql.NullInt64
		)
		if err := rows.Scan(&id, &torn, &dmg, &refused, &model, &counts[0], &counts[1], &counts[2], &counts[3], &counts[4]); err != nil {
			return nil, err
		}
		if len(out) == 0 || out[len(out)-1].ID != id {
			out = append(out, backend.SessionUsage{LogDamage: backend.LogDamage{ID: id, TornFrom: torn, DamagedFrom: dmg, Refused: refused == 1}})
		}
		if !model.Valid {
			continue
		}
		last := &out[len(out)-1]
		last.Models = append(last.Models, backend.ModelUsage{Model: model.String, Messages: counts[0].Int64,
			InputTokens: counts[1].Int64, OutputTokens: counts[2].Int64, CacheReadTokens: counts[3].Int64,
			ReasoningTokens: counts[4].Int64})
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows.Close()
	return out, c.recutUsage(ctx, q, ids, out)
}

// recutUsage corrects the totals of the logs among ids whose stored rows
// hold rows their reader cuts off with no record of it (a log dsh has not
// verified, stored past a gap): the stored totals count every row, the
// log as read only those before the cut, which is then said as the
// log's damage where nothing recorded it — never a silent sum over rows
// no reader shows.
func (c Core) recutUsage(ctx context.Context, q Tx, ids []string, out []backend.SessionUsage) error {
	at := make(map[string]int, len(out))
	for i, u := range out {
		at[u.ID] = i
	}
	var cut []backend.LogDamage
	err := c.eachUnrecordedDamage(ctx, q, " AND "+c.d.InIDs("s.id"), []any{c.d.IDs(ids)}, func(d backend.LogDamage) error {
		cut = append(cut, d)
		return nil
	})
	if err != nil {
		return err
	}
	for _, d := range cut {
		i, ok := at[d.ID]
		if !ok || out[i].Refused {
			continue
		}
		from := d.DamagedFrom
		if from < 0 {
			from = d.TornFrom
		}
		u := &out[i]
		if u.DamagedFrom < 0 && u.TornFrom < 0 {
			u.TornFrom, u.DamagedFrom = d.TornFrom, d.DamagedFrom
		}
		u.Models = nil
		err := each(ctx, q, c.d.UsageBefore, []any{d.ID, from}, func(rows Rows) error {
			var m backend.ModelUsage
			if err := rows.Scan(&m.Model, &m.Messages, &m.InputTokens, &m.OutputTokens, &m.CacheReadTokens, &m.ReasoningTokens); err != nil {
				return err
			}
			u.Models = append(u.Models, m)
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}
