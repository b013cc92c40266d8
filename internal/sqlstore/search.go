package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"

	"github.com/dsh-project/dsh/internal/backend"
)

// Search implements backend.SearchReader: one query over the index
// (migration 0013), in one snapshot. The best hits are chosen from the
// index and the sessions' fork cut alone, and only those events are read
// (reading every match's event before keeping the best took 1.6 times the
// index's own time on a word most messages hold); the events are joined
// for every match only when their type or time narrows the search.
//
// The index holds every stored row, and a log dsh has not verified (an
// import's torn or invalid log, another program's write) may store rows
// its reader cuts off: rows past a gap or an undecodable row. A hit in
// such a log is kept only when its log, read as Audit reads it, holds
// it; when that drops hits from a full page, the query runs again with a
// larger limit, so the best n are exact.
func (c Core) Search(ctx context.Context, req backend.SearchRequest, fn func(backend.SearchHit) error) error {
	where := []string{c.d.SearchMatch, "x.seq >= coalesce(s.seed_length, 0)"}
	args := []any{c.d.SearchQuery(req)}
	if req.Sessions != nil {
		where = append(where, c.d.InIDs("x.session_id"))
		args = append(args, c.d.IDs(req.Sessions))
	}
	if len(req.Types) > 0 {
		where = append(where, "f.type IN (?"+strings.Repeat(", ?", len(req.Types)-1)+")")
		for _, t := range req.Types {
			args = append(args, t)
		}
	}
	if req.Since != nil {
		where = append(where, "f.time >= ?")
		args = append(args, *req.Since)
	}
	if req.Until != nil {
		where = append(where, "f.time < ?")
		args = append(args, *req.Until)
	}
	filtered := ""
	if len(req.Types) > 0 || req.Since != nil || req.Until != nil {
		filtered = " JOIN events AS f ON f.session_id = x.session_id AND f.seq = x.seq"
	}
	limit := ""
	if req.Limit > 0 {
		limit = " LIMIT ?"
		args = append(args, req.Limit)
	}
	query := `
		SELECT e.session_id, e.seq, e.time, e.type, e.data, b.verified
		  FROM (SELECT x.session_id, x.seq, ` + c.d.SearchRank + ` AS score, s.verified
		          FROM ` + c.d.SearchFrom + `
		          JOIN sessions AS s ON s.id = x.session_id` + filtered + `
		         WHERE ` + strings.Join(where, " AND ") + `
		         ORDER BY score, x.session_id, x.seq` + limit + `) AS b
		  JOIN events AS e ON e.session_id = b.session_id AND e.seq = b.seq
		 ORDER BY b.score, b.session_id, b.seq`
	var hits []backend.SearchHit
	for n := req.Limit; ; n *= 4 {
		if req.Limit > 0 {
			args[len(args)-1] = n
		}
		var rows int
		err := c.db.Read(ctx, func(q Tx) (err error) {
			if err := c.searchSetup(ctx, q); err != nil {
				return err
			}
			hits, rows, err = c.searchPage(ctx, q, query, args)
			return err
		})
		if err != nil {
			return c.db.StoreError(err, "search the message text")
		}
		if req.Limit == 0 || rows < n || len(hits) >= req.Limit {
			break
		}
	}
	if req.Limit > 0 && len(hits) > req.Limit {
		hits = hits[:req.Limit]
	}
	for _, h := range hits {
		if err := fn(h); err != nil {
			return err
		}
	}
	return nil
}

// searchPage runs one page of Search's query and keeps the hits their
// logs hold; rows is how many the query returned.
func (c Core) searchPage(ctx context.Context, q Tx, query string, args []any) (hits []backend.SearchHit, rows int, err error) {
	unverified := map[string]bool{}
	var kept []bool
	err = each(ctx, q, query, args, func(r Rows) error {
		var h backend.SearchHit
		var data sql.NullString
		var verified bool
		if err := r.Scan(&h.SessionID, &h.Seq, &h.Time, &h.Type, &data, &verified); err != nil {
			return err
		}
		if data.Valid {
			h.Data = []byte(data.String)
		}
		hits = append(hits, h)
		kept = append(kept, verified)
		if !verified {
			unverified[h.SessionID] = true
		}
		return nil
	})
	if err != nil || len(unverified) == 0 {
		return hits, len(hits), err
	}
	// The seqs each unverified log holds as it reads.
	holds := map[string]func(int64) bool{}
	for id := range unverified {
		a, err := c.AuditOne(ctx, q, id)
		if err != nil {
			return nil, 0, err
		}
		holds[id] = readable(a)
	}
	out := hits[:0]
	for i, h := range hits {
		if kept[i] || holds[h.SessionID](h.Seq) {
			out = append(out, h)
		}
	}
	return out, len(kept), nil
}

// readable reports which seqs a log read as a holds: the events it reads
// (its valid prefix, without a torn tail), the events an import kept
// before its damage, or the rows before the first corrupt one.
func readable(a *backend.AuditRead) func(int64) bool {
	var corrupt *backend.CorruptRowError
	if a.Events == nil && a.Damaged == nil && errors.As(a.ReadErr, &corrupt) {
		return func(seq int64) bool { return seq < corrupt.Seq }
	}
	events := a.Events
	if a.Damaged != nil {
		events = a.Prefix
	}
	seqs := make(map[int64]bool, len(events))
	for _, e := range events {
		seqs[e.Seq] = true
	}
	return func(seq int64) bool { return seqs[seq] }
}

// DamagedLogs implements backend.SearchReader: the damage records beside
// the logs (torn_tails, damaged_logs, import_refusals), the unverified logs
// whose stored rows their reader cuts short without such a record, by id,
// and the ids of ids no session has.
func (c Core) DamagedLogs(ctx context.Context, ids []string, fn func(backend.LogDamage) error) error {
	filter, args := "", []any(nil)
	if ids != nil {
		filter = " AND " + c.d.InIDs("s.id")
		args = append(args, c.d.IDs(ids))
	}
	var out []backend.LogDamage
	err := c.db.Read(ctx, func(q Tx) error {
		out = out[:0]
		if err := c.searchSetup(ctx, q); err != nil {
			return err
		}
		err := each(ctx, q, `
			SELECT `+damageColumns+`
			  FROM sessions AS s
			 WHERE (EXISTS (SELECT 1 FROM torn_tails WHERE session_id = s.id)
			        OR EXISTS (SELECT 1 FROM damaged_logs WHERE session_id = s.id)
			        OR EXISTS (SELECT 1 FROM import_refusals WHERE session_id = s.id))`+filter, args, func(rows Rows) error {
			var d backend.LogDamage
			var refused int64
			if err := rows.Scan(&d.ID, &d.TornFrom, &d.DamagedFrom, &refused); err != nil {
				return err
			}
			d.Refused = refused == 1
			// A refusal that was not listed leaves the log it names whole.
			if d.TornFrom >= 0 || d.DamagedFrom >= 0 || d.Refused {
				out = append(out, d)
			}
			return nil
		})
		if err != nil {
			return err
		}
		if err := c.unrecordedDamage(ctx, q, filter, args, &out); err != nil || ids == nil {
			return err
		}
		held := make(map[string]bool, len(ids))
		err = each(ctx, q, `SELECT s.id FROM sessions AS s WHERE `+c.d.InIDs("s.id"), []any{c.d.IDs(ids)}, func(rows Rows) error {
			var id string
			err := rows.Scan(&id)
			held[id] = true
			return err
		})
		if err != nil {
			return err
		}
		for _, id := range ids {
			if !held[id] {
				held[id] = true // once, however often ids names it
				out = append(out, backend.LogDamage{ID: id, TornFrom: -1, DamagedFrom: -1, Missing: true})
			}
		}
		return nil
	})
	if err != nil {
		return c.db.StoreError(err, "read the damaged logs")
	}
	slices.SortFunc(out, func(a, b backend.LogDamage) int { return strings.Compare(a.ID, b.ID) })
	for _, d := range out {
		if err := fn(d); err != nil {
			return err
		}
	}
	return nil
}

// unrecordedDamage appends to out the logs of the filter (DamagedLogs's)
// that dsh has not verified and that store rows past a gap without a
// record of it (an import of such rows, another program's write): their
// reader cuts a torn tail off, or finds the log damaged, where Audit does.
func (c Core) unrecordedDamage(ctx context.Context, q Tx, filter string, args []any, out *[]backend.LogDamage) error {
	recorded := make(map[string]bool, len(*out))
	for _, d := range *out {
		recorded[d.ID] = true
	}
	return c.eachUnrecordedDamage(ctx, q, filter, args, func(d backend.LogDamage) error {
		if !recorded[d.ID] {
			*out = append(*out, d)
		}
		return nil
	})
}

// eachUnrecordedDamage calls fn with the damage of each log of the filter
// that dsh has not verified and that stores rows past a gap (an import of
// such rows, another program's write), as Audit reads it: a torn tail cut
// off, or a corrupt row. Such a log may have a record of its damage too
// (torn_tails, damaged_logs); the caller decides which wins.
func (c Core) eachUnrecordedDamage(ctx context.Context, q Tx, filter string, args []any, fn func(backend.LogDamage) error) error {
	var gapped []string
	err := each(ctx, q, `
		SELECT s.id FROM sessions AS s
		 WHERE NOT s.verified`+filter+`
		   AND (SELECT count(*) FROM events WHERE session_id = s.id)
		       <> coalesce((SELECT max(seq) + 1 FROM events WHERE session_id = s.id), 0)`, args, func(rows Rows) error {
		var id string
		err := rows.Scan(&id)
		gapped = append(gapped, id)
		return err
	})
	if err != nil {
		return err
	}
	for _, id := range gapped {
		a, err := c.AuditOne(ctx, q, id)
		if err != nil {
			return err
		}
		var corrupt *backend.CorruptRowError
		switch {
		case a.Torn != nil:
			err = fn(backend.LogDamage{ID: id, TornFrom: a.Torn.FromSeq, DamagedFrom: -1})
		case errors.As(a.ReadErr, &corrupt):
			err = fn(backend.LogDamage{ID: id, TornFrom: -1, DamagedFrom: corrupt.Seq})
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// searchSetup runs the dialect's SearchSetup, if any.
func (c Core) searchSetup(ctx context.Context, q Tx) error {
	if c.d.SearchSetup == "" {
		return nil
	}
	_, err := q.Exec(ctx, c.d.SearchSetup)
	return err
}

// each runs query and calls fn on each of its rows.
func each(ctx context.Context, q Tx, query string, args []any, fn func(Rows) error) error {
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}
