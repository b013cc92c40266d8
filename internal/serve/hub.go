package serve

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/leases"
)

// maxStreams bounds the event streams one server keeps open.
const maxStreams = 256

// hub is the one change watcher of a server and the fan-out to its event
// streams. Streams subscribe to a topic (one page's fragment); on each
// change the hub renders every subscribed topic once — one query per topic
// per change, whatever the number of streams — and sends what changed.
type hub struct {
	// notifier is the store's change signal; nil when the corpus has none
	// (a --source read in place), and the pages then follow only leases
	// running out.
	notifier backend.ChangeNotifier
	// leases reads the lease table, once per refresh (see round): the
	// holders of the trees' running rows, and when the earliest live lease
	// runs out — that changes a listing without any write, so the hub
	// looks again then. Nil: no leases.
	leases  func(ctx context.Context) (leases.Table, error)
	changed atomic.Bool
	wake    chan struct{}
	done    chan struct{}
	once    sync.Once

	mu      sync.Mutex
	topics  map[string]*topic
	streams int
	// changes counts the refreshes a change (or a lease running out)
	// started.
	changes atomic.Int64
	// warn reports the change signal lost (nil: dropped).
	warn func(string)
}

// topic is one fragment the hub keeps current for its streams.
type topic struct {
	render renderFunc
	stale  bool
	last   []byte
	subs   map[*stream]struct{}
}

// renderFunc renders a topic's fragment; what it reads of the leases it
// reads through rd, shared by every topic of one refresh.
type renderFunc func(ctx context.Context, rd *round) ([]byte, error)

// round is what one refresh (or one page request) reads once for all it
// renders: the lease table, read when first asked for, so that N trees
// with running rows cost one lease read per change, not N+1.
type round struct {
	read func(ctx context.Context) (leases.Table, error)
	done bool
	t    leases.Table
	err  error
}

func (r *round) leases(ctx context.Context) (leases.Table, error) {
	if !r.done {
		r.done = true
		if r.read != nil {
			r.t, r.err = r.read(ctx)
		}
	}
	return r.t, r.err
}

// stream is one client's event stream: the latest fragment not yet sent
// (older ones are superseded, never queued).
type stream struct {
	ch chan []byte
}

func newHub(notifier backend.ChangeNotifier) *hub {
	return &hub{notifier: notifier, wake: make(chan struct{}, 1), done: make(chan struct{}), topics: map[string]*topic{}}
}

func (h *hub) kick() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// close ends every stream; the hub stops with its run context.
func (h *hub) close() { h.once.Do(func() { close(h.done) }) }

// run watches the store and refreshes topics until ctx ends.
func (h *hub) run(ctx context.Context) {
	if h.notifier != nil {
		go func() {
			err := h.notifier.WatchChanges(ctx, func() {
				h.changed.Store(true)
				h.kick()
			})
			if ctx.Err() == nil && h.warn != nil {
				h.warn(fmt.Sprintf("live updates stopped: %v", err))
			}
		}()
	}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-h.done:
			return
		case <-h.wake:
		case <-timer.C:
			// The earliest live lease has run out: listings changed.
			h.changed.Store(true)
		}
		rd := &round{read: h.leases}
		// A wake that found nothing changed and nothing stale (several
		// subscribes kick once the round has begun) leaves the lease
		// table as the last round read it, and the timer set from it.
		if !h.refresh(ctx, rd) || h.leases == nil {
			continue
		}
		if t, err := rd.leases(ctx); err == nil {
			if d, ok := t.NextExpiry(); ok {
				// A little after it, by the backend's clock.
				timer.Reset(d + 10*time.Millisecond)
			}
		}
	}
}

// refresh renders every stale topic that has streams and sends each
// stream what changed; it says whether there was a change or a stale
// topic.
func (h *hub) refresh(ctx context.Context, rd *round) bool {
	changed := h.changed.Swap(false)
	if changed {
		h.changes.Add(1)
	}
	h.mu.Lock()
	var todo []*topic
	for _, t := range h.topics {
		if changed {
			t.stale = true
		}
		if t.stale {
			t.stale = false
			todo = append(todo, t)
		}
	}
	h.mu.Unlock()
	for _, t := range todo {
		b, err := t.render(ctx, rd)
		if err != nil {
			if ctx.Err() != nil {
				return true
			}
			b = errorFragment(err)
		}
		h.mu.Lock()
		if !bytes.Equal(b, t.last) {
			t.last = b
			for s := range t.subs {
				s.send(b)
			}
		}
		h.mu.Unlock()
	}
	return changed || len(todo) > 0
}

func (s *stream) send(b []byte) {
	select {
	case <-s.ch:
	default:
	}
	s.ch <- b
}

// subscribe adds a stream to the topic key (rendered by render), sending
// it the topic's current fragment at once when the hub has one.
func (h *hub) subscribe(key string, render renderFunc) (*stream, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.streams >= maxStreams {
		return nil, false
	}
	h.streams++
	s := &stream{ch: make(chan []byte, 1)}
	t, ok := h.topics[key]
	if !ok {
		t = &topic{render: render, stale: true, subs: map[*stream]struct{}{}}
		h.topics[key] = t
	}
	t.subs[s] = struct{}{}
	if t.last != nil {
		s.send(t.last)
	} else {
		h.kick()
	}
	return s, true
}

func (h *hub) unsubscribe(key string, s *stream) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.streams--
	if t, ok := h.topics[key]; ok {
		delete(t.subs, s)
		if len(t.subs) == 0 {
			// Nobody keeps it current any more.
			delete(h.topics, key)
		}
	}
}
