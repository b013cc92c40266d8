package sqlitepersist

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/dsh-project/dsh/internal/jsjson"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/sqlstore"
	"github.com/dsh-project/dsh/internal/storedlog"
)

// sqlstore.HeaderColumns are the sessions columns that make up a session.Header, in
// the order scanHeader reads them.
type rowScanner interface{ Scan(dest ...any) error }

// headerRow holds the nullable header columns (sqlstore.HeaderColumns)
// while scanning.
type headerRow struct {
	h              session.Header
	cwd, parent    sql.NullString
	origin, preset sql.NullString
	seedLen, depth sql.NullInt64
}

func (r *headerRow) targets() []any {
	return []any{&r.h.ID, &r.h.Version, &r.h.CreatedAt, &r.cwd, &r.parent, &r.seedLen, &r.origin, &r.depth, &r.preset}
}

func (r *headerRow) header() session.Header {
	h := r.h
	h.Cwd = optString(r.cwd)
	h.ParentSession = optString(r.parent)
	h.SeedLength = optInt(r.seedLen)
	h.Origin = optString(r.origin)
	h.DelegationDepth = optInt(r.depth)
	h.AgentPreset = optString(r.preset)
	return h
}

func optString(v sql.NullString) *string {
	if !v.Valid {
		return nil
	}
	s := v.String
	return &s
}

func optInt(v sql.NullInt64) *int64 {
	if !v.Valid {
		return nil
	}
	n := v.Int64
	return &n
}

func scanHeader(sc rowScanner) (session.Header, error) {
	var r headerRow
	if err := sc.Scan(r.targets()...); err != nil {
		return session.Header{}, err
	}
	return r.header(), nil
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// Header returns the stored header of session id; an unknown id is an error
// wrapping ErrNotFound.
func (s *Store) Header(ctx context.Context, id string) (session.Header, error) {
	h, err := scanHeader(s.Querier().QueryRowContext(ctx, "SELECT "+sqlstore.HeaderColumns+" FROM sessions WHERE id = ?", id))
	if err == sql.ErrNoRows {
		return session.Header{}, storedlog.NotFound(id)
	}
	if err != nil {
		return session.Header{}, s.storeError(err, "read session "+id)
	}
	return h, nil
}

// ListHeaders calls fn for every stored header in insertion (rowid) order,
// one row at a time. An error from fn stops the listing and is returned.
func (s *Store) ListHeaders(ctx context.Context, fn func(session.Header) error) error {
	return s.eachHeader(ctx, fn, "list sessions", "SELECT "+sqlstore.HeaderColumns+" FROM sessions ORDER BY rowid")
}

// ChildrenOf calls fn for every session whose parentSession is parentID, in
// (createdAt, id) order. The rows come from the sessions_by_parent index
// alone, so the cost depends on the number of children, not on the size of
// the store.
func (s *Store) ChildrenOf(ctx context.Context, parentID string, fn func(session.Header) error) error {
	return s.eachHeader(ctx, fn, "list children of "+parentID,
		"SELECT "+sqlstore.HeaderColumns+" FROM sessions WHERE parent_session = ? ORDER BY created_at, id", parentID)
}

// SubtreeOf calls fn for every session reachable from root by parent links,
// in no particular order, with one recursive query (each step one range of
// the sessions_by_parent index). UNION stops parent-link cycles; root itself
// is included only when a cycle leads back to it.
func (s *Store) SubtreeOf(ctx context.Context, root string, fn func(session.Header) error) error {
	return s.eachHeader(ctx, fn, "list descendants of "+root, `WITH RECURSIVE tree(id) AS (
			SELECT id FROM sessions WHERE parent_session = ?
			UNION SELECT s.id FROM sessions s JOIN tree t ON s.parent_session = t.id)
		SELECT `+sqlstore.HeaderColumns+` FROM sessions WHERE id IN (SELECT id FROM tree)`, root)
}

func (s *Store) eachHeader(ctx context.Context, fn func(session.Header) error, what, query string, args ...any) error {
	rows, err := s.Querier().QueryContext(ctx, query, args...)
	if err != nil {
		return s.storeError(err, what)
	}
	defer rows.Close()
	for rows.Next() {
		h, err := scanHeader(rows)
		if err != nil {
			return s.storeError(err, what)
		}
		if err := fn(h); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return s.storeError(err, what)
	}
	return nil
}

// HasSubagentChild reports whether any session with origin "subagent" names
// id as its parent (one probe of the sessions_subagent_children index).
func (s *Store) HasSubagentChild(ctx context.Context, id string) (bool, error) {
	var found bool
	err := s.Querier().QueryRowContext(ctx,
		"SELECT EXISTS (SELECT 1 FROM sessions WHERE parent_session = ? AND origin = 'subagent')", id).Scan(&found)
	if err != nil {
		return false, s.storeError(err, "look up children of "+id)
	}
	return found, nil
}

// SubagentParents answers HasSubagentChild for many ids in one query: the
// ids among them that some subagent-origin session names as its parent (one
// probe of the sessions_subagent_children index per id, inside SQLite).
func (s *Store) SubagentParents(ctx context.Context, ids []string) (map[string]bool, error) {
	out := make(map[string]bool)
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := s.Querier().QueryContext(ctx, `SELECT DISTINCT parent_session FROM sessions
		WHERE origin = 'subagent' AND parent_session IN (SELECT value FROM json_each(?))`, jsjson.StringArray(ids))
	if err != nil {
		return nil, s.storeError(err, fmt.Sprintf("look up children of %d sessions", len(ids)))
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, s.storeError(err, fmt.Sprintf("look up children of %d sessions", len(ids)))
		}
		out[id] = true
	}
	if err := rows.Err(); err != nil {
		return nil, s.storeError(err, fmt.Sprintf("look up children of %d sessions", len(ids)))
	}
	return out, nil
}

// SetSourceFormat records the foreign format session id was imported from
// (see migration 0006): import calls it in the transaction that stores the
// session. An unknown id is an error wrapping ErrNotFound.
func (s *Store) SetSourceFormat(ctx context.Context, id, format string) error {
	res, err := s.Querier().ExecContext(ctx, "UPDATE sessions SET source_format = ? WHERE id = ?", nullIfEmpty(format), id)
	if err != nil {
		return s.storeError(err, "record the source format of "+id)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return storedlog.NotFound(id)
	}
	return nil
}

// SourceFormat returns the foreign format session id was imported from,
// "" for a session dsh created itself. An unknown id wraps ErrNotFound.
func (s *Store) SourceFormat(ctx context.Context, id string) (string, error) {
	var format sql.NullString
	err := s.Querier().QueryRowContext(ctx, "SELECT source_format FROM sessions WHERE id = ?", id).Scan(&format)
	if err == sql.ErrNoRows {
		return "", storedlog.NotFound(id)
	}
	if err != nil {
		return "", s.storeError(err, "read the source format of "+id)
	}
	return format.String, nil
}

func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}
