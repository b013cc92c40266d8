package sqlstore

import (
	"context"
	"database/sql"
	"errors"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/storedlog"
)

// InsertBareHeader inserts the sessions row for h with no bookkeeping yet
// (unverified, next_seq 0, revision 0); an existing id is ErrDuplicate. A
// concurrent insert of the same id (PostgreSQL) waits for the first to
// commit and then finds it.
func InsertBareHeader(ctx context.Context, q Tx, h session.Header) error {
	return execLater(ctx, q, func(n int64) error {
		if n == 0 {
			return storedlog.Duplicate(h.ID)
		}
		return nil
	}, `INSERT INTO sessions (`+HeaderColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO NOTHING`, HeaderArgs(h)...)
}

// RecordRefusal implements backend.RefusalRecorder.
func (c Core) RecordRefusal(ctx context.Context, r backend.Refusal) error {
	r = storedlog.StorableRefusal(r)
	err := c.db.Write(ctx, func(q Tx) error {
		held, refused, err := refusalHold(ctx, q, r.ID)
		if err != nil || (held && !refused) {
			return err
		}
		listed := refused
		if r.Header != nil && r.Header.ID == r.ID && !held && storedlog.CheckStorable(*r.Header, nil) == nil {
			if err := InsertBareHeader(ctx, q, *r.Header); err != nil {
				return err
			}
			// A listing resolves a header refused as an unreadable log from
			// this recorded verdict (code INVALID_LOG) without reading
			// anything; a format refusal (UNSUPPORTED_FORMAT, a code a
			// recorded verdict does not keep) is read, and reads as itself.
			if r.Code != backend.RefusedFormat {
				if _, err := q.Exec(ctx, "UPDATE sessions SET read_failure = ? WHERE id = ?", r.Error().Error(), r.ID); err != nil {
					return err
				}
			}
			listed = true
		}
		_, err = q.Exec(ctx, `INSERT INTO import_refusals (location, session_id, code, seq, reason, listed)
			VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (location, session_id) DO UPDATE SET code = excluded.code, seq = excluded.seq,
				reason = excluded.reason, listed = excluded.listed OR import_refusals.listed`,
			r.Location, r.ID, r.Code, r.Seq, r.Reason, listed)
		return err
	})
	if err != nil {
		return c.db.StoreError(err, "record the refusal of "+r.Location)
	}
	return nil
}

// refusalHold says whether id is held as a session and whether only as a
// refused header.
func refusalHold(ctx context.Context, q Tx, id string) (held, refused bool, err error) {
	err = q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM import_refusals WHERE session_id = s.id AND listed = TRUE)
		FROM sessions s WHERE s.id = ?`, id).Scan(&refused)
	if errors.Is(err, ErrNoRows) {
		return false, false, nil
	}
	return err == nil, refused, err
}

// ClearRefusals implements backend.RefusalRecorder.
func (c Core) ClearRefusals(ctx context.Context, location, id string) error {
	err := c.db.Write(ctx, func(q Tx) error {
		if _, refused, err := refusalHold(ctx, q, id); err != nil {
			return err
		} else if refused {
			if _, err := q.Exec(ctx, "DELETE FROM sessions WHERE id = ?", id); err != nil {
				return err
			}
		}
		// The id-less records of location go too, and with them a header
		// kept for an empty id read there.
		if _, err := q.Exec(ctx, `DELETE FROM sessions WHERE id = '' AND EXISTS (SELECT 1 FROM import_refusals
			WHERE location = ? AND session_id = '' AND listed = TRUE)`, location); err != nil {
			return err
		}
		_, err := q.Exec(ctx, "DELETE FROM import_refusals WHERE session_id = ? OR (location = ? AND session_id = '')", id, location)
		return err
	})
	if err != nil {
		return c.db.StoreError(err, "clear the refusals of "+location)
	}
	return nil
}

// RefusedOnly implements backend.RefusalRecorder.
func (c Core) RefusedOnly(ctx context.Context, id string) (bool, error) {
	var refused bool
	err := c.db.Read(ctx, func(q Tx) error {
		var err error
		_, refused, err = refusalHold(ctx, q, id)
		return err
	})
	if err != nil {
		return false, c.db.StoreError(err, "read the refusals of "+id)
	}
	return refused, nil
}

// Refusals implements backend.RefusalReader.
func (c Core) Refusals(ctx context.Context, fn func(backend.Refusal) error) error {
	var all []backend.Refusal
	err := c.db.Read(ctx, func(q Tx) error {
		rows, err := q.Query(ctx, "SELECT location, session_id, code, seq, reason, listed FROM import_refusals ORDER BY location, session_id")
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var r backend.Refusal
			var seq sql.NullInt64
			if err := rows.Scan(&r.Location, &r.ID, &r.Code, &seq, &r.Reason, &r.Listed); err != nil {
				return err
			}
			r.Seq = OptInt(seq)
			all = append(all, r)
		}
		return rows.Err()
	})
	if err != nil {
		return c.db.StoreError(err, "read import refusals")
	}
	// No cursor is open while fn runs.
	for _, r := range all {
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

// ReadRefusal is the refusal a session kept only as a refused header reads
// as, nil for any other session.
func ReadRefusal(ctx context.Context, q Tx, h session.Header) (*backend.Refusal, error) {
	var r backend.Refusal
	var seq sql.NullInt64
	err := q.QueryRow(ctx, `SELECT location, code, seq, reason FROM import_refusals
		WHERE session_id = ? AND listed = TRUE ORDER BY location LIMIT 1`, h.ID).Scan(&r.Location, &r.Code, &seq, &r.Reason)
	if errors.Is(err, ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	r.ID, r.Seq, r.Listed = h.ID, OptInt(seq), true
	return &r, nil
}
