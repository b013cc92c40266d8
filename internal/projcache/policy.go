package projcache

import (
	"time"

	"github.com/dsh-project/dsh/internal/session"
)

// Write-policy defaults: DSH's shipped web bundle writes every 200 events or
// 5 seconds (config keys cache.writeEveryEvents and cache.writeIntervalMs).
const (
	DefaultWriteEveryEvents = 200
	DefaultWriteInterval    = 5 * time.Second
)

// WritePolicy throttles checkpoint writes between the mandatory points (a
// `turn/end`, and the writer releasing the session). A zero field takes its
// default.
type WritePolicy struct {
	// EveryEvents writes once this many events are pending.
	EveryEvents int
	// Interval writes when events are pending and this long has passed
	// since the last write (or since the writer started).
	Interval time.Duration
}

func (p WritePolicy) withDefaults() WritePolicy {
	if p.EveryEvents <= 0 {
		p.EveryEvents = DefaultWriteEveryEvents
	}
	if p.Interval <= 0 {
		p.Interval = DefaultWriteInterval
	}
	return p
}

// Checkpointer decides when a writer checkpoints one session. The writer
// calls Observe after each durable append, writes a checkpoint (Cache.Put)
// whenever Observe or Release says so, and calls Written after a successful
// write. A failed write is simply not acknowledged: the events stay pending
// and the next Observe asks again. It is not safe for concurrent use; each
// writer owns one per session.
//
// DSH arms a timer for the interval; a dsh writer is a short-lived process
// that always releases its session, so the interval is checked on the next
// append instead and the release writes whatever is still pending.
type Checkpointer struct {
	policy    WritePolicy
	now       func() time.Time
	pending   int
	lastWrite time.Time
	written   bool
}

// NewCheckpointer starts the bookkeeping for one session.
func NewCheckpointer(p WritePolicy) *Checkpointer {
	c := &Checkpointer{policy: p.withDefaults(), now: time.Now}
	c.lastWrite = c.now()
	return c
}

// Observe records events that are now durable in the log and reports
// whether to write a checkpoint now: always after a `turn/end`, otherwise
// when EveryEvents are pending or Interval has passed since the last write.
func (c *Checkpointer) Observe(events ...session.Event) bool {
	if len(events) == 0 {
		return false
	}
	c.pending += len(events)
	for _, e := range events {
		if e.Type == session.TypeTurnEnd {
			return true
		}
	}
	return c.pending >= c.policy.EveryEvents || c.now().Sub(c.lastWrite) >= c.policy.Interval
}

// Release reports whether the writer must checkpoint as it lets the session
// go: yes if events are pending, or if this writer has not written one yet
// (so a session the writer loaded leaves with a current record).
func (c *Checkpointer) Release() bool { return c.pending > 0 || !c.written }

// Written acknowledges a successful checkpoint write covering every event
// observed so far.
func (c *Checkpointer) Written() {
	c.pending = 0
	c.lastWrite = c.now()
	c.written = true
}
