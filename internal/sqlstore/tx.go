package sqlstore

import (
	"context"
	"database/sql"
	"github.com/dsh-project/dsh/internal/backend"

	"github.com/dsh-project/dsh/internal/session"
)

// Tx runs the shared statements on a store's database: inside the store's
// current transaction, or on its pool outside one. Statements are written
// with ? placeholders; a dialect whose placeholders are numbered ($1)
// rewrites them (Rebind). Arguments are the Go values both drivers take:
// string, int64, bool, []byte, a nil-able *string or *int64 for a NULL.
type Tx interface {
	// Exec runs a statement and returns how many rows it changed.
	Exec(ctx context.Context, query string, args ...any) (int64, error)
	Query(ctx context.Context, query string, args ...any) (Rows, error)
	// QueryRow's Scan returns ErrNoRows when the query returned no row.
	QueryRow(ctx context.Context, query string, args ...any) Row
}

// LaterTx is a Tx that can hold a write back and send it with others
// (PostgreSQL's pipelined import transaction): ExecLater returns before
// the statement has run, and a failure of it (or check's refusal of its
// row count) fails the whole transaction, reported by a later statement
// or the commit. Only a statement whose result the caller would not act
// on, other than by failing, may go this way.
type LaterTx interface {
	ExecLater(ctx context.Context, check func(rows int64) error, query string, args ...any) error
}

// execLater runs query through q's ExecLater when it has one, else now;
// check, when set, judges the statement's row count.
func execLater(ctx context.Context, q Tx, check func(rows int64) error, query string, args ...any) error {
	if l, ok := q.(LaterTx); ok {
		return l.ExecLater(ctx, check, query, args...)
	}
	n, err := q.Exec(ctx, query, args...)
	if err == nil && check != nil {
		err = check(n)
	}
	return err
}

// Rows is a query's result set, as *sql.Rows offers it.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close() error
}

// Row is one row of a result, as *sql.Row offers it.
type Row interface {
	Scan(dest ...any) error
}

// ErrNoRows is what Row.Scan returns for a query without a row: the
// database/sql sentinel, which a driver with its own maps to.
var ErrNoRows = sql.ErrNoRows

// DB is what a store gives the shared methods: its statement handle and
// its transactions, each of which reuses the caller's when the store is a
// view bound to one.
type DB interface {
	// Q is the handle for one statement: the view's transaction, or the
	// pool.
	Q() Tx
	// Read runs fn on one consistent snapshot.
	Read(ctx context.Context, fn func(Tx) error) error
	// Write runs fn atomically in one write transaction (a savepoint
	// inside one).
	Write(ctx context.Context, fn func(Tx) error) error
	// Clock is the store's clock in epoch milliseconds as an SQL
	// expression and its arguments: SQLite's is its Options.Clock, bound
	// as a parameter; PostgreSQL's is the server's clock_timestamp(), so
	// that holders on different machines never compare their own clocks.
	Clock() (expr string, args []any)
	// OneCursor reports whether a query's rows must be read to the end
	// before the next statement runs (a PostgreSQL view: one connection,
	// one open cursor).
	OneCursor() bool
	// StoreError classifies a driver failure (STORE_UNAVAILABLE, naming
	// the store), leaving cancellation and coded errors as they are.
	StoreError(err error, what string) error
}

// Dialect is the SQL the two stores write differently, where a shared
// method needs it.
type Dialect struct {
	// InsertionOrder orders sessions rows as they were stored (SQLite's
	// rowid, PostgreSQL's identity column).
	InsertionOrder string
	// LockRow ends a SELECT of one sessions row that a lease is about to
	// be decided on: PostgreSQL locks the row (FOR NO KEY UPDATE); SQLite
	// needs nothing, its write transactions begin holding the file's
	// write lock (BEGIN IMMEDIATE).
	LockRow string
	// EventColumns are the events columns storedlog.Row.Targets scans, in
	// order (ignorable as an integer).
	EventColumns string
	// InsertEvents writes events as rows of session id, exactly as given,
	// in the way the driver does it fastest (SQLite: one cached statement
	// per row; PostgreSQL: one statement whose columns travel as arrays).
	InsertEvents func(ctx context.Context, q Tx, id string, events []session.Event) error
	// ImportEvents writes an imported log's events as InsertEvents does,
	// in the driver's bulk path (PostgreSQL: COPY): an import writes whole
	// logs, where the other writes add a few events.
	ImportEvents func(ctx context.Context, q Tx, id string, events []session.Event) error
	// TypeCondition is the condition on column type selecting the given
	// event types, and its arguments: where a partial index covers the
	// types, its predicate written so that the planner uses it.
	TypeCondition func(types []string) (string, []any)
	// InIDs is the condition "column is one of the ids of one parameter",
	// IDs(ids): how a set of ids travels as a single parameter (a JSON
	// array that SQLite's json_each walks, a text[] for PostgreSQL's
	// = ANY).
	InIDs func(column string) string
	IDs   func(ids []string) any
	// NewHeaderScan returns scan targets for HeaderColumns, reused row
	// after row of one query.
	NewHeaderScan func() HeaderScan
	// SearchFrom joins the search index (migration 0013) as x, with
	// x.session_id and x.seq; SearchMatch is the condition that x matches
	// the query and SearchRank x's score, lowest best.
	// SearchFrom and SearchMatch together take one parameter, the
	// request's SearchQuery.
	SearchFrom, SearchMatch, SearchRank string
	SearchQuery                         func(backend.SearchRequest) string
	// SearchSetup, when set, is a statement run first in the transaction
	// of a search's reads.
	SearchSetup string
	// UsageBefore sums one session's own usage over its events before a
	// seq (parameters: the session id, twice where the query needs it
	// again, then the seq), one row per model in byte order of the name
	// with the columns of session_usage: the totals of a log whose reader
	// cuts it where the stored totals do not.
	UsageBefore string
}

// HeaderColumns are the sessions columns that make up a session.Header,
// in the order HeaderArgs and a HeaderScan's targets list them.
const HeaderColumns = "id, version, created_at, cwd, parent_session, seed_length, origin, delegation_depth, agent_preset"

// HeaderArgs are the values of HeaderColumns for h.
func HeaderArgs(h session.Header) []any {
	return []any{h.ID, h.Version, h.CreatedAt, h.Cwd, h.ParentSession, h.SeedLength, h.Origin, h.DelegationDepth, h.AgentPreset}
}

// HeaderScan scans HeaderColumns the way a driver reads NULLs cheapest.
type HeaderScan interface {
	// Targets are the scan destinations, the same slice every call.
	Targets() []any
	// Header is the header the last scan read.
	Header() session.Header
}

// withTargets is hs's targets followed by more, in a slice of its own.
func withTargets(hs HeaderScan, more ...any) []any {
	t := hs.Targets()
	return append(t[:len(t):len(t)], more...)
}

// OptInt is v as a nil-able int64.
func OptInt(v sql.NullInt64) *int64 {
	if !v.Valid {
		return nil
	}
	n := v.Int64
	return &n
}
