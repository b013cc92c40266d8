package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/sqlstore"
	"github.com/dsh-project/dsh/internal/storedlog"
)

// headerTargets scans the header columns straight into h: pgx sets a
// pointer field to nil for NULL, so absent stays absent.
func headerTargets(h *session.Header) []any {
	return []any{&h.ID, &h.Version, &h.CreatedAt, &h.Cwd, &h.ParentSession, &h.SeedLength, &h.Origin, &h.DelegationDepth, &h.AgentPreset}
}

// Header implements backend.HeaderReader.
func (s *Store) Header(ctx context.Context, id string) (session.Header, error) {
	if storedlog.UnstorableID(id) {
		// No store holds such an id, and PostgreSQL refuses it as a
		// parameter: unknown, as on SQLite.
		return session.Header{}, storedlog.NotFound(id)
	}
	var h session.Header
	err := s.q().QueryRow(ctx, "SELECT "+sqlstore.HeaderColumns+" FROM sessions WHERE id = $1", id).Scan(headerTargets(&h)...)
	if errors.Is(err, pgx.ErrNoRows) {
		return session.Header{}, storedlog.NotFound(id)
	}
	if err != nil {
		return session.Header{}, s.storeError(err, "read session "+id)
	}
	return h, nil
}

// ListHeaders implements backend.SessionLister: every header in insertion
// order (the identity column that stands in for SQLite's rowid).
func (s *Store) ListHeaders(ctx context.Context, fn func(session.Header) error) error {
	return s.eachHeader(ctx, fn, "list sessions", "SELECT "+sqlstore.HeaderColumns+" FROM sessions ORDER BY inserted")
}

// ChildrenOf implements backend.ChildrenReader from the sessions_by_parent
// index alone.
func (s *Store) ChildrenOf(ctx context.Context, parentID string, fn func(session.Header) error) error {
	return s.eachHeader(ctx, fn, "list children of "+parentID,
		"SELECT "+sqlstore.HeaderColumns+" FROM sessions WHERE parent_session = $1 ORDER BY created_at, id", parentID)
}

// SubtreeOf calls fn for every session reachable from root by parent links,
// in no particular order, with one recursive query (each step one range of
// the sessions_by_parent index). UNION stops parent-link cycles; root itself
// is included only when a cycle leads back to it.
func (s *Store) SubtreeOf(ctx context.Context, root string, fn func(session.Header) error) error {
	return s.eachHeader(ctx, fn, "list descendants of "+root, `WITH RECURSIVE tree(id) AS (
			SELECT id FROM sessions WHERE parent_session = $1
			UNION SELECT s.id FROM sessions s JOIN tree t ON s.parent_session = t.id)
		SELECT `+sqlstore.HeaderColumns+` FROM sessions WHERE id IN (SELECT id FROM tree)`, root)
}

// eachHeader streams a header query to fn. Outside a view a cursor stays
// open on one pooled connection while fn runs, so fn must not need another
// connection for long (the pool has several). Inside a view the rows come
// from the view's transaction, whose one connection cannot run fn's own
// queries while a cursor is open on it ("conn busy"): there the headers are
// read to the end first, then handed to fn.
func (s *Store) eachHeader(ctx context.Context, fn func(session.Header) error, what, query string, args ...any) error {
	rows, err := s.q().Query(ctx, query, args...)
	if err != nil {
		return s.storeError(err, what)
	}
	defer rows.Close()
	var buffered []session.Header
	var h session.Header
	targets := headerTargets(&h)
	for rows.Next() {
		h = session.Header{}
		if err := rows.Scan(targets...); err != nil {
			return s.storeError(err, what)
		}
		if s.tx != nil {
			buffered = append(buffered, h)
			continue
		}
		if err := fn(h); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return s.storeError(err, what)
	}
	rows.Close()
	for _, h := range buffered {
		if err := fn(h); err != nil {
			return err
		}
	}
	return nil
}

// HasSubagentChild implements backend.ChildrenReader with one probe of the
// sessions_subagent_children index.
func (s *Store) HasSubagentChild(ctx context.Context, id string) (bool, error) {
	var found bool
	err := s.q().QueryRow(ctx,
		"SELECT EXISTS (SELECT 1 FROM sessions WHERE parent_session = $1 AND origin = 'subagent')", id).Scan(&found)
	if err != nil {
		return false, s.storeError(err, "look up children of "+id)
	}
	return found, nil
}

// SubagentParents implements backend.ChildrenReader in one query.
func (s *Store) SubagentParents(ctx context.Context, ids []string) (map[string]bool, error) {
	out := make(map[string]bool)
	if len(ids) == 0 {
		return out, nil
	}
	what := fmt.Sprintf("look up children of %d sessions", len(ids))
	rows, err := s.q().Query(ctx, `SELECT DISTINCT parent_session FROM sessions
		WHERE origin = 'subagent' AND parent_session = ANY($1::text[])`, ids)
	if err != nil {
		return nil, s.storeError(err, what)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, s.storeError(err, what)
		}
		out[id] = true
	}
	if err := rows.Err(); err != nil {
		return nil, s.storeError(err, what)
	}
	return out, nil
}

// CountSessions counts the stored sessions, or only those with origin
// "subagent" when subagentOnly is set.
func (s *Store) CountSessions(ctx context.Context, subagentOnly bool) (int, error) {
	query := "SELECT count(*) FROM sessions"
	if subagentOnly {
		query += " WHERE origin = 'subagent'"
	}
	var n int
	if err := s.q().QueryRow(ctx, query).Scan(&n); err != nil {
		return 0, s.storeError(err, "count sessions")
	}
	return n, nil
}

// EachParent calls fn with every distinct parentSession value, in byte
// order: of any session, or of subagent-origin sessions when subagentOnly
// is set. It pages through the parent index, so no cursor stays open while
// fn runs.
func (s *Store) EachParent(ctx context.Context, subagentOnly bool, fn func(parent string) error) error {
	filter := "parent_session IS NOT NULL"
	if subagentOnly {
		filter = "origin = 'subagent' AND parent_session IS NOT NULL"
	}
	return s.eachDistinct(ctx, "SELECT DISTINCT parent_session FROM sessions WHERE "+filter, "parent_session", "list parents", fn)
}

// CatalogSessions calls fn, in id order, with every session whose log
// holds a subagent/catalog event. It pages through the catalog index
// (migration 0008, whose IN list the query names so that the partial index
// applies), so no cursor stays open while fn runs.
func (s *Store) CatalogSessions(ctx context.Context, fn func(id string) error) error {
	const selectIDs = "SELECT DISTINCT session_id FROM events WHERE type IN ('session/end-seed', 'subagent/catalog', 'subagent/descriptor') AND type = 'subagent/catalog'"
	return s.eachDistinct(ctx, selectIDs, "session_id", "list catalog sessions", fn)
}

// eachDistinct calls fn with every value of selectDistinct (a SELECT
// DISTINCT of column with a WHERE clause), in column order, a page at a
// time, so no cursor stays open while fn runs.
func (s *Store) eachDistinct(ctx context.Context, selectDistinct, column, what string, fn func(string) error) error {
	const page = 512
	query := selectDistinct + " AND ($1::text IS NULL OR " + column + " > $1) ORDER BY " + column + " LIMIT $2"
	var after *string
	for {
		rows, err := s.q().Query(ctx, query, after, page)
		if err != nil {
			return s.storeError(err, what)
		}
		batch, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return s.storeError(err, what)
		}
		for _, v := range batch {
			if err := fn(v); err != nil {
				return err
			}
		}
		if len(batch) < page {
			return nil
		}
		after = &batch[len(batch)-1]
	}
}

// RootHeaders calls fn for every session without a parentSession (only the
// subagent-origin ones when subagentOnly is set), in (createdAt, id) order.
func (s *Store) RootHeaders(ctx context.Context, subagentOnly bool, fn func(session.Header) error) error {
	query := "SELECT " + sqlstore.HeaderColumns + " FROM sessions WHERE parent_session IS NULL"
	if subagentOnly {
		query += " AND origin = 'subagent'"
	}
	return s.eachHeader(ctx, fn, "list root sessions", query+" ORDER BY created_at, id")
}

// SetSourceFormat records the foreign format session id was imported from
// (migration 0006), as sqlitepersist does. An unknown id wraps ErrNotFound.
func (s *Store) SetSourceFormat(ctx context.Context, id, format string) error {
	var value *string
	if format != "" {
		value = &format
	}
	tag, err := s.q().Exec(ctx, "UPDATE sessions SET source_format = $1 WHERE id = $2", value, id)
	if err != nil {
		return s.storeError(err, "record the source format of "+id)
	}
	if tag.RowsAffected() == 0 {
		return storedlog.NotFound(id)
	}
	return nil
}

// SourceFormat returns the foreign format session id was imported from,
// "" for a session dsh created itself. An unknown id wraps ErrNotFound.
func (s *Store) SourceFormat(ctx context.Context, id string) (string, error) {
	var format *string
	err := s.q().QueryRow(ctx, "SELECT source_format FROM sessions WHERE id = $1", id).Scan(&format)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", storedlog.NotFound(id)
	}
	if err != nil {
		return "", s.storeError(err, "read the source format of "+id)
	}
	if format == nil {
		return "", nil
	}
	return *format, nil
}

// UnverifyChildren marks the logs of parent's children as changed outside
// dsh's write paths, as the triggers do after a foreign edit: their next
// read validates them in full. For benchmark corpora of cold reads.
func (s *Store) UnverifyChildren(ctx context.Context, parent string) error {
	if _, err := s.q().Exec(ctx, "UPDATE sessions SET verified = false WHERE parent_session = $1", parent); err != nil {
		return s.storeError(err, "mark the children of "+parent+" unverified")
	}
	return nil
}
