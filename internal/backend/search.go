package backend

import (
	"context"
	"encoding/json"
)

// SearchReader is a store that keeps a full-text index of its message text
// (migration 0013), exact after every write by whichever writer. What is
// indexed and how a query reads are package search's rules
// (docs/search.md); a store applies them in its triggers.
type SearchReader interface {
	// Search calls fn for the events of the sessions' own logs (seq at or
	// after the header's cut) whose text matches q, best first as the
	// engine ranks them, at most q.Limit of them (0: all). It writes
	// nothing, ever.
	Search(ctx context.Context, q SearchRequest, fn func(SearchHit) error) error
	// DamagedLogs calls fn for every session of ids (nil: of the store)
	// whose log is not whole: a torn tail, damage inside the committed
	// region, or a header kept for a refused import; and for every id of
	// ids the store holds no session of (Missing: a listing may name a
	// child that was never stored). It writes nothing.
	DamagedLogs(ctx context.Context, ids []string, fn func(LogDamage) error) error
}

// SearchRequest is one search, in each engine's query language (written by
// package search from one parsed query).
type SearchRequest struct {
	// FTS5 is the SQLite FTS5 MATCH expression, TSQuery the text for
	// PostgreSQL's to_tsquery('simple', …).
	FTS5, TSQuery string
	// Sessions limits the search to these ids; nil searches every session.
	Sessions []string
	// Types limits the event types (nil: every searched type).
	Types []string
	// Since and Until bound the event time (ms since the epoch): Since
	// inclusive, Until exclusive; nil for no bound.
	Since, Until *int64
	Limit        int
}

// SearchHit is one matching event, its data as stored.
type SearchHit struct {
	SessionID string
	Seq, Time int64
	Type      string
	Data      json.RawMessage
}

// LogDamage is what a store records beside a session's log that is not
// whole, read by SearchReader.DamagedLogs and, with each session's totals,
// by UsageReader.UsageOf.
type LogDamage struct {
	ID string
	// TornFrom is the seq a torn tail kept beside the log starts at, -1
	// when there is none; DamagedFrom likewise for a log damaged inside
	// its committed region (damaged_logs). Refused marks a header kept
	// for a session an import could not store: it has no log.
	TornFrom, DamagedFrom int64
	Refused               bool
	// Missing: the store holds no session of that id (DamagedLogs only:
	// UsageOf reports the sessions it holds).
	Missing bool
}
