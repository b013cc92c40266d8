package backend

import (
	"context"

	"github.com/dsh-project/dsh/internal/session"
)

// UsageReader is a store that keeps each session's token usage beside its
// log (migration 0012), exact after every write by whichever writer, so that
// the totals of many sessions are read without reading a log. The rules
// for what counts are package usage's (docs/usage.md); a store applies them
// in its triggers.
type UsageReader interface {
	// UsageOf calls fn once for every id of ids that names a stored
	// session, in no particular order, with that session's totals by
	// model and what the store records of its log's damage. A session
	// without usage gets an empty Models. Ids the store does not hold are
	// left out. It writes nothing, ever.
	UsageOf(ctx context.Context, ids []string, fn func(SessionUsage) error) error
}

// SessionUsage is one session's stored token totals.
type SessionUsage struct {
	// LogDamage is the session's id and the damage recorded beside its
	// log.
	LogDamage
	// Models holds the totals per model name ("" for events naming none),
	// in byte order of the name.
	Models []ModelUsage
}

// ModelUsage is the sum over the events of one session naming one model.
type ModelUsage struct {
	Model string
	// Messages is how many events carried usage.
	Messages        int64
	InputTokens     int64
	OutputTokens    int64
	CacheReadTokens int64
	ReasoningTokens int64
}

// AsFoundReader is a corpus read in place (a foreign DSH corpus) that
// offers each log as an import would store it, so that the figures of
// UsageReader can be computed from it by streaming.
type AsFoundReader interface {
	// LogAsFound returns session id's log as found: the events an import
	// stores (a fork's inherited prefix included), and where a torn tail
	// or the damage inside the committed region begins. An unknown id
	// wraps ErrNotFound; a log that cannot be read at all is an error.
	LogAsFound(ctx context.Context, id string) (*AsFoundLog, error)
}

// AsFoundLog is one log as found.
type AsFoundLog struct {
	Header session.Header
	Events []session.Event
	// TornFrom and DamagedFrom are -1 when there is none.
	TornFrom    int64
	DamagedFrom int64
}
