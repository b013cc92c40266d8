package sqlstore

import (
	"context"
	"database/sql"
	"strings"

	"github.com/dsh-project/dsh/internal/backend"
)

// The catalog_views and catalog_view_entries tables (migration 0017) hold
// what a 0.1.7 listing computes from each session's own log. Their
// triggers add a view for every session and make it stale on any write to
// that session's log or header; only PutCatalogViews fills one in.

// CatalogViews implements backend.CatalogViewReader in one read snapshot:
// the views and their entries (a probe of the views' key and a range of
// the entries' per id), then the subagent children of the back-fill views
// with their own evidence (a range of sessions_by_parent per view).
func (c Core) CatalogViews(ctx context.Context, ids []string, stamp string, fn func(backend.CatalogView) error) error {
	if len(ids) == 0 {
		return nil
	}
	var views []backend.CatalogView
	err := c.db.Read(ctx, func(q Tx) error {
		var err error
		if views, err = c.readViews(ctx, q, ids, stamp); err != nil {
			return err
		}
		return c.readViewChildren(ctx, q, views, stamp)
	})
	if err != nil {
		return err
	}
	for _, v := range views {
		if err := fn(v); err != nil {
			return err
		}
	}
	return nil
}

func (c Core) readViews(ctx context.Context, q Tx, ids []string, stamp string) ([]backend.CatalogView, error) {
	const what = "read the resolved catalogs of sessions"
	rows, err := q.Query(ctx, `SELECT v.id, v.reason, CASE WHEN v.backfill THEN 1 ELSE 0 END, v.ev_count, v.ev_descriptor,
		e.child, e.created_at, e.mode, e.label
		FROM catalog_views v LEFT JOIN catalog_view_entries e ON e.parent = v.id
		WHERE v.resolver = ? AND `+c.d.InIDs("v.id")+` ORDER BY v.id, e.ord`, stamp, c.d.IDs(ids))
	if err != nil {
		return nil, c.db.StoreError(err, what)
	}
	defer rows.Close()
	var views []backend.CatalogView
	for rows.Next() {
		var (
			id                                       string
			backfill, evCount                        int64
			reason, evDescriptor, child, mode, label sql.NullString
			createdAt                                sql.NullInt64
		)
		if err := rows.Scan(&id, &reason, &backfill, &evCount, &evDescriptor, &child, &createdAt, &mode, &label); err != nil {
			return nil, c.db.StoreError(err, what)
		}
		if len(views) == 0 || views[len(views)-1].ID != id {
			v := backend.CatalogView{ID: id, Resolver: stamp, Reason: reason.String, Backfill: backfill != 0, EvidenceCount: int(evCount)}
			if evDescriptor.Valid {
				v.EvidenceDescriptor = []byte(evDescriptor.String)
			}
			views = append(views, v)
		}
		if !child.Valid {
			continue
		}
		e := backend.CatalogEntry{ID: child.String, CreatedAt: createdAt.Int64, Mode: mode.String}
		if label.Valid {
			l := label.String
			e.Label = &l
		}
		v := &views[len(views)-1]
		v.Entries = append(v.Entries, e)
	}
	if err := rows.Err(); err != nil {
		return nil, c.db.StoreError(err, what)
	}
	return views, nil
}

// readViewChildren fills in the Children of the back-fill views that read.
func (c Core) readViewChildren(ctx context.Context, q Tx, views []backend.CatalogView, stamp string) error {
	const what = "read the subagent children of resolved catalogs"
	at := map[string]int{}
	var parents []string
	for i, v := range views {
		if v.Backfill && v.Reason == "" {
			at[v.ID] = i
			parents = append(parents, v.ID)
		}
	}
	if len(parents) == 0 {
		return nil
	}
	rows, err := q.Query(ctx, `SELECT s.parent_session, s.id, s.created_at,
		CASE WHEN c.resolver = ? THEN 1 ELSE 0 END, c.ev_count, c.ev_descriptor
		FROM sessions s LEFT JOIN catalog_views c ON c.id = s.id
		WHERE s.origin = 'subagent' AND `+c.d.InIDs("s.parent_session"), stamp, c.d.IDs(parents))
	if err != nil {
		return c.db.StoreError(err, what)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			parent       string
			k            backend.CatalogChild
			current      int64
			evCount      sql.NullInt64
			evDescriptor sql.NullString
		)
		if err := rows.Scan(&parent, &k.ID, &k.CreatedAt, &current, &evCount, &evDescriptor); err != nil {
			return c.db.StoreError(err, what)
		}
		if k.Current = current != 0; k.Current {
			k.EvidenceCount = int(evCount.Int64)
			if evDescriptor.Valid {
				k.EvidenceDescriptor = []byte(evDescriptor.String)
			}
		}
		v := &views[at[parent]]
		v.Children = append(v.Children, k)
	}
	if err := rows.Err(); err != nil {
		return c.db.StoreError(err, what)
	}
	return nil
}

// LockCatalogViews implements backend.CatalogViewWriter. PostgreSQL locks
// the views (FOR NO KEY UPDATE OF v), which the migration's triggers write
// on every write to a session's log or header; SQLite's write transaction
// holds the file's write lock already.
func (c Core) LockCatalogViews(ctx context.Context, ids []string, stamp string) ([]string, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	const what = "lock resolved catalogs"
	query := `SELECT v.id FROM catalog_views v WHERE (v.resolver IS NULL OR v.resolver <> ?) AND ` + c.d.InIDs("v.id") + ` ORDER BY v.id`
	if c.d.LockRow != "" {
		query += c.d.LockRow + " OF v"
	}
	rows, err := c.db.Q().Query(ctx, query, stamp, c.d.IDs(ids))
	if err != nil {
		return nil, c.db.StoreError(err, what)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, c.db.StoreError(err, what)
		}
		out = append(out, id)
	}
	if err := rows.Err(); err != nil {
		return nil, c.db.StoreError(err, what)
	}
	return out, nil
}

// entriesPerInsert bounds one INSERT's rows (6 parameters each).
const entriesPerInsert = 256

// PutCatalogViews implements backend.CatalogViewWriter.
func (c Core) PutCatalogViews(ctx context.Context, views []backend.CatalogView) error {
	q := c.db.Q()
	for _, v := range views {
		what := "write the resolved catalog of " + v.ID
		var descriptor *string
		if v.EvidenceDescriptor != nil {
			d := string(v.EvidenceDescriptor)
			descriptor = &d
		}
		n, err := q.Exec(ctx, `UPDATE catalog_views SET resolver = ?, reason = ?, backfill = `+sqlBool(v.Backfill)+`, ev_count = ?, ev_descriptor = ? WHERE id = ?`,
			v.Resolver, optString(v.Reason), int64(v.EvidenceCount), descriptor, v.ID)
		if err != nil {
			return c.db.StoreError(err, what)
		}
		if n == 0 {
			continue
		}
		if _, err := q.Exec(ctx, `DELETE FROM catalog_view_entries WHERE parent = ?`, v.ID); err != nil {
			return c.db.StoreError(err, what)
		}
		for start := 0; start < len(v.Entries); start += entriesPerInsert {
			part := v.Entries[start:min(start+entriesPerInsert, len(v.Entries))]
			var b strings.Builder
			b.WriteString(`INSERT INTO catalog_view_entries (parent, ord, child, created_at, mode, label) VALUES `)
			args := make([]any, 0, 6*len(part))
			for i, e := range part {
				if i > 0 {
					b.WriteString(", ")
				}
				b.WriteString("(?, ?, ?, ?, ?, ?)")
				args = append(args, v.ID, int64(start+i), e.ID, e.CreatedAt, e.Mode, e.Label)
			}
			if _, err := q.Exec(ctx, b.String(), args...); err != nil {
				return c.db.StoreError(err, what)
			}
		}
	}
	return nil
}

// sqlBool is b as a literal both dialects store in the column's type
// (SQLite's TRUE and FALSE are the integers 1 and 0).
func sqlBool(b bool) string {
	if b {
		return "TRUE"
	}
	return "FALSE"
}
