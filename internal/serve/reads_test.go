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
	inspects atomic.Int64
}

func (c *countingReader) Inspect(ctx context.Context, id string) (*backend.Inspection, error) {
	c.inspects.Add(1)
	return c.Reader.Inspect(ctx, id)
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
