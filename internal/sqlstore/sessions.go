package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/storedlog"
)

// Header implements backend.HeaderReader; an unknown id is an error
// wrapping ErrNotFound.
func (c Core) Header(ctx context.Context, id string) (session.Header, error) {
	if storedlog.UnstorableID(id) {
		// No store holds such an id, and PostgreSQL refuses it as a
		// parameter: unknown.
		return session.Header{}, storedlog.NotFound(id)
	}
	hs := c.d.NewHeaderScan()
	err := c.db.Q().QueryRow(ctx, "SELECT "+HeaderColumns+" FROM sessions WHERE id = ?", id).Scan(hs.Targets()...)
	if errors.Is(err, ErrNoRows) {
		return session.Header{}, storedlog.NotFound(id)
	}
	if err != nil {
		return session.Header{}, c.db.StoreError(err, "read session "+id)
	}
	return hs.Header(), nil
}

// ListHeaders implements backend.SessionLister: every stored header in
// insertion order (Dialect.InsertionOrder), one row at a time. An error
// from fn stops the listing and is returned.
func (c Core) ListHeaders(ctx context.Context, fn func(session.Header) error) error {
	return c.EachHeader(ctx, fn, "list sessions", "SELECT "+HeaderColumns+" FROM sessions ORDER BY "+c.d.InsertionOrder)
}

// ChildrenOf implements backend.ChildrenReader: every session whose
// parentSession is parentID, in (createdAt, id) order. The rows come from
// the sessions_by_parent index alone, so the cost depends on the number of
// children, not on the size of the store.
func (c Core) ChildrenOf(ctx context.Context, parentID string, fn func(session.Header) error) error {
	return c.EachHeader(ctx, fn, "list children of "+parentID,
		"SELECT "+HeaderColumns+" FROM sessions WHERE parent_session = ? ORDER BY created_at, id", parentID)
}

// ChildrenAfter implements backend.ChildrenPager: one range of the
// sessions_by_parent index, resumed after the key, as ChildrenOf orders
// it.
func (c Core) ChildrenAfter(ctx context.Context, parentID string, after *backend.ChildKey, limit int, fn func(session.Header) error) error {
	const query = "SELECT " + HeaderColumns + " FROM sessions WHERE parent_session = ?"
	const order = " ORDER BY created_at, id LIMIT ?"
	what := "list children of " + parentID
	if after == nil {
		return c.EachHeader(ctx, fn, what, query+order, parentID, limit)
	}
	return c.EachHeader(ctx, fn, what, query+" AND (created_at, id) > (?, ?)"+order,
		parentID, after.CreatedAt, after.ID, limit)
}

// SubtreeOf calls fn for every session reachable from root by parent links,
// in no particular order, with one recursive query (each step one range of
// the sessions_by_parent index). UNION stops parent-link cycles; root itself
// is included only when a cycle leads back to it.
func (c Core) SubtreeOf(ctx context.Context, root string, fn func(session.Header) error) error {
	return c.EachHeader(ctx, fn, "list descendants of "+root, `WITH RECURSIVE tree(id) AS (
			SELECT id FROM sessions WHERE parent_session = ?
			UNION SELECT s.id FROM sessions s JOIN tree t ON s.parent_session = t.id)
		SELECT `+HeaderColumns+` FROM sessions WHERE id IN (SELECT id FROM tree)`, root)
}

// RootHeaders implements backend.SessionLister: every session without a
// parentSession (only the subagent-origin ones when subagentOnly is set),
// in (createdAt, id) order.
func (c Core) RootHeaders(ctx context.Context, subagentOnly bool, fn func(session.Header) error) error {
	query := "SELECT " + HeaderColumns + " FROM sessions WHERE parent_session IS NULL"
	if subagentOnly {
		query += " AND origin = 'subagent'"
	}
	return c.EachHeader(ctx, fn, "list root sessions", query+" ORDER BY created_at, id")
}

// EachHeader streams the headers query selects (HeaderColumns) to fn.
// Where the store's connection cannot run fn's own statements while a
// cursor is open on it (DB.OneCursor), the headers are read to the end
// first, then handed to fn.
func (c Core) EachHeader(ctx context.Context, fn func(session.Header) error, what, query string, args ...any) error {
	rows, err := c.db.Q().Query(ctx, query, args...)
	if err != nil {
		return c.db.StoreError(err, what)
	}
	defer rows.Close()
	buffer := c.db.OneCursor()
	var buffered []session.Header
	hs := c.d.NewHeaderScan()
	targets := hs.Targets()
	for rows.Next() {
		if err := rows.Scan(targets...); err != nil {
			return c.db.StoreError(err, what)
		}
		if buffer {
			buffered = append(buffered, hs.Header())
			continue
		}
		if err := fn(hs.Header()); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return c.db.StoreError(err, what)
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
func (c Core) HasSubagentChild(ctx context.Context, id string) (bool, error) {
	var found bool
	err := c.db.Q().QueryRow(ctx,
		"SELECT EXISTS (SELECT 1 FROM sessions WHERE parent_session = ? AND origin = 'subagent')", id).Scan(&found)
	if err != nil {
		return false, c.db.StoreError(err, "look up children of "+id)
	}
	return found, nil
}

// SubagentParents implements backend.ChildrenReader in one query: the ids
// among ids that some subagent-origin session names as its parent (one
// probe of the sessions_subagent_children index per id).
func (c Core) SubagentParents(ctx context.Context, ids []string) (map[string]bool, error) {
	out := make(map[string]bool)
	if len(ids) == 0 {
		return out, nil
	}
	what := fmt.Sprintf("look up children of %d sessions", len(ids))
	rows, err := c.db.Q().Query(ctx, `SELECT DISTINCT parent_session FROM sessions
		WHERE origin = 'subagent' AND `+c.d.InIDs("parent_session"), c.d.IDs(ids))
	if err != nil {
		return nil, c.db.StoreError(err, what)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, c.db.StoreError(err, what)
		}
		out[id] = true
	}
	if err := rows.Err(); err != nil {
		return nil, c.db.StoreError(err, what)
	}
	return out, nil
}

// CountSessions implements backend.SessionLister: the stored sessions, or
// only those with origin "subagent" when subagentOnly is set.
func (c Core) CountSessions(ctx context.Context, subagentOnly bool) (int, error) {
	query := "SELECT count(*) FROM sessions"
	if subagentOnly {
		query += " WHERE origin = 'subagent'"
	}
	var n int
	if err := c.db.Q().QueryRow(ctx, query).Scan(&n); err != nil {
		return 0, c.db.StoreError(err, "count sessions")
	}
	return n, nil
}

// HasSessions implements backend.SessionLister: one probe of the sessions
// table, where count(*) would visit every row of a million-session store.
func (c Core) HasSessions(ctx context.Context) (bool, error) {
	var any int
	err := c.db.Q().QueryRow(ctx, "SELECT 1 FROM sessions LIMIT 1").Scan(&any)
	if errors.Is(err, ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, c.db.StoreError(err, "look for a session")
	}
	return true, nil
}

// EachParent implements backend.SessionLister: every distinct
// parentSession value, in byte order, of any session or of subagent-origin
// sessions when subagentOnly is set. It pages through the parent index, so
// no cursor stays open while fn runs.
func (c Core) EachParent(ctx context.Context, subagentOnly bool, fn func(parent string) error) error {
	filter := "parent_session IS NOT NULL"
	if subagentOnly {
		filter = "origin = 'subagent' AND parent_session IS NOT NULL"
	}
	return c.eachDistinct(ctx, "SELECT DISTINCT parent_session FROM sessions WHERE "+filter, "parent_session", "list parents", fn)
}

// CatalogSessions calls fn, in id order, with every session whose log
// holds a subagent/catalog event. It pages through the catalog index
// (migration 0008, whose IN list the query names so that the partial index
// applies), so no cursor stays open while fn runs.
func (c Core) CatalogSessions(ctx context.Context, fn func(id string) error) error {
	const selectIDs = "SELECT DISTINCT session_id FROM events WHERE type IN ('session/end-seed', 'subagent/catalog', 'subagent/descriptor') AND type = 'subagent/catalog'"
	return c.eachDistinct(ctx, selectIDs, "session_id", "list catalog sessions", fn)
}

// eachDistinct calls fn with every value of selectDistinct (a SELECT
// DISTINCT of column with a WHERE clause), in column order, a page at a
// time, so no cursor stays open while fn runs.
func (c Core) eachDistinct(ctx context.Context, selectDistinct, column, what string, fn func(string) error) error {
	const page = 512
	first := selectDistinct + " ORDER BY " + column + " LIMIT ?"
	next := selectDistinct + " AND " + column + " > ? ORDER BY " + column + " LIMIT ?"
	var after *string
	for {
		var rows Rows
		var err error
		if after == nil {
			rows, err = c.db.Q().Query(ctx, first, page)
		} else {
			rows, err = c.db.Q().Query(ctx, next, *after, page)
		}
		if err != nil {
			return c.db.StoreError(err, what)
		}
		var batch []string
		for rows.Next() {
			var v string
			if err := rows.Scan(&v); err != nil {
				rows.Close()
				return c.db.StoreError(err, what)
			}
			batch = append(batch, v)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return c.db.StoreError(err, what)
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

// SetSourceFormat records the foreign format session id was imported from
// (migration 0006): import calls it in the transaction that stores the
// session. An unknown id is an error wrapping ErrNotFound.
func (c Core) SetSourceFormat(ctx context.Context, id, format string) error {
	var value *string
	if format != "" {
		value = &format
	}
	if err := execLater(ctx, c.db.Q(), foundRow(id), "UPDATE sessions SET source_format = ? WHERE id = ?", value, id); err != nil {
		return c.db.StoreError(err, "record the source format of "+id)
	}
	return nil
}

// SourceFormat returns the foreign format session id was imported from,
// "" for a session dsh created itself. An unknown id wraps ErrNotFound.
func (c Core) SourceFormat(ctx context.Context, id string) (string, error) {
	var format sql.NullString
	err := c.db.Q().QueryRow(ctx, "SELECT source_format FROM sessions WHERE id = ?", id).Scan(&format)
	if errors.Is(err, ErrNoRows) {
		return "", storedlog.NotFound(id)
	}
	if err != nil {
		return "", c.db.StoreError(err, "read the source format of "+id)
	}
	return format.String, nil
}

// UnverifyChildren marks the logs of parent's children as changed outside
// dsh's write paths, as the triggers do after a foreign edit: their next
// read validates them in full. For benchmark corpora of cold reads.
func (c Core) UnverifyChildren(ctx context.Context, parent string) error {
	if _, err := c.db.Q().Exec(ctx, "UPDATE sessions SET verified = FALSE WHERE parent_session = ?", parent); err != nil {
		return c.db.StoreError(err, "mark the children of "+parent+" unverified")
	}
	return nil
}

// HeadersOf implements backend.HeaderBatchReader in one query.
func (c Core) HeadersOf(ctx context.Context, ids []string) (map[string]session.Header, error) {
	out := make(map[string]session.Header, len(ids))
	stored := make([]string, 0, len(ids))
	for _, id := range ids {
		if !storedlog.UnstorableID(id) {
			stored = append(stored, id) // no store holds another, and PostgreSQL refuses it as a parameter
		}
	}
	if len(stored) == 0 {
		return out, nil
	}
	err := c.EachHeader(ctx, func(h session.Header) error {
		out[h.ID] = h
		return nil
	}, "read the headers of a batch of sessions", "SELECT "+HeaderColumns+" FROM sessions WHERE "+c.d.InIDs("id"), c.d.IDs(stored))
	return out, err
}
