package subagent

import (
	"context"
	"log/slog"
	"time"

	"github.com/dsh-project/dsh/internal/corpus"
	"github.com/dsh-project/dsh/internal/debuglog"
)

// logLease records a lease event of a child (acquired, renewed, released,
// lost) for --debug.
func logLease(ctx context.Context, event, child, holder string, err error) {
	if !debuglog.Enabled(ctx) {
		return
	}
	attrs := []any{slog.String("event", event), slog.String("child", child), slog.String("holder", holder)}
	if err != nil {
		attrs = append(attrs, slog.String("err", err.Error()))
	}
	debuglog.From(ctx).DebugContext(ctx, "lease", attrs...)
}

// logResolutions records, for --debug, which rung of the ladder served each
// candidate and what it produced, and how long the ladder took.
func logResolutions(ctx context.Context, recs []corpus.Record, out []Resolution, took time.Duration) {
	if !debuglog.Enabled(ctx) {
		return
	}
	l := debuglog.From(ctx)
	for i, res := range out {
		row := "omitted"
		if res.Row != nil {
			row = string(res.Row.Kind)
			if res.Row.Kind == KindDiagnostic {
				row += ":" + string(res.Row.Reason)
			}
		}
		attrs := []any{slog.String("child", recs[i].Header.ID), slog.String("rung", string(res.Rung)), slog.String("row", row)}
		if res.Cause != nil {
			attrs = append(attrs, slog.String("cause", res.Cause.Error()))
		}
		l.DebugContext(ctx, "listing rung", attrs...)
	}
	l.DebugContext(ctx, "listing resolved", slog.Int("candidates", len(recs)), slog.Duration("took", took))
}

// logResolved logs, with --debug, each row served from the store's
// resolved rows, as logResolutions logs the ladder's.
func logResolved(ctx context.Context, rows []Row, took time.Duration) {
	if !debuglog.Enabled(ctx) {
		return
	}
	l := debuglog.From(ctx)
	for _, r := range rows {
		row := string(r.Kind)
		if r.Kind == KindDiagnostic {
			row += ":" + string(r.Reason)
		}
		l.DebugContext(ctx, "listing rung", slog.String("child", r.ID), slog.String("rung", string(RungResolved)), slog.String("row", row))
	}
	l.DebugContext(ctx, "listing resolved", slog.Int("candidates", len(rows)), slog.Duration("took", took))
}

// logRefreshFailed logs, with --debug, a resolution of stored listing rows
// that failed (the rows stay stale).
func logRefreshFailed(ctx context.Context, err error) {
	if debuglog.Enabled(ctx) {
		debuglog.From(ctx).DebugContext(ctx, "resolved rows left stale", slog.String("error", err.Error()))
	}
}
