// Package debuglog carries dsh's --debug logger (log/slog) through a
// context, so the packages below the CLI can say what they do — statements
// run and their timings, lease events, which ladder rung served each child —
// without a global logger: tests run many commands in one process, and a
// command that was not asked for --debug logs nothing and pays only a
// context lookup per event.
package debuglog

import (
	"context"
	"log/slog"
)

type loggerKey struct{}

var discard = slog.New(slog.DiscardHandler)

// With returns ctx carrying l.
func With(ctx context.Context, l *slog.Logger) context.Context {
	return context.WithValue(ctx, loggerKey{}, l)
}

// From returns the logger ctx carries, or one that discards everything.
func From(ctx context.Context) *slog.Logger {
	if l, ok := ctx.Value(loggerKey{}).(*slog.Logger); ok {
		return l
	}
	return discard
}

// Enabled reports whether ctx carries a logger that records debug events,
// for callers that would otherwise compute attributes nobody reads.
func Enabled(ctx context.Context) bool {
	return From(ctx).Enabled(ctx, slog.LevelDebug)
}
