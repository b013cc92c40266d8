package sqlitepersist

import (
	"context"
	"database/sql"
)

// stmtCache is a write transaction's Querier: each distinct statement text
// run through ExecContext or QueryRowContext is compiled once per
// transaction and reused (the driver compiles every unprepared statement
// afresh, and an import runs the same few statements for every session of
// a batch). database/sql closes the statements when the transaction ends.
//
// A cached statement runs without a per-statement context watcher (a
// goroutine the driver starts for every statement whose context can be
// cancelled): cancellation is checked before each statement instead. The
// statements run inside a BEGIN IMMEDIATE transaction, which already holds
// the write lock, so none of them waits for another process.
//
// QueryContext is not cached: a caller may still be reading one result set
// when it runs the same query again.
type stmtCache struct {
	tx    *sql.Tx
	stmts map[string]*sql.Stmt
}

func newStmtCache(tx *sql.Tx) *stmtCache {
	return &stmtCache{tx: tx, stmts: make(map[string]*sql.Stmt)}
}

func (c *stmtCache) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	if st, ok := c.stmts[query]; ok {
		return st, nil
	}
	st, err := c.tx.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	c.stmts[query] = st
	return st, nil
}

func (c *stmtCache) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	st, err := c.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(context.WithoutCancel(ctx), args...)
}

func (c *stmtCache) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if ctx.Err() != nil {
		return c.tx.QueryRowContext(ctx, query, args...) // reports the cancellation
	}
	st, err := c.stmt(ctx, query)
	if err != nil {
		return c.tx.QueryRowContext(ctx, query, args...) // reports the compile error
	}
	return st.QueryRowContext(context.WithoutCancel(ctx), args...)
}

func (c *stmtCache) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return c.tx.QueryContext(ctx, query, args...)
}

// PrepareContext returns the cached statement: insertEvents prepares its
// INSERT once per call, which is then once per transaction.
func (c *stmtCache) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	return c.stmt(ctx, query)
}
