package pgstore

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dsh-project/dsh/internal/debuglog"
	"github.com/dsh-project/dsh/internal/sqlstore"
)

// tracer logs every statement the pool's connections run, with its
// duration, to the --debug logger of the statement's context
// (sqlstore.LogStatement): a query, an exec and a query row are kind
// "query", each statement of a pipelined batch "batch" and the batch
// itself (one round trip) "pipeline", a COPY "copy". pgx
// ends a query when its rows are closed, so a query's time includes
// reading them. Without a debug logger, a statement costs a context lookup.
type tracer struct{}

var (
	_ pgx.QueryTracer    = tracer{}
	_ pgx.BatchTracer    = tracer{}
	_ pgx.CopyFromTracer = tracer{}
)

type traceKey struct{}

// traced is what a statement's start leaves in its context for its end.
type traced struct {
	sql   string
	nargs int
	start time.Time
}

func startTrace(ctx context.Context, sql string, nargs int) context.Context {
	if !debuglog.Enabled(ctx) {
		return ctx
	}
	return context.WithValue(ctx, traceKey{}, &traced{sql: sql, nargs: nargs, start: time.Now()})
}

func endTrace(ctx context.Context, kind string, err error) {
	if t, ok := ctx.Value(traceKey{}).(*traced); ok {
		sqlstore.LogStatement(ctx, "postgres", kind, t.sql, t.nargs, t.start, err)
	}
}

func (tracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	return startTrace(ctx, data.SQL, len(data.Args))
}

func (tracer) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryEndData) {
	endTrace(ctx, "query", data.Err)
}

// TraceBatchStart starts the trace of a pipeline: its statements are sent
// in one round trip, logged as kind "pipeline" with their number when it
// ends.
func (tracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceBatchStartData) context.Context {
	return startTrace(ctx, strconv.Itoa(data.Batch.Len())+" statements", 0)
}

// TraceBatchQuery logs one statement of a batch, timed from when its
// result was asked for.
func (tracer) TraceBatchQuery(ctx context.Context, _ *pgx.Conn, data pgx.TraceBatchQueryData) {
	if debuglog.Enabled(ctx) {
		sqlstore.LogStatement(ctx, "postgres", "batch", data.SQL, len(data.Args), data.ReadStartTime, data.Err)
	}
}

func (tracer) TraceBatchEnd(ctx context.Context, _ *pgx.Conn, data pgx.TraceBatchEndData) {
	endTrace(ctx, "pipeline", data.Err)
}

func (tracer) TraceCopyFromStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceCopyFromStartData) context.Context {
	if !debuglog.Enabled(ctx) {
		return ctx
	}
	return startTrace(ctx, "COPY "+data.TableName.Sanitize()+" ("+strings.Join(data.ColumnNames, ", ")+") FROM STDIN", 0)
}

func (tracer) TraceCopyFromEnd(ctx context.Context, _ *pgx.Conn, data pgx.TraceCopyFromEndData) {
	endTrace(ctx, "copy", data.Err)
}
