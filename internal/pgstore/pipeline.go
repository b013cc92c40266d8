package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/dsh-project/dsh/internal/backend"
)

var _ backend.PipelinedUpdater = (*Store)(nil)

// pipelineLimit is how many statements a pipeline holds before it sends
// them without waiting for a statement that needs a result: it bounds the
// memory their arguments hold, not the round trips (one per send).
const pipelineLimit = 512

// pipeline is a write transaction that holds back the statements whose
// results nobody waits for (execLater) and sends them together, in one
// round trip, before the next statement that does wait (a query, an
// Exec, a COPY) and before the commit: pgx's batch, which pipelines
// them. The server runs them in order, as if each had been sent alone.
//
// A held-back statement that fails (or whose check refuses its row count)
// fails the whole transaction, reported by the statement or commit that
// sent it: the server has skipped what followed it, so no savepoint can
// take the transaction back to a state the caller knows. Every later use
// of the pipeline returns that error, and the commit is not attempted.
type pipeline struct {
	tx     pgx.Tx
	batch  pgx.Batch
	failed error
}

var _ querier = (*pipeline)(nil)

// later holds back sql: check, when set, judges its row count when it has
// run. A full pipeline is sent now.
func (p *pipeline) later(ctx context.Context, check func(rows int64) error, sql string, args ...any) error {
	if p.failed != nil {
		return p.failed
	}
	q := p.batch.Queue(sql, args...)
	if check != nil {
		q.Exec(func(tag pgconn.CommandTag) error { return check(tag.RowsAffected()) })
	}
	if p.batch.Len() >= pipelineLimit {
		return p.flush(ctx)
	}
	return nil
}

// flush sends the statements held back and waits for their results.
func (p *pipeline) flush(ctx context.Context) error {
	if p.failed != nil {
		return p.failed
	}
	if p.batch.Len() == 0 {
		return nil
	}
	err := p.tx.SendBatch(ctx, &p.batch).Close()
	p.batch = pgx.Batch{}
	if err != nil {
		p.failed = fmt.Errorf("a write sent ahead in this transaction: %w", err)
		return p.failed
	}
	return nil
}

// The querier methods send what is held back first, so that every
// statement sees the writes issued before it.

func (p *pipeline) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if err := p.flush(ctx); err != nil {
		return pgconn.CommandTag{}, err
	}
	return p.tx.Exec(ctx, sql, args...)
}

func (p *pipeline) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if err := p.flush(ctx); err != nil {
		return nil, err
	}
	return p.tx.Query(ctx, sql, args...)
}

func (p *pipeline) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if err := p.flush(ctx); err != nil {
		return errRow{err}
	}
	return p.tx.QueryRow(ctx, sql, args...)
}

func (p *pipeline) CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error) {
	if err := p.flush(ctx); err != nil {
		return 0, err
	}
	return p.tx.CopyFrom(ctx, table, columns, src)
}

// errRow is a row whose scan fails with the pipeline's error.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// execLater runs sql on q, or holds it back when q is a pipeline; check,
// when set, judges its row count either way.
func execLater(ctx context.Context, q querier, check func(rows int64) error, sql string, args ...any) error {
	if p, ok := q.(*pipeline); ok {
		return p.later(ctx, check, sql, args...)
	}
	tag, err := q.Exec(ctx, sql, args...)
	if err == nil && check != nil {
		err = check(tag.RowsAffected())
	}
	return err
}

// UpdatePipelined implements backend.PipelinedUpdater: update, with the
// view's writes that wait for no result (an import's inserts and
// bookkeeping, its savepoints) sent together instead of one round trip
// each.
func (s *Store) UpdatePipelined(ctx context.Context, fn func(tx backend.Store) error) error {
	if s.tx != nil {
		return s.Update(ctx, fn)
	}
	return s.write(ctx, true, func(tx *Store) error { return fn(tx) })
}
