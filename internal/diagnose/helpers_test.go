package diagnose

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/jsjson"
	"github.com/dsh-project/dsh/internal/projcache"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/sqlitepersist"
	"github.com/dsh-project/dsh/internal/subagent"
)

// store is a real dsh database in a temporary directory, written through the
// store's own write paths (and, for damage no write path produces, SQL on
// the file).
type store struct {
	t     testing.TB
	ctx   context.Context
	st    *sqlitepersist.Store
	path  string
	clock int64
}

func newStore(t testing.TB) *store {
	t.Helper()
	path := filepath.Join(t.TempDir(), "dsh.db")
	st, err := sqlitepersist.Open(context.Background(), path, sqlitepersist.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return &store{t: t, ctx: context.Background(), st: st, path: path, clock: 1_789_000_000_000}
}

func ptr[T any](v T) *T { return &v }

func (s *store) tick() int64 {
	s.clock += 1000
	return s.clock
}

// root stores a session without a parent, with one completed turn.
func (s *store) root(id string) session.Header {
	s.t.Helper()
	h := session.Header{ID: id, CreatedAt: s.tick(), Cwd: ptr("/work")}
	s.create(h, turn(0, 1))
	return h
}

// childOf is the header of a depth-1 subagent child of parent.
func (s *store) childOf(parent, id string) session.Header {
	return session.Header{ID: id, CreatedAt: s.tick(), Cwd: ptr("/work"), ParentSession: ptr(parent),
		Origin: ptr(session.OriginSubagent), DelegationDepth: ptr(int64(1))}
}

func (s *store) create(h session.Header, events []session.Event) {
	s.t.Helper()
	if err := s.st.CreateSession(s.ctx, h, events); err != nil {
		s.t.Fatalf("create %s: %v", h.ID, err)
	}
}

// importLog stores a log the validating write paths refuse, faithfully.
func (s *store) importLog(h session.Header, events []session.Event) {
	s.t.Helper()
	if _, err := s.st.ImportSession(s.ctx, h, events, nil); err != nil {
		s.t.Fatalf("import %s: %v", h.ID, err)
	}
}

func (s *store) exec(query string, args ...any) {
	s.t.Helper()
	if _, err := s.st.Querier().ExecContext(s.ctx, query, args...); err != nil {
		s.t.Fatalf("%s: %v", query, err)
	}
}

// checkpoint writes the record a writer leaves at a turn's end: h's log
// folded up to its last event.
func (s *store) checkpoint(h session.Header, events []session.Event) {
	s.t.Helper()
	reg := subagent.NewRegistry()
	f := reg.NewFold()
	f.Apply(events...)
	cp, err := f.Checkpoint()
	if err != nil {
		s.t.Fatal(err)
	}
	if err := projcache.NewCache(s.st, reg).Put(s.ctx, h, f.AsOfSeq(), cp); err != nil {
		s.t.Fatal(err)
	}
}

// lease makes a holder take the lease on id and publish snap (nil: nothing
// published yet). ttl < 0 leaves a lease that expired |ttl| ago: a holder
// that crashed.
func (s *store) lease(id, holderID string, ttl time.Duration, snap *backend.LiveSnapshot) {
	s.t.Helper()
	h := backend.LeaseHolder{ID: holderID, PID: 4242, Host: "build-7", TTL: ttl}
	st := s.st
	if ttl < 0 {
		at := time.Now().Add(2 * ttl)
		h.TTL, st = -ttl, st.WithClock(func() time.Time { return at })
	}
	if _, err := st.AcquireLease(s.ctx, id, h); err != nil {
		s.t.Fatal(err)
	}
	if snap != nil {
		if err := st.HeartbeatLease(s.ctx, id, h, snap); err != nil {
			s.t.Fatal(err)
		}
	}
}

// published is a holder's snapshot with the raw subagent view.
func published(view string) *backend.LiveSnapshot {
	return &backend.LiveSnapshot{Subagent: json.RawMessage(view)}
}

// audit runs diagnose over the store and collects the reports.
func (s *store) audit(opts Options) ([]Report, Summary, error) {
	s.t.Helper()
	var reports []Report
	sum, err := Run(s.ctx, s.st, opts, func(r Report) error {
		reports = append(reports, r)
		return nil
	})
	return reports, sum, err
}

const (
	userData   = `{"content":[{"type":"text","text":"work"}],"source":{"kind":"user"},"role":"user","id":"m-%d"}`
	replyData  = `{"turn":%d,"step":1,"message":{"role":"assistant","content":[{"type":"text","text":"done"}],"source":{"kind":"model","provider":"echo","model":"echo"},"id":"a-%d"}}`
	turnEndFmt = `{"turn":%d,"reason":{"kind":"completed"}}`
)

func ev(seq int64, typ, data string) session.Event {
	e := session.Event{Type: typ, Seq: seq, Time: 1_789_000_000_000 + seq, Data: json.RawMessage(data)}
	if typ == session.TypeUserMessage || typ == session.TypeAssistantMsg {
		e.SurfaceOp = json.RawMessage(`"append"`)
	}
	return e
}

// turn is one completed turn (number n) starting at seq from.
func turn(from int64, n int) []session.Event {
	return append(openTurn(from, n), ev(from+5, session.TypeTurnEnd, fmt.Sprintf(turnEndFmt, n)))
}

// openTurn is a turn whose process stopped after the step ended, before
// its turn/end.
func openTurn(from int64, n int) []session.Event {
	return []session.Event{
		ev(from, session.TypeTurnStart, fmt.Sprintf(`{"turn":%d}`, n)),
		ev(from+1, session.TypeStepStart, fmt.Sprintf(`{"turn":%d,"step":1}`, n)),
		ev(from+2, session.TypeUserMessage, fmt.Sprintf(userData, from)),
		ev(from+3, session.TypeAssistantMsg, fmt.Sprintf(replyData, n, from)),
		ev(from+4, session.TypeStepEnd, fmt.Sprintf(`{"turn":%d,"step":1}`, n)),
	}
}

func continuable(label string) string {
	return `{"version":2,"mode":"continuable","provider":"spawn","label":` + jsjson.String(label) + `}`
}

const oneShot = `{"version":2,"mode":"one-shot","provider":"spawn"}`

// withDescriptor is a child log: payload as descriptor at seq 0, then a
// completed turn.
func withDescriptor(payload string) []session.Event {
	return append([]session.Event{ev(0, session.TypeDescriptor, payload)}, turn(1, 1)...)
}

// got renders a report's findings as "CODE@seq" (or "CODE"), in order.
func got(r Report) string {
	var parts []string
	for _, f := range r.Findings {
		s := string(f.Code)
		if f.Seq != nil {
			s += fmt.Sprintf("@%d", *f.Seq)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

func byID(reports []Report) map[string]Report {
	m := map[string]Report{}
	for _, r := range reports {
		m[r.ID] = r
	}
	return m
}

func ids(reports []Report) []string {
	out := make([]string, len(reports))
	for i, r := range reports {
		out[i] = r.ID
	}
	return out
}

func finding(r Report, code Code) *Finding {
	i := slices.IndexFunc(r.Findings, func(f Finding) bool { return f.Code == code })
	if i < 0 {
		return nil
	}
	return &r.Findings[i]
}
