package serve

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/dshcompat"
	"github.com/dsh-project/dsh/internal/location"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/sqlitepersist"
	"github.com/dsh-project/dsh/internal/subagent"
)

// countingReader counts the reads a server makes of a real store.
type countingReader struct {
	location.Reader
	inspects, leases atomic.Int64
}

func (c *countingReader) Inspect(ctx context.Context, id string) (*backend.Inspection, error) {
	c.inspects.Add(1)
	return c.Reader.Inspect(ctx, id)
}

func (c *countingReader) Leases(ctx context.Context) ([]backend.Lease, error) {
	c.leases.Add(1)
	return c.Reader.Leases(ctx)
}

// UsageOf passes the store's usage totals on (the embedded interface
// does not carry them).
func (c *countingReader) UsageOf(ctx context.Context, ids []string, fn func(backend.SessionUsage) error) error {
	return c.Reader.(backend.UsageReader).UsageOf(ctx, ids, fn)
}

// Search and DamagedLogs pass the store's full-text index on (the
// embedded interface does not carry it).
func (c *countingReader) Search(ctx context.Context, req backend.SearchRequest, fn func(backend.SearchHit) error) error {
	return c.Reader.(backend.SearchReader).Search(ctx, req, fn)
}

func (c *countingReader) DamagedLogs(ctx context.Context, ids []string, fn func(backend.LogDamage) error) error {
	return c.Reader.(backend.SearchReader).DamagedLogs(ctx, ids, fn)
}

// WatchChanges passes the store's change signal on (the embedded
// interface does not carry it).
func (c *countingReader) WatchChanges(ctx context.Context, notify func()) error {
	return c.Reader.(backend.ChangeNotifier).WatchChanges(ctx, notify)
}

// readsFixture is a SQLite store holding a parent with two subagent
// children, opened for writing (w) and read-only behind a counter (r), and
// a server over the counter.
func readsFixture(t *testing.T) (w *sqlitepersist.Store, r *countingReader, s *Server) {
	t.Helper()
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "dsh.db")
	w, err := sqlitepersist.Open(ctx, db, sqlitepersist.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	var turn []session.Event
	for _, e := range []struct{ typ, data string }{
		{session.TypeTurnStart, `{"turn":1}`},
		{session.TypeUserMessage, `{"content":[{"type":"text","text":"first words"}],"source":{"kind":"user"},"role":"user","id":"u-1"}`},
		{session.TypeStepStart, `{"turn":1,"step":1}`},
		{session.TypeAssistantMsg, `{"turn":1,"step":1,"message":{"id":"a-1","role":"assistant","content":[{"type":"text","text":"last words"}],"source":{"kind":"model","provider":"echo","model":"echo-1"}}}`},
		{session.TypeStepEnd, `{"turn":1,"step":1}`},
		{session.TypeTurnEnd, `{"turn":1,"reason":{"kind":"completed"}}`},
	} {
		ev := session.Event{Seq: int64(len(turn)), Type: e.typ, Time: 10 + int64(len(turn)), Data: json.RawMessage(e.data)}
		if e.typ == session.TypeUserMessage || e.typ == session.TypeAssistantMsg {
			ev.SurfaceOp = json.RawMessage(`"append"`)
		}
		turn = append(turn, ev)
	}
	if err := w.CreateSession(ctx, session.Header{ID: "parent", CreatedAt: 1}, turn); err != nil {
		t.Fatal(err)
	}
	for i, id := range []string{"c1", "c2"} {
		addChild(t, w, id, int64(2+i))
	}
	st, err := sqlitepersist.OpenReadOnly(ctx, db, sqlitepersist.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	r = &countingReader{Reader: st}
	s, err = New(Corpus{
		Reader:      r,
		Lister:      func() *subagent.Lister { return subagent.NewStoreLister(st, st, 1) },
		View:        func(ctx context.Context, fn func(location.Reader) error) error { return fn(r) },
		LookupError: func(_ string, err error) error { return err },
	}, Config{Profile: dshcompat.Default})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return w, r, s
}

// addChild writes a continuable subagent child of "parent".
func addChild(t *testing.T, w *sqlitepersist.Store, id string, createdAt int64) {
	t.Helper()
	parent, origin, cwd, depth := "parent", session.OriginSubagent, "/work", int64(1)
	h := session.Header{ID: id, CreatedAt: createdAt, Cwd: &cwd, ParentSession: &parent, Origin: &origin, DelegationDepth: &depth}
	desc := session.Event{Seq: 0, Type: "subagent/descriptor", Time: createdAt, Data: json.RawMessage(`{"version":2,"mode":"continuable","provider":"spawn","label":"` + id + `"}`)}
	if err := w.CreateSession(context.Background(), h, []session.Event{desc}); err != nil {
		t.Fatal(err)
	}
}

// TestSessionPageReadsTheLogOnce: a session page shows the log's summary
// and its last events from one read of the log.
func TestSessionPageReadsTheLogOnce(t *testing.T) {
	_, r, s := readsFixture(t)
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/sessions/parent", nil)
	req.Host = "127.0.0.1"
	s.Handler().ServeHTTP(rec, req)
	body, _ := io.ReadAll(rec.Body)
	if rec.Code != http.StatusOK || !strings.Contains(string(body), "last words") || !strings.Contains(string(body), "first words") {
		t.Fatalf("session page: %d, without its events:\n%s", rec.Code, body)
	}
	if n := r.inspects.Load(); n != 1 {
		t.Errorf("the session page read the log %d times; want once", n)
	}
}

// TestRefreshReadsLeasesOnce: a change refreshes several trees with a
// running row each, and the whole round — their holders and the next
// lease expiry — reads the lease table once.
func TestRefreshReadsLeasesOnce(t *testing.T) {
	ctx := context.Background()
	w, r, s := readsFixture(t)
	holder := backend.NewLeaseHolder(time.Hour)
	if _, err := w.AcquireLease(ctx, "c1", holder); err != nil {
		t.Fatal(err)
	}
	// A running child's row is its holder's published snapshot.
	snap := &backend.LiveSnapshot{Subagent: json.RawMessage(`{"mode":"continuable","label":"c1","seq":0}`), AsOfSeq: 0}
	if err := w.HeartbeatLease(ctx, "c1", holder, snap); err != nil {
		t.Fatal(err)
	}
	hubCtx, stop := context.WithCancel(ctx)
	defer stop()
	go s.hub.run(hubCtx)
	var streams []*stream
	for _, q := range []string{"scope=descendants", "scope=children", "scope=descendants&limit=50", "scope=children&limit=40"} {
		req := httptest.NewRequest(http.MethodGet, "/api/v1/events?view=tree&id=parent&"+q, nil)
		key, render, err := s.pages.topic(s, req)
		if err != nil {
			t.Fatal(err)
		}
		st, ok := s.hub.subscribe(key, render)
		if !ok {
			t.Fatal("subscribe refused")
		}
		defer s.hub.unsubscribe(key, st)
		streams = append(streams, st)
	}
	wait := func(what string, ok func([]byte) bool) {
		t.Helper()
		for i, st := range streams {
			deadline := time.After(10 * time.Second)
			for done := false; !done; {
				select {
				case b := <-st.ch:
					done = ok(b)
				case <-deadline:
					t.Fatalf("stream %d never showed %s", i, what)
				}
			}
		}
	}
	// settle lets a round in flight finish: a round counts its change
	// before it reads the leases, and the watcher's first signal (sent as
	// it starts) may begin a round after the streams already show the
	// subscribes' fragments.
	settle := func() (reads, changes int64) {
		for last := int64(-1); last != r.leases.Load()+s.hub.changes.Load(); {
			last = r.leases.Load() + s.hub.changes.Load()
			time.Sleep(200 * time.Millisecond)
		}
		return r.leases.Load(), s.hub.changes.Load()
	}
	wait("the running child's holder", func(b []byte) bool { return strings.Contains(string(b), `class="holder"`) })
	before, changesBefore := settle()
	addChild(t, w, "c3", 9)
	wait("the new child", func(b []byte) bool { return strings.Contains(string(b), `data-id="c3"`) })
	after, changesAfter := settle()
	reads, changes := after-before, changesAfter-changesBefore
	if changes < 1 || reads != changes {
		t.Errorf("%d lease read(s) for %d change round(s) of %d trees with a running row; want one per round", reads, changes, len(streams))
	}
}

// TestSearchPageDrawsAtMostPageHits: the search page draws at most
// pageHits hits, n=0 (all) included, and then links the API for the rest;
// an empty box shows the form alone.
func TestSearchPageDrawsAtMostPageHits(t *testing.T) {
	_, _, s := readsFixture(t)
	get := func(path string) (int, string) {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.Host = "127.0.0.1"
		s.Handler().ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}
	for _, c := range []struct {
		pageHits int
		query    string
		hits     int
		more     bool
	}{
		{1, "q=words&n=0", 1, true},
		{1, "q=words", 1, true},
		{1, "q=words&n=1", 1, false},
		{2, "q=words&n=0", 2, false},
		{5, "q=words", 2, false},
		{1, "q=+", 0, false},
	} {
		s.pageHits = c.pageHits
		status, body := get("/search?" + c.query)
		hits := strings.Count(body, `<tr class="hit"`)
		more := strings.Contains(body, `<a class="more" href="/api/v1/search?`)
		if status != http.StatusOK || hits != c.hits || more != c.more || strings.Contains(body, `class="error"`) {
			t.Errorf("pageHits %d, ?%s: %d, %d hits, more %v; want %d, %v:\n%s", c.pageHits, c.query, status, hits, more, c.hits, c.more, body)
		}
	}
}
