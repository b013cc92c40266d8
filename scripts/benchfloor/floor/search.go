package floor

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/dsh-project/dsh/internal/search"
)

// searchQuery is the floor of dsh search: the index asked for every match
// and its score, the sessions joined for the fork cut (a fork's inherited
// prefix is indexed but its parent's text), the best limit kept by score,
// session and seq (dsh's order), and only those events read. Its parameters
// are the engine's query text and the limit.
const searchQuery = `
	SELECT x.session_id, x.seq, e.time, e.type, e.data
	  FROM (SELECT x.session_id, x.seq, f.rank AS score
	          FROM event_search_fts AS f
	          JOIN event_search AS x ON x.id = f.rowid
	          JOIN sessions AS s ON s.id = x.session_id
	         WHERE event_search_fts MATCH ? AND x.seq >= coalesce(s.seed_length, 0)
	         ORDER BY f.rank, x.session_id, x.seq LIMIT ?) AS x
	  JOIN events AS e ON e.session_id = x.session_id AND e.seq = x.seq
	 ORDER BY x.score, x.session_id, x.seq`

// pgSearchQuery is searchQuery on PostgreSQL: the same tsquery on the GIN
// index, ts_rank_cd descending.
const pgSearchQuery = `
	SELECT x.session_id, x.seq, e.time, e.type, e.data
	  FROM (SELECT x.session_id, x.seq, ts_rank_cd(x.vector, q.query) AS score
	          FROM (SELECT to_tsquery('simple', $1) AS query) AS q
	         CROSS JOIN event_search AS x
	          JOIN sessions AS s ON s.id = x.session_id
	         WHERE x.vector @@ q.query AND x.seq >= coalesce(s.seed_length, 0)
	         ORDER BY score DESC, x.session_id, x.seq LIMIT $2) AS x
	  JOIN events AS e ON e.session_id = x.session_id AND e.seq = x.seq
	 ORDER BY x.score DESC, x.session_id, x.seq`

// Search prints the best limit hits of query (dsh search's syntax, written
// for FTS5 by dsh's own parser) as "session TAB seq TAB time TAB type TAB
// data" lines: the events as stored, no snippet (making one is dsh's work
// beyond the floor).
func Search(ctx context.Context, db *sql.DB, query string, limit int, w io.Writer) error {
	q, err := search.Parse(query)
	if err != nil {
		return err
	}
	rows, err := db.QueryContext(ctx, searchQuery, q.FTS5(), limit)
	if err != nil {
		return err
	}
	defer rows.Close()
	return searchRows(rows, w)
}

// PGSearch is Search on PostgreSQL.
func PGSearch(ctx context.Context, conn *pgx.Conn, query string, limit int, w io.Writer) error {
	q, err := search.Parse(query)
	if err != nil {
		return err
	}
	rows, err := conn.Query(ctx, pgSearchQuery, q.TSQuery(), limit)
	if err != nil {
		return err
	}
	defer rows.Close()
	return searchRows(rows, w)
}

func searchRows(rows rowSource, w io.Writer) error {
	var b []byte
	for rows.Next() {
		var id, typ string
		var seq, at int64
		var data []byte
		if err := rows.Scan(&id, &seq, &at, &typ, &data); err != nil {
			return err
		}
		b = append(b[:0], id...)
		b = append(b, '\t')
		b = strconv.AppendInt(b, seq, 10)
		b = append(b, '\t')
		b = strconv.AppendInt(b, at, 10)
		b = append(b, '\t')
		b = append(b, typ...)
		b = append(b, '\t')
		b = append(b, data...)
		b = append(b, '\n')
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return rows.Err()
}

// IndexSize is the search index of a SQLite store: how many events the
// store holds, how many of them the index holds, and the bytes it takes
// (every page, by dbstat, of event_search, the FTS5 table's shadow tables
// and their indexes).
func IndexSize(ctx context.Context, db *sql.DB) (events, indexed, bytes int64, err error) {
	var n sql.NullInt64
	err = db.QueryRowContext(ctx, `
		SELECT (SELECT count(*) FROM events), (SELECT count(*) FROM event_search),
		       (SELECT sum(d.pgsize) FROM dbstat AS d JOIN sqlite_schema AS m ON m.name = d.name
		         WHERE m.tbl_name = 'event_search' OR m.tbl_name LIKE 'event\_search\_fts%' ESCAPE '\')`).Scan(&events, &indexed, &n)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("index size: %w", err)
	}
	return events, indexed, n.Int64, nil
}

// PGIndexSize is IndexSize on PostgreSQL: event_search with its indexes
// and TOAST.
func PGIndexSize(ctx context.Context, conn *pgx.Conn) (events, indexed, bytes int64, err error) {
	err = conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM events), (SELECT count(*) FROM event_search),
		pg_total_relation_size('event_search')`).Scan(&events, &indexed, &bytes)
	return events, indexed, bytes, err
}

// DropIndexTriggers drops the triggers on events that keep the search
// index (those whose text names event_search), so that an import into the
// store measures what it costs without the index.
func DropIndexTriggers(ctx context.Context, db *sql.DB) error {
	rows, err := db.QueryContext(ctx, `SELECT name FROM sqlite_schema WHERE type = 'trigger' AND tbl_name = 'events' AND sql LIKE '%event_search%'`)
	if err != nil {
		return err
	}
	var names []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return err
		}
		names = append(names, name)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if len(names) == 0 {
		return fmt.Errorf("no trigger on events keeps event_search")
	}
	for _, name := range names {
		if _, err := db.ExecContext(ctx, `DROP TRIGGER "`+name+`"`); err != nil {
			return err
		}
	}
	return nil
}

// PGDropIndexTriggers is DropIndexTriggers on PostgreSQL: the triggers on
// events whose function's body names event_search.
func PGDropIndexTriggers(ctx context.Context, conn *pgx.Conn) error {
	rows, err := conn.Query(ctx, `
		SELECT t.tgname FROM pg_trigger AS t JOIN pg_proc AS p ON p.oid = t.tgfoid
		 WHERE t.tgrelid = 'events'::regclass AND NOT t.tgisinternal AND p.prosrc LIKE '%event_search%'`)
	if err != nil {
		return err
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	if len(names) == 0 {
		return fmt.Errorf("no trigger on events keeps event_search")
	}
	for _, name := range names {
		if _, err := conn.Exec(ctx, "DROP TRIGGER "+pgx.Identifier{name}.Sanitize()+" ON events"); err != nil {
			return err
		}
	}
	return nil
}
