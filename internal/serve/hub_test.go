package serve

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dsh-project/dsh/internal/dshcompat"
	"github.com/dsh-project/dsh/internal/location"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/sqlitepersist"
	"github.com/dsh-project/dsh/internal/subagent"
)

// TestHubOneQueryPerChange: fifty event streams on one page cost one
// listing per change, not one per stream, and every stream sees the change.
func TestHubOneQueryPerChange(t *testing.T) {
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "dsh.db")
	w, err := sqlitepersist.Open(ctx, db, sqlitepersist.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.CreateSession(ctx, session.Header{ID: "parent", CreatedAt: 1}, nil); err != nil {
		t.Fatal(err)
	}
	st, err := sqlitepersist.OpenReadOnly(ctx, db, sqlitepersist.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var listings atomic.Int64
	s, err := New(Corpus{
		Reader: st,
		Lister: func() *subagent.Lister {
			listings.Add(1)
			return subagent.NewStoreLister(st, st, 1)
		},
		View:        func(ctx context.Context, fn func(location.Reader) error) error { return fn(st) },
		LookupError: func(_ string, err error) error { return err },
	}, Config{Profile: dshcompat.Default})
	if err != nil {
		t.Fatal(err)
	}
	hubCtx, stop := context.WithCancel(ctx)
	defer stop()
	go s.hub.run(hubCtx)
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	defer s.Close()

	const clients = 50
	var (
		wg      sync.WaitGroup
		initial sync.WaitGroup
		sawNew  atomic.Int64
	)
	initial.Add(clients)
	streamCtx, cancelStreams := context.WithTimeout(ctx, 20*time.Second)
	defer cancelStreams()
	for range clients {
		wg.Go(func() {
			req, _ := http.NewRequestWithContext(streamCtx, http.MethodGet, srv.URL+"/api/v1/events?view=tree&id=parent&scope=descendants", nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				initial.Done()
				return
			}
			defer resp.Body.Close()
			sc := bufio.NewScanner(resp.Body)
			events := 0
			for sc.Scan() {
				line := sc.Text()
				if line == "event: fragment" {
					if events++; events == 1 {
						initial.Done()
					}
				}
				if strings.Contains(line, `data-id="new-child"`) {
					sawNew.Add(1)
					return
				}
			}
		})
	}
	initial.Wait()
	before := listings.Load()
	changesBefore := s.hub.changes.Load()
	child := "parent"
	origin := session.OriginSubagent
	if err := w.CreateSession(ctx, session.Header{ID: "new-child", CreatedAt: 2, ParentSession: &child, Origin: &origin}, nil); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if n := sawNew.Load(); n != clients {
		t.Fatalf("%d of %d streams saw the new child", n, clients)
	}
	queries := listings.Load() - before
	changes := s.hub.changes.Load() - changesBefore
	if changes < 1 || queries != changes {
		t.Errorf("%d listing(s) for %d change round(s) and %d streams; want one per change", queries, changes, clients)
	}
	t.Logf("%d streams, %d change round(s), %d listing(s)", clients, changes, queries)
}

// TestStreamOutlivesServerTimeouts: an event stream keeps receiving after
// the server's read and write timeouts have passed, and ends when the
// server shuts down.
func TestStreamOutlivesServerTimeouts(t *testing.T) {
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "dsh.db")
	w, err := sqlitepersist.Open(ctx, db, sqlitepersist.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.CreateSession(ctx, session.Header{ID: "parent", CreatedAt: 1}, nil); err != nil {
		t.Fatal(err)
	}
	st, err := sqlitepersist.OpenReadOnly(ctx, db, sqlitepersist.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s, err := New(Corpus{
		Reader:      st,
		Lister:      func() *subagent.Lister { return subagent.NewStoreLister(st, st, 1) },
		View:        func(ctx context.Context, fn func(location.Reader) error) error { return fn(st) },
		LookupError: func(_ string, err error) error { return err },
	}, Config{Profile: dshcompat.Default})
	if err != nil {
		t.Fatal(err)
	}
	s.timeouts.read, s.timeouts.write = 200*time.Millisecond, 200*time.Millisecond
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- s.Run(runCtx, ln) }()
	resp, err := http.Get("http://" + ln.Addr().String() + "/api/v1/events?view=tree&id=parent")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	time.Sleep(time.Second)
	origin := session.OriginSubagent
	parent := "parent"
	if err := w.CreateSession(ctx, session.Header{ID: "late-child", CreatedAt: 2, ParentSession: &parent, Origin: &origin}, nil); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(10 * time.Second)
	for seen := false; !seen; {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("the stream ended before the change reached it")
			}
			seen = strings.Contains(l, `data-id="late-child"`)
		case <-deadline:
			t.Fatal("the change never reached the stream")
		}
	}
	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	for range lines {
	}
}
