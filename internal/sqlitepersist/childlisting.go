package sqlitepersist

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/sqlstore"
	"github.com/dsh-project/dsh/internal/storedlog"
)

// ListedChild is the backend contract's.
type ListedChild = backend.ListedChild

// ChildListing calls fn for every subagent-origin child of parent in
// (createdAt, id) order with its hasChildren and its checkpoint record, in
// one query: the sessions_by_parent range joined with each child's record
// by key, the witness compared in SQL. The caller re-sorts createdAt ties
// by JavaScript localeCompare (corpus.SortHeaders), as for ChildrenOf.
func (s *Store) ChildListing(ctx context.Context, parent string, fn func(ListedChild) error) error {
	placed := childPlace(parent)
	return s.eachListed(ctx, func(c ListedChild) error {
		placed.set(&c.Header)
		return fn(c)
	}, "list the children of a session", `SELECT `+childColumns+` FROM sessions s `+listedCheckpoint+`
		WHERE s.parent_session = ? AND s.origin = 'subagent'
		ORDER BY s.created_at, s.id`, parent)
}

// place is the parent and origin of a parent's subagent children: the
// WHERE clause fixes both, so childColumns does not read them from each
// row (every text column read costs the driver a string per row).
type place struct{ parent, origin *string }

func childPlace(parent string) place {
	origin := session.OriginSubagent
	return place{parent: &parent, origin: &origin}
}

func (p place) set(h *session.Header) { h.ParentSession, h.Origin = p.parent, p.origin }

// ChildListingCold is ChildListing that also reads, in the same statement,
// the log of every child without a checkpoint record, of every seeded
// child, and of every child whose record text does not contain mark (a
// record the caller cannot serve the child from; "" = none such), as
// InspectColdBatch would for that child (ListedChild.Cold): its
// recorded verdict, or the events of the given types of its verified,
// untorn log. A cold listing thus reads its children and their descriptors
// in one pass over the parent's range, as the records' absence makes every
// child a cold read; a warm one reads its seeded children's too, which a
// listing never serves from a record, instead of looking them up again in
// a second query.
func (s *Store) ChildListingCold(ctx context.Context, parent string, types []string, mark string, fn func(ListedChild) error) error {
	const what = "list the children of a session"
	if len(types) == 0 {
		return fmt.Errorf("%s: no event types given", what)
	}
	for _, t := range types {
		if slices.Contains(closerTypes, t) {
			return fmt.Errorf("%s: type %s can be a closer's", what, t)
		}
	}
	filter, typeArgs := joinedTypeFilter(types)
	cold := `(c.rows IS NULL OR s.seed_length IS NOT NULL OR instr(c.rows, ?` + strconv.Itoa(len(typeArgs)+2) + `) = 0)`
	// The cold columns are read, and the events sought, only for a child
	// without a usable record or with a seed (a NULL key seeks nothing), so
	// a warm listing's other rows stay within the covering index. Ordering by the children alone keeps
	// their index order without a sorter; each child's events are put in
	// seq order below.
	rows, err := s.Querier().QueryContext(ctx, `SELECT `+childColumns+`,
		CASE WHEN `+cold+` THEN s.read_failure END,
		CASE WHEN `+cold+` THEN s.registry_fold END,
		CASE WHEN `+cold+` THEN s.verified = 1 AND NOT EXISTS (SELECT 1 FROM torn_tails t WHERE t.session_id = s.id) ELSE 0 END,
		`+joinedEventColumns+` FROM sessions s `+listedCheckpoint+`
		LEFT JOIN events e ON e.session_id = CASE WHEN `+cold+` AND s.read_failure IS NULL
			AND s.registry_fold IS NULL AND s.verified = 1 THEN s.id END AND `+filter+`
		WHERE s.parent_session = ?1 AND s.origin = 'subagent'
		ORDER BY s.created_at, s.id`, append(append([]any{parent}, typeArgs...), mark)...)
	if err != nil {
		return s.storeError(err, what)
	}
	defer rows.Close()
	var (
		r        headerRow
		cp       sql.RawBytes
		failure  sql.NullString
		fold     []byte
		readable bool
		ev       joinedEvent
		headers  sharedHeaders
		placed   = childPlace(parent)
		// The child whose rows are being read, a value reused from child
		// to child (a pointer per child was one allocation per row).
		child   ListedChild
		reading bool
	)
	flush := func(c *ListedChild) error {
		if c.Cold != nil && c.Cold.Log != nil {
			inSeqOrder(c.Cold.Log.Events)
		}
		return fn(*c)
	}
	hasChildren := false
	targets := append(append(r.targets(), &hasChildren, &cp, &failure, &fold, &readable), ev.targets()...)
	for rows.Next() {
		if err := rows.Scan(targets...); err != nil {
			return s.storeError(err, what)
		}
		if !reading || child.Header.ID != r.h.ID {
			if reading {
				if err := flush(&child); err != nil {
					return err
				}
			}
			h := headers.header(&r)
			placed.set(&h)
			child, reading = ListedChild{Header: h, HasChildren: hasChildren}, true
			if cp != nil {
				child.Checkpoint = append([]byte(nil), cp...)
			}
			switch v := storedlog.RecordedVerdict(h.ID, failure.String, failure.Valid, fold); {
			case v != nil:
				child.Cold = &backend.ListedColdRead{Verdict: v}
			case readable:
				child.Cold = &backend.ListedColdRead{Log: &backend.Inspection{Header: h, Events: []session.Event{}, Closers: []session.Event{}, Verified: true}}
			}
		}
		e, present := ev.row()
		if !present || child.Cold == nil || child.Cold.Log == nil {
			continue
		}
		decoded, err := e.Decode()
		if err != nil {
			return s.storeError(storedlog.CorruptRow(child.Header.ID, e.Seq, err.Error()), what)
		}
		child.Cold.Log.Events = append(child.Cold.Log.Events, decoded)
	}
	if err := rows.Err(); err != nil {
		return s.storeError(err, what)
	}
	if reading {
		return flush(&child)
	}
	return nil
}

// inSeqOrder sorts a log's events by seq when the rows did not come in that
// order.
func inSeqOrder(events []session.Event) {
	if !slices.IsSortedFunc(events, bySeq) {
		slices.SortFunc(events, bySeq)
	}
}

func bySeq(a, b session.Event) int { return cmp.Compare(a.Seq, b.Seq) }

// SubtreeListing is SubtreeOf with each session's hasChildren and
// witness-matched checkpoint record, as ChildListing gives them, in one
// recursive query: every session reachable from root by parent links, of
// any origin, in no particular order. The recursion carries each header
// from the sessions_by_parent index it walks (which holds every header
// column), so no session's table row is read; UNION over whole headers
// still visits each session once.
func (s *Store) SubtreeListing(ctx context.Context, root string, fn func(ListedChild) error) error {
	return s.eachListed(ctx, fn, "list the descendants of a session", `WITH RECURSIVE s(`+sqlstore.HeaderColumns+`) AS (
			SELECT `+sqlstore.HeaderColumns+` FROM sessions WHERE parent_session = ?
			UNION SELECT `+sqlstore.Qualified("t", sqlstore.HeaderColumns)+` FROM sessions t JOIN s ON t.parent_session = s.id)
		SELECT `+listedColumns+` FROM s `+listedCheckpoint, root)
}

// listedColumns are a header, hasChildren and the record text, for
// eachListed; listedCheckpoint joins the record whose witness is the header.
const (
	listedColumns = `s.id, s.version, s.created_at, s.cwd, s.parent_session,
		s.seed_length, s.origin, s.delegation_depth, s.agent_preset,
		EXISTS (SELECT 1 FROM sessions g WHERE g.parent_session = s.id AND g.origin = 'subagent'),
		c.rows`
	// childColumns are listedColumns with NULL for the parent and origin,
	// for listings of one parent's subagent children (see place).
	childColumns = `s.id, s.version, s.created_at, s.cwd, NULL,
		s.seed_length, NULL, s.delegation_depth, s.agent_preset,
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
		r       headerRow
		cp      sql.RawBytes
		headers sharedHeaders
		child   ListedChild
	)
	targets := append(r.targets(), &child.HasChildren, &cp)
	for rows.Next() {
		if err := rows.Scan(targets...); err != nil {
			return s.storeError(err, what)
		}
		child.Header = headers.header(&r)
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

// sharedHeaders builds headers from headerRow scans whose optional fields
// point at one copy per distinct value (see interned): for the listings,
// which read many siblings' headers at once.
type sharedHeaders struct {
	strs interned[string]
	ints interned[int64]
}

func (sh *sharedHeaders) header(r *headerRow) session.Header {
	h := r.h
	h.Cwd = sh.strs.get(r.cwd.String, r.cwd.Valid)
	h.ParentSession = sh.strs.get(r.parent.String, r.parent.Valid)
	h.SeedLength = sh.ints.get(r.seedLen.Int64, r.seedLen.Valid)
	h.Origin = sh.strs.get(r.origin.String, r.origin.Valid)
	h.DelegationDepth = sh.ints.get(r.depth.Int64, r.depth.Valid)
	h.AgentPreset = sh.strs.get(r.preset.String, r.preset.Valid)
	return h
}

// interned hands out one pointer per distinct value of a header's optional
// fields: one parent's children mostly share their parent, origin, cwd,
// preset and delegation depth (and seed lengths repeat), and a header's
// fields are never written through. At most 64 values are kept.
type interned[T comparable] map[T]*T

func (m *interned[T]) get(v T, valid bool) *T {
	if !valid {
		return nil
	}
	if *m == nil {
		*m = interned[T]{}
	}
	if p, ok := (*m)[v]; ok {
		return p
	}
	// A copy, not &v: taking the parameter's address would move it to the
	// heap on every call, hits included.
	c := v
	if len(*m) < 64 {
		(*m)[c] = &c
	}
	return &c
}
