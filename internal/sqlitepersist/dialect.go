package sqlitepersist

import (
	"context"
	"database/sql"
	"github.com/dsh-project/dsh/internal/backend"
	"strings"

	"github.com/dsh-project/dsh/internal/jsjson"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/sqlstore"
	"github.com/dsh-project/dsh/internal/storedlog"
)

// dialect is SQLite's side of the statements the two stores share
// (package sqlstore): sessions keep their insertion order as rowid, a
// set of ids is one JSON array parameter that
// json_each walks, and a header's NULLs scan through sql.Null values.
var dialect = sqlstore.Dialect{
	TypeCondition: typeCondition,
	EventColumns:  eventColumns,
	InsertEvents:  insertTxEvents,
	// One cached statement per row is already SQLite's bulk path.
	ImportEvents:   insertTxEvents,
	LockRow:        "",
	InsertionOrder: "rowid",
	InIDs:          func(column string) string { return column + " IN (SELECT value FROM json_each(?))" },
	IDs:            func(ids []string) any { return jsjson.StringArray(ids) },
	NewHeaderScan:  func() sqlstore.HeaderScan { return new(headerScan) },
	// The FTS5 index's own name is the MATCH column; rank is bm25.
	SearchFrom:  "event_search_fts JOIN event_search AS x ON x.id = event_search_fts.rowid",
	SearchMatch: "event_search_fts MATCH ?",
	SearchRank:  "event_search_fts.rank",
	SearchQuery: func(r backend.SearchRequest) string { return r.FTS5 },
	UsageBefore: `SELECT u.model, count(*), sum(u.input_tokens), sum(u.output_tokens), sum(u.cache_read_tokens), sum(u.reasoning_tokens)
		  FROM event_usage AS u JOIN sessions AS s ON s.id = u.session_id
		 WHERE u.session_id = ? AND u.seq >= coalesce(s.seed_length, 0) AND u.seq < ?
		 GROUP BY u.model ORDER BY u.model`,
}

// insertTxEvents is insertEvents on the shared statements' handle.
func insertTxEvents(ctx context.Context, q sqlstore.Tx, id string, events []session.Event) error {
	return insertEvents(ctx, q.(sqliteTx).q, id, events)
}

// typeCondition is the condition on type for types, and its arguments: a
// literal predicate where a partial index covers the types (the
// descriptor index; the catalog index's own predicate, migration 0008),
// so that SQLite uses it.
func typeCondition(types []string) (string, []any) {
	switch {
	case len(types) == 1 && types[0] == session.TypeDescriptor:
		return "type = '" + session.TypeDescriptor + "'", nil
	case storedlog.CatalogIndexed(types):
		return storedlog.CatalogIndexFilter("type") + " AND " + storedlog.TypeList("type", types), nil
	}
	args := make([]any, len(types))
	for i, t := range types {
		args[i] = t
	}
	return "type IN (?" + strings.Repeat(", ?", len(types)-1) + ")", args
}

// headerScan is a headerRow whose targets are made once per query.
type headerScan struct {
	r       headerRow
	targets []any
}

func (h *headerScan) Targets() []any {
	if h.targets == nil {
		h.targets = h.r.targets()
	}
	return h.targets
}

func (h *headerScan) Header() session.Header { return h.r.header() }

// bind makes the shared methods (the embedded sqlstore.Core) run on s.
func (s *Store) bind() *Store {
	s.Core = sqlstore.NewCore(sharedDB{s}, &dialect)
	return s
}

// sharedDB is s as package sqlstore uses it.
type sharedDB struct{ s *Store }

func (d sharedDB) Q() sqlstore.Tx { return sqliteTx{d.s.Querier()} }

func (d sharedDB) Read(ctx context.Context, fn func(sqlstore.Tx) error) error {
	return d.s.read(ctx, func(q Querier) error { return fn(sqliteTx{tracedQuerier{q}}) })
}

func (d sharedDB) Write(ctx context.Context, fn func(sqlstore.Tx) error) error {
	return d.s.write(ctx, func(q Querier) error { return fn(sqliteTx{tracedQuerier{q}}) })
}

// OneCursor: SQLite steps any number of statements on one connection.
func (d sharedDB) OneCursor() bool { return false }

// Clock is Options.Clock, bound as a parameter.
func (d sharedDB) Clock() (string, []any) { return "?", []any{d.s.now()} }

func (d sharedDB) StoreError(err error, what string) error { return d.s.storeError(err, what) }

// sqliteTx is a Querier as package sqlstore runs statements: database/sql
// already takes ? placeholders and reports sql.ErrNoRows.
type sqliteTx struct{ q Querier }

func (t sqliteTx) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := t.q.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (t sqliteTx) Query(ctx context.Context, query string, args ...any) (sqlstore.Rows, error) {
	rows, err := t.q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return rows, nil
}

func (t sqliteTx) QueryRow(ctx context.Context, query string, args ...any) sqlstore.Row {
	return t.q.QueryRowContext(ctx, query, args...)
}

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
	h.SeedLength = sqlstore.OptInt(r.seedLen)
	h.Origin = optString(r.origin)
	h.DelegationDepth = sqlstore.OptInt(r.depth)
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

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
