package sqlitepersist

import (
	"context"
	"database/sql"

	"github.com/dsh-project/dsh/internal/backend"
)

// ListedChild is the backend contract's.
type ListedChild = backend.ListedChild

// ChildListing calls fn for every subagent-origin child of parent in
// (createdAt, id) order with its hasChildren and its checkpoint record, in
// one query: the sessions_by_parent range joined with each child's record
// by key, the witness compared in SQL. The caller re-sorts createdAt ties
// by JavaScript localeCompare (corpus.SortHeaders), as for ChildrenOf.
func (s *Store) ChildListing(ctx context.Context, parent string, fn func(ListedChild) error) error {
	return s.eachListed(ctx, fn, "list the children of a session", `SELECT `+listedColumns+` FROM sessions s `+listedCheckpoint+`
		WHERE s.parent_session = ? AND s.origin = 'subagent'
		ORDER BY s.created_at, s.id`, parent)
}

// SubtreeListing is SubtreeOf with each session's hasChildren and
// witness-matched checkpoint record, as ChildListing gives them, in one
// recursive query: every session reachable from root by parent links, of
// any origin, in no particular order. The recursion carries each header
// from the sessions_by_parent index it walks (which holds every header
// column), so no session's table row is read; UNION over whole headers
// still visits each session once.
func (s *Store) SubtreeListing(ctx context.Context, root string, fn func(ListedChild) error) error {
	return s.eachListed(ctx, fn, "list the descendants of a session", `WITH RECURSIVE s(`+headerColumns+`) AS (
			SELECT `+headerColumns+` FROM sessions WHERE parent_session = ?
			UNION SELECT `+qualified("t", headerColumns)+` FROM sessions t JOIN s ON t.parent_session = s.id)
		SELECT `+listedColumns+` FROM s `+listedCheckpoint, root)
}

// listedColumns are a header, hasChildren and the record text, for
// eachListed; listedCheckpoint joins the record whose witness is the header.
const (
	listedColumns = `s.id, s.version, s.created_at, s.cwd, s.parent_session,
		s.seed_length, s.origin, s.delegation_depth, s.agent_preset,
		EXISTS (SELECT 1 FROM sessions g WHERE g.parent_session = s.id AND g.origin = 'subagent'),
		c.rows`
	listedCheckpoint = `LEFT JOIN projection_checkpoints c ON c.session_id = s.id
		AND c.version = s.version AND c.created_at = s.created_at AND c.cwd IS s.cwd
		AND c.parent_session IS s.parent_session AND c.seed_length IS s.seed_length
		AND c.origin IS s.origin AND c.delegation_depth IS s.delegation_depth
		AND c.agent_preset IS s.agent_preset`
)

func (s *Store) eachListed(ctx context.Context, fn func(ListedChild) error, what, query string, args ...any) error {
	rows, err := s.Querier().QueryContext(ctx, query, args...)
	if err != nil {
		return s.storeError(err, what)
	}
	defer rows.Close()
	var (
		r      headerRow
		cp     sql.RawBytes
		shared sharedStrings
		child  ListedChild
	)
	targets := append(r.targets(), &child.HasChildren, &cp)
	for rows.Next() {
		if err := rows.Scan(targets...); err != nil {
			return s.storeError(err, what)
		}
		h := r.h
		h.Cwd = shared.get(r.cwd)
		h.ParentSession = shared.get(r.parent)
		h.SeedLength = optInt(r.seedLen)
		h.Origin = shared.get(r.origin)
		h.DelegationDepth = optInt(r.depth)
		h.AgentPreset = shared.get(r.preset)
		child.Header = h
		child.Checkpoint = nil
		if cp != nil {
			child.Checkpoint = append([]byte(nil), cp...)
		}
		if err := fn(child); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return s.storeError(err, what)
	}
	return nil
}

// sharedStrings hands out one pointer per distinct value: one parent's
// children mostly share their parent, origin, cwd and preset, and a header's
// fields are never written through.
type sharedStrings map[string]*string

func (m *sharedStrings) get(v sql.NullString) *string {
	if !v.Valid {
		return nil
	}
	if *m == nil {
		*m = sharedStrings{}
	}
	if p, ok := (*m)[v.String]; ok {
		return p
	}
	if len(*m) >= 64 {
		return &v.String
	}
	p := &v.String
	(*m)[v.String] = p
	return p
}
