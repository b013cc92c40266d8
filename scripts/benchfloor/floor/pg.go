package floor

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/jackc/pgx/v5"
)

// OpenPG connects to the PostgreSQL database at dbURL through pgx, the
// driver dsh uses there.
func OpenPG(ctx context.Context, dbURL string) (*pgx.Conn, error) {
	return pgx.Connect(ctx, dbURL)
}

// IsPG reports whether db names a PostgreSQL database rather than a SQLite
// file, as dsh's --db does.
func IsPG(db string) bool {
	return strings.HasPrefix(db, "postgres://") || strings.HasPrefix(db, "postgresql://")
}

// pgDialect is a floor query of SQLite's dialect in PostgreSQL's: NULL-safe
// equality is IS NOT DISTINCT FROM, the one parameter is $1.
var pgDialect = strings.NewReplacer(
	" IS s.", " IS NOT DISTINCT FROM s.",
	" IS 'subagent'", " IS NOT DISTINCT FROM 'subagent'",
	"= ?1", "= $1", // before "= ?", which would match it too
	"= ?", "= $1",
)

// PGList is List on PostgreSQL: the same query, the same rows, the same
// bytes out.
func PGList(ctx context.Context, conn *pgx.Conn, parent string, descendants bool, w io.Writer) error {
	rows, err := conn.Query(ctx, pgDialect.Replace(listQuery(descendants)), parent)
	if err != nil {
		return err
	}
	defer rows.Close()
	return listRows(rows, parent, descendants, w)
}

// PGCold is Cold on PostgreSQL.
func PGCold(ctx context.Context, conn *pgx.Conn, parent string, w io.Writer) error {
	rows, err := conn.Query(ctx, pgDialect.Replace(coldQuery), parent)
	if err != nil {
		return err
	}
	defer rows.Close()
	return coldRows(rows, w)
}

// PGDiagnose is Diagnose on PostgreSQL: a lateral join reads each child's
// log whole, in seq order, by its primary key range (a plain join may hash
// the events table instead).
func PGDiagnose(ctx context.Context, conn *pgx.Conn, parent string, w io.Writer) error {
	rows, err := conn.Query(ctx, `SELECT s.id, e.seq, e.type, e.time, e.data, e.source_event_seqs, e.surface_op
		FROM sessions s CROSS JOIN LATERAL (SELECT * FROM events WHERE session_id = s.id ORDER BY seq) e
		WHERE s.parent_session = $1 AND s.origin = 'subagent'`, parent)
	if err != nil {
		return err
	}
	defer rows.Close()
	return diagnoseRows(rows, w)
}

// PGImport is Import on PostgreSQL: each batch of sessions read whole, then
// their headers and all their events each sent by one COPY, in one
// transaction.
func PGImport(ctx context.Context, conn *pgx.Conn, dir string) error {
	return importFiles(dir, func(files []string) error {
		var sessions, events [][]any
		for _, path := range files {
			h, evs, err := readLog(path)
			if err != nil {
				return err
			}
			sessions = append(sessions, []any{h.ID, h.Version, h.CreatedAt, h.Cwd, h.ParentSession,
				h.SeedLength, h.Origin, h.DelegationDepth, h.AgentPreset, int64(len(evs))})
			for _, e := range evs {
				events = append(events, []any{h.ID, e.Seq, e.Type, e.Time, rawOrNil(e.Data),
					rawOrNil(e.SourceEventSeqs), rawOrNil(e.SurfaceOp), e.Ignorable})
			}
		}
		tx, err := conn.Begin(ctx)
		if err != nil {
			return err
		}
		defer tx.Rollback(ctx)
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"sessions"}, []string{"id", "version", "created_at", "cwd",
			"parent_session", "seed_length", "origin", "delegation_depth", "agent_preset", "next_seq"},
			pgx.CopyFromRows(sessions)); err != nil {
			return err
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"events"}, []string{"session_id", "seq", "type", "time", "data",
			"source_event_seqs", "surface_op", "ignorable"}, pgx.CopyFromRows(events)); err != nil {
			return err
		}
		return tx.Commit(ctx)
	})
}

// CreatePG creates the empty UTF8 database name on the server at admin (a
// URL of a role that may) and returns its URL.
func CreatePG(ctx context.Context, admin, name string) (string, error) {
	if err := adminExec(ctx, admin, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()+" TEMPLATE template0 ENCODING 'UTF8'"); err != nil {
		return "", err
	}
	u, err := url.Parse(admin)
	if err != nil {
		return "", err
	}
	u.Path = "/" + name
	return u.String(), nil
}

// DropPG drops the database name, if it exists, connections and all.
func DropPG(ctx context.Context, admin, name string) error {
	return adminExec(ctx, admin, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
}

func adminExec(ctx context.Context, admin, sql string) error {
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		return fmt.Errorf("%s: %w", sql, err)
	}
	return nil
}

// PGSize is the database's size on disk (pg_database_size: tables,
// indexes, TOAST and free space in them).
func PGSize(ctx context.Context, conn *pgx.Conn) (int64, error) {
	var n int64
	err := conn.QueryRow(ctx, "SELECT pg_database_size(current_database())").Scan(&n)
	return n, err
}
