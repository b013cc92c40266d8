package sqlstore

import (
	"context"
	"log/slog"
	"time"

	"github.com/dsh-project/dsh/internal/debuglog"
)

// LogStatement records one statement a store ran in the --debug log of
// ctx (see debuglog), as "<store> statement" (store is "sqlite" or
// "postgres"). Arguments are counted, not printed: they are session data
// (event payloads, labels) that has no place in a log. A query's time is
// until its first row is ready, not until it is drained. Without a debug
// logger it costs a context lookup.
func LogStatement(ctx context.Context, store, kind, query string, nargs int, start time.Time, err error) {
	if !debuglog.Enabled(ctx) {
		return
	}
	attrs := []any{slog.String("kind", kind), slog.String("sql", query), slog.Int("args", nargs), slog.Duration("took", time.Since(start))}
	if err != nil {
		attrs = append(attrs, slog.String("err", err.Error()))
	}
	debuglog.From(ctx).DebugContext(ctx, store+" statement", attrs...)
}
