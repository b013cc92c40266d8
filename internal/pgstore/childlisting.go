package pgstore

import (
	"context"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/session"
)

// ChildListing calls fn for every subagent-origin child of parent in
// (createdAt, id) order with its hasChildren and its witness-matched
// checkpoint record, in one query (a warm listing is one round trip). The
// caller re-sorts createdAt ties by JavaScript localeCompare, as for
// ChildrenOf.
func (s *Store) ChildListing(ctx context.Context, parent string, fn func(backend.ListedChild) error) error {
	return s.eachListed(ctx, fn, "list the children of a session", `SELECT `+listedColumns+` FROM sessions s `+listedCheckpoint+`
		WHERE s.parent_session = $1 AND s.origin = 'subagent'
		ORDER BY s.created_at, s.id`, parent)
}

// SubtreeListing is SubtreeOf with each session's hasChildren and
// witness-matched checkpoint record, in one recursive query, in no
// particular order.
func (s *Store) SubtreeListing(ctx context.Context, root string, fn func(backend.ListedChild) error) error {
	return s.eachListed(ctx, fn, "list the descendants of a session", `WITH RECURSIVE tree(id) AS (
			SELECT id FROM sessions WHERE parent_session = $1
			UNION SELECT t.id FROM sessions t JOIN tree ON t.parent_session = tree.id)
		SELECT `+listedColumns+` FROM sessions s `+listedCheckpoint+`
		WHERE s.id IN (SELECT id FROM tree)`, root)
}

// listedColumns are a header, hasChildren and the record text;
// listedCheckpoint joins the record whose witness is the header (absent
// fields equal only absent ones: IS NOT DISTINCT FROM) and whether the
// session has a subagent child. Both are LATERAL subqueries with LIMIT 1,
// which the planner cannot flatten or hash: each is an index probe per
// listed session (the checkpoint table's primary key, the
// sessions_subagent_children index), so a listing costs in proportion to
// the sessions it lists. As a plain join and an EXISTS, a parent holding a
// large share of the store (a tenth, in a 50,000-session store) got a hash
// join over the whole checkpoint table and a hashed EXISTS over every
// subagent session: a cost that followed the store (docs/scale.md).
const (
	listedColumns = `s.id, s.version, s.created_at, s.cwd, s.parent_session,
		s.seed_length, s.origin, s.delegation_depth, s.agent_preset,
		k.found IS NOT NULL, c.rows`
	listedCheckpoint = `LEFT JOIN LATERAL (SELECT true AS found FROM sessions g
			WHERE g.parent_session = s.id AND g.origin = 'subagent' LIMIT 1) k ON true
		LEFT JOIN LATERAL (SELECT c.rows FROM projection_checkpoints c WHERE c.session_id = s.id
			AND c.version = s.version AND c.created_at = s.created_at
			AND c.cwd IS NOT DISTINCT FROM s.cwd
			AND c.parent_session IS NOT DISTINCT FROM s.parent_session
			AND c.seed_length IS NOT DISTINCT FROM s.seed_length
			AND c.origin IS NOT DISTINCT FROM s.origin
			AND c.delegation_depth IS NOT DISTINCT FROM s.delegation_depth
			AND c.agent_preset IS NOT DISTINCT FROM s.agent_preset LIMIT 1) c ON true`
)

func (s *Store) eachListed(ctx context.Context, fn func(backend.ListedChild) error, what, query string, args ...any) error {
	rows, err := s.q().Query(ctx, query, args...)
	if err != nil {
		return s.storeError(err, what)
	}
	defer rows.Close()
	var (
		h     session.Header
		cp    *string
		child backend.ListedChild
	)
	targets := append(headerTargets(&h), &child.HasChildren, &cp)
	for rows.Next() {
		h, cp = session.Header{}, nil
		if err := rows.Scan(targets...); err != nil {
			return s.storeError(err, what)
		}
		child.Header = h
		child.Checkpoint = nil
		if cp != nil {
			child.Checkpoint = []byte(*cp)
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
