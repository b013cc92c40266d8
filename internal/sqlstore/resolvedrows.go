package sqlstore

import (
	"context"
	"database/sql"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/session"
)

// The listing_rows table (migration 0014) holds each subagent child's
// resolved listing row. Its triggers add a row for every subagent child and
// make it stale on any write to what the ladder reads of the child; only
// PutResolvedRows fills one in.

// ResolvedRows implements backend.ResolvedRowReader: one range of the
// listing_rows_by_parent index, hasChildren probed in the same index.
func (c Core) ResolvedRows(ctx context.Context, parent string, fn func(backend.ResolvedRow) error) error {
	const what = "read the resolved rows of the children of a session"
	rows, err := c.db.Q().Query(ctx, `SELECT r.id, r.created_at, r.resolver, r.kind, r.reason, r.mode, r.label,
		EXISTS (SELECT 1 FROM listing_rows g WHERE g.parent = r.id)
		FROM listing_rows r WHERE r.parent = ? ORDER BY r.created_at, r.id`, parent)
	if err != nil {
		return c.db.StoreError(err, what)
	}
	defer rows.Close()
	var (
		buffered                            []backend.ResolvedRow
		buffer                              = c.db.OneCursor()
		row                                 backend.ResolvedRow
		resolver, kind, reason, mode, label sql.NullString
	)
	for rows.Next() {
		if err := rows.Scan(&row.ID, &row.CreatedAt, &resolver, &kind, &reason, &mode, &label, &row.HasChildren); err != nil {
			return c.db.StoreError(err, what)
		}
		row.Resolver, row.Kind, row.Reason, row.Mode, row.Label = resolver.String, kind.String, reason.String, mode.String, nil
		if label.Valid {
			l := label.String
			row.Label = &l
		}
		if buffer {
			buffered = append(buffered, row)
			continue
		}
		if err := fn(row); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return c.db.StoreError(err, what)
	}
	rows.Close()
	for _, r := range buffered {
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

// LockResolvedRows implements backend.ResolvedRowWriter. PostgreSQL locks
// the rows (FOR NO KEY UPDATE OF r); the migration's triggers write a
// child's row on every write to its inputs, so such a write either
// finished before the lock (and is read) or waits for the commit (and
// makes the row stale again). SQLite's write transaction holds the file's
// write lock already.
func (c Core) LockResolvedRows(ctx context.Context, ids []string, stamp string) ([]session.Header, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	query := `SELECT ` + Qualified("s", HeaderColumns) + ` FROM listing_rows r JOIN sessions s ON s.id = r.id
		WHERE (r.resolver IS NULL OR r.resolver <> ?) AND ` + c.d.InIDs("r.id") + ` ORDER BY r.id`
	if c.d.LockRow != "" {
		query += c.d.LockRow + " OF r"
	}
	var out []session.Header
	err := c.EachHeader(ctx, func(h session.Header) error {
		out = append(out, h)
		return nil
	}, "lock resolved rows", query, stamp, c.d.IDs(ids))
	return out, err
}

// PutResolvedRows implements backend.ResolvedRowWriter.
func (c Core) PutResolvedRows(ctx context.Context, rows []backend.ResolvedRow) error {
	for _, r := range rows {
		if _, err := c.db.Q().Exec(ctx, `UPDATE listing_rows SET resolver = ?, kind = ?, reason = ?, mode = ?, label = ? WHERE id = ?`,
			r.Resolver, r.Kind, optString(r.Reason), optString(r.Mode), r.Label, r.ID); err != nil {
			return c.db.StoreError(err, "write the resolved row of "+r.ID)
		}
	}
	return nil
}

// optString is s as a nil-able *string, nil for "".
func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
