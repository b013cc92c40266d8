package pgstore

import (
	"context"
	"errors"
	"fmt"
	"github.com/dsh-project/dsh/internal/backend"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"

	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/sqlstore"
	"github.com/dsh-project/dsh/internal/storedlog"
)

// dialect is PostgreSQL's side of the statements the two stores share
// (package sqlstore): sessions keep their insertion order in an identity
// column, a set of ids is one text[] parameter, an imported log goes in by
// COPY, and a header scans straight into its pointer fields.
var dialect = sqlstore.Dialect{
	TypeCondition:  typeCondition,
	EventColumns:   eventColumns,
	InsertEvents:   insertEvents,
	ImportEvents:   copyEvents,
	LockRow:        " FOR NO KEY UPDATE",
	InsertionOrder: "inserted",
	InIDs:          func(column string) string { return column + " = ANY(?::text[])" },
	IDs:            func(ids []string) any { return ids },
	NewHeaderScan:  func() sqlstore.HeaderScan { return new(headerScan) },
	// The query is parsed once, in FROM; the GIN index answers @@.
	SearchFrom:  "(SELECT to_tsquery('simple', ?) AS query) AS q CROSS JOIN event_search AS x",
	SearchMatch: "x.vector @@ q.query",
	// Negated: ts_rank_cd is highest best.
	SearchRank:  "-ts_rank_cd(x.vector, q.query)",
	SearchQuery: func(r backend.SearchRequest) string { return r.TSQuery },
	// A search's statements are estimated above jit_above_cost on a large
	// store whose statistics lag (correlated subqueries over events), and
	// compiling them took longer than running them: on a 1M-event store
	// dsh search spent about 1 s of its 2.6 s compiling.
	SearchSetup: "SET LOCAL jit = off",
	UsageBefore: `SELECT u.model COLLATE "C", count(*), sum(u.input_tokens), sum(u.output_tokens), sum(u.cache_read_tokens), sum(u.reasoning_tokens)
		  FROM events AS e JOIN sessions AS s ON s.id = e.session_id, dsh_event_usage(e.type, e.data) AS u
		 WHERE e.session_id = ? AND e.type IN ('assistant/message', 'compaction/summary')
		   AND e.seq >= coalesce(s.seed_length, 0) AND e.seq < ?
		 GROUP BY 1 ORDER BY 1`,
}

// insertEvents writes events as rows of session id, exactly as given, with
// one statement: the columns travel as arrays that unnest turns back into
// rows, so a batch costs one round trip whatever its size (none of its own
// in a pipelined transaction, which holds it back).
func insertEvents(ctx context.Context, q sqlstore.Tx, id string, events []session.Event) error {
	if len(events) == 0 {
		return nil
	}
	if err := q.(pgTx).ExecLater(ctx, nil, insertEventsSQL, eventArrays(id, events)...); err != nil {
		return fmt.Errorf("insert %d events of session %q: %w", len(events), id, err)
	}
	return nil
}

const insertEventsSQL = `INSERT INTO events
	(session_id, seq, type, time, data, source_event_seqs, surface_op, ignorable, unknown_keys)
	SELECT ?, * FROM unnest(?::bigint[], ?::text[], ?::bigint[], ?::text[], ?::text[], ?::text[], ?::boolean[], ?::text[])`

// eventArrays are insertEventsSQL's arguments: id, then each column of
// events as an array.
func eventArrays(id string, events []session.Event) []any {
	n := len(events)
	var (
		seqs, times                      = make([]int64, n), make([]int64, n)
		types                            = make([]string, n)
		data, sources, surfaces, unknown = make([]*string, n), make([]*string, n), make([]*string, n), make([]*string, n)
		ignorable                        = make([]bool, n)
	)
	for i, e := range events {
		r := storedlog.Encode(e)
		seqs[i], types[i], times[i] = r.Seq, r.Type, r.Time
		data[i], sources[i], surfaces[i], unknown[i] = r.Data, r.SourceEventSeqs, r.SurfaceOp, r.UnknownKeys
		ignorable[i] = r.Ignorable == 1
	}
	return []any{id, seqs, types, times, data, sources, surfaces, ignorable, unknown}
}

// copyMinEvents is the shortest log a pipelined import writes by COPY: a
// COPY cannot join a pipeline, so it costs the pipeline's send and its own
// two round trips, which a long log's cheaper rows repay and a short one's
// do not (a short log's rows go as insertEventsSQL, held back with the
// session's other statements).
const copyMinEvents = 2000

// copyEvents writes an imported log's events as rows of session id,
// exactly as given, by COPY: the server's bulk path, which writes rows in
// multi-row groups instead of running an INSERT's executor per row, and
// reads them in binary instead of unpacking arrays. It costs one round
// trip more than insertEvents (the COPY's start), paid once per log. COPY
// is one statement of the caller's transaction: a failure rolls back to
// the session's savepoint like any other, and the statement-level triggers
// (unverification, token usage, change notification) fire once, on all
// the rows, as they do for insertEvents. In a pipelined transaction a log
// shorter than copyMinEvents is held back as one insertEventsSQL instead.
func copyEvents(ctx context.Context, q sqlstore.Tx, id string, events []session.Event) error {
	if len(events) == 0 {
		return nil
	}
	pq := q.(pgTx).q
	if _, ok := pq.(*pipeline); ok && len(events) < copyMinEvents {
		return insertEvents(ctx, q, id, events)
	}
	if _, err := pq.CopyFrom(ctx, pgx.Identifier{"events"}, eventColumnNames, &eventRows{id: id, events: events}); err != nil {
		return fmt.Errorf("copy %d events of session %q: %w", len(events), id, err)
	}
	return nil
}

// eventColumnNames are the events columns COPY fills, in eventRows' order.
var eventColumnNames = []string{"session_id", "seq", "type", "time", "data", "source_event_seqs", "surface_op", "ignorable", "unknown_keys"}

// eventRows is events as the rows of session id that COPY sends, each
// encoded as it is sent (pgx encodes a row before it asks for the next, so
// one slice of values serves them all).
type eventRows struct {
	id     string
	events []session.Event
	next   int
	values []any
}

func (r *eventRows) Next() bool {
	r.next++
	return r.next <= len(r.events)
}

func (r *eventRows) Values() ([]any, error) {
	e := storedlog.Encode(r.events[r.next-1])
	r.values = append(r.values[:0], r.id, e.Seq, e.Type, e.Time, e.Data, e.SourceEventSeqs, e.SurfaceOp, e.Ignorable == 1, e.UnknownKeys)
	return r.values, nil
}

func (r *eventRows) Err() error { return nil }

// typeCondition is the condition on type for types, and its argument. A
// lone descriptor type is a literal so the planner matches the partial
// events_descriptors index; catalog types are constants PostgreSQL can
// prove imply the catalog index's predicate (migration 0008).
func typeCondition(types []string) (string, []any) {
	if len(types) == 1 && types[0] == session.TypeDescriptor {
		return "type = '" + session.TypeDescriptor + "'", nil
	}
	if storedlog.CatalogIndexed(types) {
		return storedlog.TypeList("type", types), nil
	}
	return "type = ANY(?::text[])", []any{types}
}

// headerTargets scans the header columns straight into h: pgx sets a
// pointer field to nil for NULL, so absent stays absent.
func headerTargets(h *session.Header) []any {
	return []any{&h.ID, &h.Version, &h.CreatedAt, &h.Cwd, &h.ParentSession, &h.SeedLength, &h.Origin, &h.DelegationDepth, &h.AgentPreset}
}

// headerScan scans into one header whose fields it clears after each row:
// a row's NULL must not keep the previous row's value.
type headerScan struct {
	h       session.Header
	targets []any
}

func (h *headerScan) Targets() []any {
	if h.targets == nil {
		h.targets = headerTargets(&h.h)
	}
	return h.targets
}

func (h *headerScan) Header() session.Header {
	out := h.h
	h.h = session.Header{}
	return out
}

// bind makes the shared methods (the embedded sqlstore.Core) run on s.
func (s *Store) bind() *Store {
	s.Core = sqlstore.NewCore(sharedDB{s}, &dialect)
	return s
}

// sharedDB is s as package sqlstore uses it.
type sharedDB struct{ s *Store }

func (d sharedDB) Q() sqlstore.Tx { return pgTx{d.s.q()} }

func (d sharedDB) Read(ctx context.Context, fn func(sqlstore.Tx) error) error {
	return d.s.view(ctx, func(view *Store) error { return fn(pgTx{view.q()}) })
}

func (d sharedDB) Write(ctx context.Context, fn func(sqlstore.Tx) error) error {
	return d.s.update(ctx, func(view *Store) error { return fn(pgTx{view.q()}) })
}

// OneCursor: a view's transaction is one connection, which cannot run
// another statement while a cursor is open on it ("conn busy").
func (d sharedDB) OneCursor() bool { return d.s.tx != nil }

// Clock is the server's clock (serverMillis).
func (d sharedDB) Clock() (string, []any) { return serverMillis, nil }

func (d sharedDB) StoreError(err error, what string) error { return d.s.storeError(err, what) }

// pgTx runs the shared statements through pgx: their ? placeholders become
// $1, $2, … (rebind), and pgx.ErrNoRows is sqlstore.ErrNoRows.
type pgTx struct{ q querier }

func (t pgTx) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	tag, err := t.q.Exec(ctx, rebind(query), args...)
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

// ExecLater implements sqlstore.LaterTx: held back in a pipelined
// transaction, run now otherwise.
func (t pgTx) ExecLater(ctx context.Context, check func(rows int64) error, query string, args ...any) error {
	return execLater(ctx, t.q, check, rebind(query), args...)
}

func (t pgTx) Query(ctx context.Context, query string, args ...any) (sqlstore.Rows, error) {
	rows, err := t.q.Query(ctx, rebind(query), args...)
	if err != nil {
		return nil, err
	}
	return pgRows{rows}, nil
}

func (t pgTx) QueryRow(ctx context.Context, query string, args ...any) sqlstore.Row {
	return pgRow{t.q.QueryRow(ctx, rebind(query), args...)}
}

type pgRows struct{ pgx.Rows }

func (r pgRows) Close() error {
	r.Rows.Close()
	return nil
}

type pgRow struct{ pgx.Row }

func (r pgRow) Scan(dest ...any) error {
	err := r.Row.Scan(dest...)
	if errors.Is(err, pgx.ErrNoRows) {
		return sqlstore.ErrNoRows
	}
	return err
}

// rebound caches rebind's results: the shared statements are a few
// dozen texts, each rewritten once per process.
var rebound struct {
	sync.RWMutex
	m map[string]string
}

// rebind rewrites query's ? placeholders as $1, $2, …, leaving quoted
// text and identifiers as they are.
func rebind(query string) string {
	rebound.RLock()
	out, ok := rebound.m[query]
	rebound.RUnlock()
	if ok {
		return out
	}
	var b strings.Builder
	n := 0
	var quote byte
	for i := 0; i < len(query); i++ {
		c := query[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '?':
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(c)
	}
	out = b.String()
	rebound.Lock()
	if rebound.m == nil {
		rebound.m = make(map[string]string)
	}
	rebound.m[query] = out
	rebound.Unlock()
	return out
}
