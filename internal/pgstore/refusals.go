package pgstore

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/storedlog"
)

// The store keeps what an import refused (backend.RefusalRecorder), as
// sqlitepersist does.
var (
	_ backend.RefusalRecorder = (*Store)(nil)
	_ backend.RefusalReader   = (*Store)(nil)
)

// RecordRefusal implements backend.RefusalRecorder.
func (s *Store) RecordRefusal(ctx context.Context, r backend.Refusal) error {
	r = storedlog.StorableRefusal(r)
	err := s.update(ctx, func(view *Store) error {
		q := view.tx
		held, refused, err := refusalHold(ctx, q, r.ID)
		if err != nil || (held && !refused) {
			return err
		}
		listed := refused
		if r.Header != nil && r.Header.ID == r.ID && !held && storedlog.CheckStorable(*r.Header, nil) == nil {
			if err := insertBareHeader(ctx, q, *r.Header); err != nil {
				return err
			}
			// A listing resolves a header refused as an unreadable log from
			// this recorded verdict (code INVALID_LOG) without reading
			// anything; a format refusal (UNSUPPORTED_FORMAT, a code a
			// recorded verdict does not keep) is read, and reads as itself.
			if r.Code != backend.RefusedFormat {
				if _, err := q.Exec(ctx, "UPDATE sessions SET read_failure = $1 WHERE id = $2", r.Error().Error(), r.ID); err != nil {
					return err
				}
			}
			listed = true
		}
		_, err = q.Exec(ctx, `INSERT INTO import_refusals (location, session_id, code, seq, reason, listed)
			VALUES ($1, $2, $3, $4, $5, $6)
			ON CONFLICT (location, session_id) DO UPDATE SET code = excluded.code, seq = excluded.seq,
				reason = excluded.reason, listed = excluded.listed OR import_refusals.listed`,
			r.Location, r.ID, r.Code, r.Seq, r.Reason, listed)
		return err
	})
	if err != nil {
		return s.storeError(err, "record the refusal of "+r.Location)
	}
	return nil
}

// refusalHold says whether id is held as a session and whether only as a
// refused header.
func refusalHold(ctx context.Context, q querier, id string) (held, refused bool, err error) {
	var listed *bool
	err = q.QueryRow(ctx, `SELECT (SELECT bool_or(listed) FROM import_refusals WHERE session_id = s.id)
		FROM sessions s WHERE s.id = $1`, id).Scan(&listed)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, false, nil
	}
	return err == nil, listed != nil && *listed, err
}

// ClearRefusals implements backend.RefusalRecorder.
func (s *Store) ClearRefusals(ctx context.Context, location, id string) error {
	err := s.update(ctx, func(view *Store) error {
		q := view.tx
		if _, refused, err := refusalHold(ctx, q, id); err != nil {
			return err
		} else if refused {
			if _, err := q.Exec(ctx, "DELETE FROM sessions WHERE id = $1", id); err != nil {
				return err
			}
		}
		// The id-less records of location go too, and with them a header
		// kept for an empty id read there.
		if _, err := q.Exec(ctx, `DELETE FROM sessions WHERE id = '' AND EXISTS (SELECT 1 FROM import_refusals
			WHERE location = $1 AND session_id = '' AND listed)`, location); err != nil {
			return err
		}
		_, err := q.Exec(ctx, "DELETE FROM import_refusals WHERE session_id = $1 OR (location = $2 AND session_id = '')", id, location)
		return err
	})
	if err != nil {
		return s.storeError(err, "clear the refusals of "+location)
	}
	return nil
}

// RefusedOnly implements backend.RefusalRecorder.
func (s *Store) RefusedOnly(ctx context.Context, id string) (bool, error) {
	var refused bool
	err := s.view(ctx, func(view *Store) error {
		var err error
		_, refused, err = refusalHold(ctx, view.tx, id)
		return err
	})
	if err != nil {
		return false, s.storeError(err, "read the refusals of "+id)
	}
	return refused, nil
}

// Refusals implements backend.RefusalReader.
func (s *Store) Refusals(ctx context.Context, fn func(backend.Refusal) error) error {
	var all []backend.Refusal
	err := s.view(ctx, func(view *Store) error {
		rows, err := view.tx.Query(ctx, "SELECT location, session_id, code, seq, reason, listed FROM import_refusals ORDER BY location, session_id")
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var r backend.Refusal
			if err := rows.Scan(&r.Location, &r.ID, &r.Code, &r.Seq, &r.Reason, &r.Listed); err != nil {
				return err
			}
			all = append(all, r)
		}
		return rows.Err()
	})
	if err != nil {
		return s.storeError(err, "read import refusals")
	}
	for _, r := range all {
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

// readRefusal is the refusal a session kept only as a refused header reads
// as, nil for any other session.
func readRefusal(ctx context.Context, q querier, h session.Header) (*backend.Refusal, error) {
	var r backend.Refusal
	err := q.QueryRow(ctx, `SELECT location, code, seq, reason FROM import_refusals
		WHERE session_id = $1 AND listed ORDER BY location LIMIT 1`, h.ID).Scan(&r.Location, &r.Code, &r.Seq, &r.Reason)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	r.ID, r.Listed = h.ID, true
	return &r, nil
}
