package pgstore

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
	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/jsjson"
	"github.com/dsh-project/dsh/internal/pgtest"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/sqlitepersist"
)

func ptr[T any](v T) *T { return &v }

// events builds DSH-shaped logs with contiguous seqs.
type events struct {
	list []session.Event
	turn int
}

func (b *events) add(typ, data string) *events {
	n := int64(len(b.list))
	b.list = append(b.list, session.Event{Type: typ, Seq: n, Time: 1_700_000_000_000 + n*10, Data: json.RawMessage(data)})
	return b
}

func (b *events) surface() *events {
	b.list[len(b.list)-1].SurfaceOp = json.RawMessage(`"append"`)
	return b
}

func (b *events) turnStart(prompt string) *events {
	b.turn++
	b.add(session.TypeTurnStart, fmt.Sprintf(`{"turn":%d}`, b.turn))
	b.add(session.TypeUserMessage, `{"content":[{"type":"text","text":`+jsjson.String(prompt)+`}],"source":{"kind":"user"},"role":"user","id":"u-`+fmt.Sprint(len(b.list))+`"}`).surface()
	return b.add(session.TypeStepStart, fmt.Sprintf(`{"turn":%d,"step":1}`, b.turn))
}

func (b *events) answer(text string) *events {
	b.add(session.TypeAssistantMsg, fmt.Sprintf(`{"turn":%d,"step":1,"message":{"id":"a-%d","role":"assistant","content":[{"type":"text","text":%s}],"source":{"kind":"model","provider":"echo","model":"echo-1"}}}`,
		b.turn, len(b.list), jsjson.String(text))).surface()
	b.add(session.TypeStepEnd, fmt.Sprintf(`{"turn":%d,"step":1}`, b.turn))
	return b.add(session.TypeTurnEnd, fmt.Sprintf(`{"turn":%d,"reason":{"kind":"completed"}}`, b.turn))
}

func header(id string, parent *string, created int64) session.Header {
	h := session.Header{Version: session.FormatVersion, ID: id, CreatedAt: created, Cwd: ptr("/work/project"), ParentSession: parent}
	if parent != nil {
		h.Origin, h.DelegationDepth = ptr("subagent"), ptr(int64(1))
	}
	return h
}

// outcome renders a result and its error so that two backends' answers
// can be compared exactly: values in full, errors by code and message.
func outcome(v any, err error) string {
	if err != nil {
		return fmt.Sprintf("error %s: %s", dsherr.CodeOf(err), err)
	}
	b, jerr := json.Marshal(v)
	if jerr != nil {
		return fmt.Sprintf("%#v", v)
	}
	return string(b)
}

// scenario runs the same operations on a backend and records every answer.
func scenario(t *testing.T, st backend.Backend) []string {
	ctx := context.Background()
	var out []string
	rec := func(what string, v any, err error) { out = append(out, what+" → "+outcome(v, err)) }

	parent := header("parent", nil, 1000)
	full := (&events{}).turnStart("hello").answer("hi")
	rec("create parent", nil, st.CreateSession(ctx, parent, full.list))
	rec("create duplicate", nil, st.CreateSession(ctx, parent, nil))
	// Children with equal createdAt: enumeration falls back to the id.
	for _, id := range []string{"child-b", "child-a", "Child-c", "child-é"} {
		rec("create "+id, nil, st.CreateSession(ctx, header(id, ptr("parent"), 2000), nil))
	}
	rec("create fork", nil, st.CreateSession(ctx, session.Header{Version: session.FormatVersion, ID: "fork", CreatedAt: 1500, ParentSession: ptr("parent"), SeedLength: ptr(int64(0))}, nil))

	more := (&events{list: nil, turn: 0}).turnStart("again")
	shifted := make([]session.Event, len(more.list))
	for i, e := range more.list {
		e.Seq += int64(len(full.list))
		shifted[i] = e
	}
	rec("append stale", nil, st.Append(ctx, "parent", 3, shifted))
	rec("append", nil, st.Append(ctx, "parent", int64(len(full.list)), shifted))
	rec("append invalid", nil, st.Append(ctx, "parent", int64(len(full.list)+len(shifted)), shifted))
	ins, err := st.Inspect(ctx, "parent")
	rec("inspect interrupted", ins, err)
	ins, err = st.InspectTypes(ctx, "parent", session.TypeTurnEnd, session.TypeUserMessage)
	rec("inspect types", ins, err)
	ins, err = st.Load(ctx, "parent")
	rec("load repairs", ins, err)
	ins, err = st.Load(ctx, "parent")
	rec("load again", ins, err)
	ins, err = st.Inspect(ctx, "nobody")
	rec("inspect unknown", ins, err)

	// A faithful import: a gap, then a torn tail kept as found.
	torn := (&events{}).turnStart("x").answer("y")
	gappy := append([]session.Event{}, torn.list[:3]...)
	late := torn.list[4]
	gappy = append(gappy, late)
	res, err := st.ImportSession(ctx, header("imported-gap", ptr("parent"), 3000), gappy, nil)
	rec("import gap", res, err)
	res, err = st.ImportSession(ctx, header("imported-torn", ptr("parent"), 3000), torn.list[:4],
		&backend.TornTail{FromSeq: 4, Reason: "unterminated line", Raw: []byte(`{"type":"assist`)})
	rec("import torn", res, err)
	for _, id := range []string{"imported-gap", "imported-torn", "parent", "child-a"} {
		a, err := st.Audit(ctx, id)
		if a != nil && a.ReadErr != nil {
			rec("audit "+id+" read error", nil, a.ReadErr)
			a.ReadErr = nil
		}
		rec("audit "+id, a, err)
		ins, err := st.Inspect(ctx, id)
		rec("inspect "+id, ins, err)
	}
	ins, err = st.Load(ctx, "imported-torn")
	rec("load torn", ins, err)

	var hs []string
	rec("list headers", &hs, st.ListHeaders(ctx, func(h session.Header) error { hs = append(hs, h.ID); return nil }))
	var kids []session.Header
	rec("children", &kids, st.ChildrenOf(ctx, "parent", func(h session.Header) error { kids = append(kids, h); return nil }))
	var tree []string
	err = st.(interface {
		SubtreeOf(context.Context, string, func(session.Header) error) error
	}).SubtreeOf(ctx, "parent", func(h session.Header) error { tree = append(tree, h.ID); return nil })
	slices.Sort(tree) // in no particular order
	rec("subtree", tree, err)
	has, err := st.HasSubagentChild(ctx, "parent")
	rec("has subagent child", has, err)
	ps, err := st.SubagentParents(ctx, []string{"parent", "child-a", "nobody"})
	rec("subagent parents", ps, err)

	// Checkpoints: put, replace whole, read by id, by parent, all, delete.
	cp := backend.CheckpointRecord{Witness: header("child-a", ptr("parent"), 2000), AsOfSeq: -1, Rows: []byte(`{}`)}
	rec("put checkpoint", nil, st.PutCheckpoint(ctx, cp))
	cp.AsOfSeq, cp.Rows = 7, []byte(`{"subagent":{"ver":1,"seq":3,"val":null}}`)
	rec("replace checkpoint", nil, st.PutCheckpoint(ctx, cp))
	rec("put fork checkpoint", nil, st.PutCheckpoint(ctx, backend.CheckpointRecord{Witness: session.Header{ID: "fork", CreatedAt: 1500, ParentSession: ptr("parent"), SeedLength: ptr(int64(0))}, AsOfSeq: -1, Rows: []byte(`{}`)}))
	type childLister interface {
		ChildListing(context.Context, string, func(backend.ListedChild) error) error
		SubtreeListing(context.Context, string, func(backend.ListedChild) error) error
	}
	var listed []backend.ListedChild
	rec("child listing", &listed, st.(childLister).ChildListing(ctx, "parent", func(c backend.ListedChild) error { listed = append(listed, c); return nil }))
	var sub []backend.ListedChild
	err = st.(childLister).SubtreeListing(ctx, "parent", func(c backend.ListedChild) error { sub = append(sub, c); return nil })
	slices.SortFunc(sub, func(a, b backend.ListedChild) int { return strings.Compare(a.Header.ID, b.Header.ID) })
	rec("subtree listing", sub, err)
	got, found, err := st.Checkpoint(ctx, "child-a")
	rec("checkpoint", []any{got, found}, err)
	var all []backend.CheckpointRecord
	rec("each checkpoint", &all, st.EachCheckpoint(ctx, func(r backend.CheckpointRecord) error { all = append(all, r); return nil }))
	var some []string
	rec("child checkpoints", &some, st.ChildCheckpoints(ctx, "parent", func(r backend.CheckpointRecord) error { some = append(some, r.Witness.ID); return nil }))
	rec("delete checkpoint", nil, st.DeleteCheckpoint(ctx, "child-a"))
	n, err := st.ClearCheckpoints(ctx)
	rec("clear checkpoints", n, err)

	// Leases: acquire, conflict, renew with a snapshot, release.
	a := backend.LeaseHolder{ID: "holder-a", PID: 1, Host: "a", TTL: time.Hour}
	b := backend.LeaseHolder{ID: "holder-b", PID: 2, Host: "b", TTL: time.Hour}
	_, err = st.AcquireLease(ctx, "child-a", a)
	rec("acquire", nil, err)
	_, err = st.AcquireLease(ctx, "child-a", b)
	rec("acquire held", nil, dsherrCodeOnly(err))
	rec("heartbeat", nil, st.HeartbeatLease(ctx, "child-a", a, &backend.LiveSnapshot{Subagent: json.RawMessage(`{"childId":"child-a"}`), AsOfSeq: 2}))
	rec("heartbeat lost", nil, st.HeartbeatLease(ctx, "child-a", b, nil))
	live, err := st.LiveSessions(ctx)
	rec("live", live, err)
	rec("release", nil, st.ReleaseLease(ctx, "child-a", a))
	rec("release again", nil, st.ReleaseLease(ctx, "child-a", a))
	_, err = st.AcquireLease(ctx, "nobody", a)
	rec("acquire unknown", nil, err)
	return out
}

// dsherrCodeOnly keeps an error's code and sentinel but not its message,
// which names a remaining lifetime that differs between any two runs.
func dsherrCodeOnly(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s (held: %v)", dsherr.CodeOf(err), strings.Contains(err.Error(), "held by another live process"))
}

// The PostgreSQL backend answers every operation exactly as the SQLite
// one does: same values, same errors, same order.
func TestSameAnswersAsSQLite(t *testing.T) {
	ctx := context.Background()
	lite, err := sqlitepersist.Open(ctx, filepath.Join(t.TempDir(), "dsh.db"), sqlitepersist.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer lite.Close()
	pg := openT(t, pgtest.NewDatabase(t))
	want := scenario(t, lite)
	got := scenario(t, pg)
	for i := range max(len(want), len(got)) {
		var w, g string
		if i < len(want) {
			w = want[i]
		}
		if i < len(got) {
			g = got[i]
		}
		if w != g {
			t.Errorf("step %d differs\nsqlite:   %s\npostgres: %s", i, w, g)
		}
	}
}
