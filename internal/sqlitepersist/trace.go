package sqlitepersist

import (
	"context"
	"database/sql"
	"time"

	"github.com/dsh-project/dsh/internal/sqlstore"
)

// tracedQuerier logs every statement run through it, with its duration, to
// the --debug logger of the statement's context (sqlstore.LogStatement).
// Without one, it adds a context lookup per statement.
type tracedQuerier struct{ q Querier }

func (t tracedQuerier) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	start := time.Now()
	res, err := t.q.ExecContext(ctx, query, args...)
	logStatement(ctx, "exec", query, len(args), start, err)
	return res, err
}

func (t tracedQuerier) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	start := time.Now()
	rows, err := t.q.QueryContext(ctx, query, args...)
	logStatement(ctx, "query", query, len(args), start, err)
	return rows, err
}

func (t tracedQuerier) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	start := time.Now()
	row := t.q.QueryRowContext(ctx, query, args...)
	logStatement(ctx, "query row", query, len(args), start, row.Err())
	return row
}

func logStatement(ctx context.Context, kind, query string, nargs int, start time.Time, err error) {
	sqlstore.LogStatement(ctx, "sqlite", kind, query, nargs, start, err)
}
