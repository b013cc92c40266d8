package subagent

import (
	"github.com/dsh-project/dsh/internal/dshfixtures"

	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/dshformat"
	"github.com/dsh-project/dsh/internal/projcache"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/sqlitepersist"
)

// runtimeEnv is a dsh store with a root session "p" (cwd /work/project,
// preset "coder", one completed turn) and a Runtime over it with a pinned
// event clock and sequential ids.
type runtimeEnv struct {
	t   testing.TB
	ctx context.Context
	st  *sqlitepersist.Store
	rt  *Runtime
	ids int
}

const testNowMillis = 1_789_000_000_000

func newRuntimeEnv(t testing.TB) *runtimeEnv {
	t.Helper()
	st, err := sqlitepersist.Open(context.Background(), filepath.Join(t.TempDir(), "dsh.db"), sqlitepersist.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e := &runtimeEnv{t: t, ctx: context.Background(), st: st}
	e.rt = &Runtime{
		Store: st,
		Now:   func() time.Time { return time.UnixMilli(testNowMillis) },
		NewID: func() string { e.ids++; return fmt.Sprintf("id-%d", e.ids) },
	}
	e.root("p", nil)
	return e
}

// root stores a root session with one completed turn; depth, when set, is
// recorded as its delegationDepth.
func (e *runtimeEnv) root(id string, depth *int64) {
	e.t.Helper()
	cwd, preset := "/work/project", "coder"
	h := session.Header{ID: id, CreatedAt: 1, Cwd: &cwd, AgentPreset: &preset, DelegationDepth: depth}
	turn := []session.Event{
		{Type: session.TypeTurnStart, Seq: 0, Time: 1, Data: json.RawMessage(`{"turn":1}`)},
		{Type: session.TypeUserMessage, Seq: 1, Time: 1, Data: userMessageData("m-root", "hello", userSource), SurfaceOp: json.RawMessage(`"append"`)},
		{Type: session.TypeTurnEnd, Seq: 2, Time: 1, Data: json.RawMessage(`{"turn":1,"reason":{"kind":"completed"}}`)},
	}
	if err := e.st.CreateSession(e.ctx, h, turn); err != nil {
		e.t.Fatal(err)
	}
}

func (e *runtimeEnv) start(req StartRequest) *TurnResult {
	e.t.Helper()
	if req.Parent == "" {
		req.Parent = "p"
	}
	if req.MaxDepth == 0 {
		req.MaxDepth = 2
	}
	res, err := e.rt.Start(e.ctx, req)
	if err != nil {
		e.t.Fatalf("Start(%+v): %v", req, err)
	}
	return res
}

func (e *runtimeEnv) continuable(id, label string) string {
	e.t.Helper()
	return e.start(StartRequest{ChildID: id, Mode: ModeContinuable, Label: &label, Message: "child task"}).ChildID
}

func (e *runtimeEnv) events(id string) []session.Event {
	e.t.Helper()
	in, err := e.st.Inspect(e.ctx, id)
	if err != nil {
		e.t.Fatalf("Inspect %s: %v", id, err)
	}
	return in.Events
}

// state renders every row dsh keeps (sessions, events, leases, checkpoints)
// so "nothing was written" can be checked exactly.
func (e *runtimeEnv) state() string {
	e.t.Helper()
	var b strings.Builder
	for _, q := range []string{
		"SELECT id, next_seq, revision FROM sessions ORDER BY id",
		"SELECT session_id, seq, type, time, data, surface_op FROM events ORDER BY session_id, seq",
		"SELECT session_id, holder, subagent, as_of_seq FROM leases ORDER BY session_id",
		"SELECT session_id, as_of_seq, rows FROM projection_checkpoints ORDER BY session_id",
	} {
		rows, err := e.st.Querier().QueryContext(e.ctx, q)
		if err != nil {
			e.t.Fatal(err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				e.t.Fatal(err)
			}
			fmt.Fprintln(&b, vals...)
		}
		rows.Close()
	}
	return b.String()
}

func typesOf(events []session.Event) string {
	var ts []string
	for _, e := range events {
		ts = append(ts, e.Type)
	}
	return strings.Join(ts, " ")
}

func labelp(s string) *string { return &s }

// The four start kinds write DSH's layouts (semantics §7.2).
func TestStartLayouts(t *testing.T) {
	const (
		policy = "approval/policy"
		inbox  = "agent/inbox/spliced"
		turnTo = "turn/start agent/inbox/spliced"
		body   = "step/start user/message assistant/message step/end turn/end"
	)
	tests := []struct {
		name      string
		req       StartRequest
		wantTypes string
		seedLen   *int64
		firstTurn int64
	}{
		{"continuable fresh", StartRequest{Mode: ModeContinuable, Label: labelp("work")},
			"subagent/descriptor session/end-seed " + policy + " " + inbox + " " + turnTo + " " + body, nil, 1},
		{"continuable fork", StartRequest{Mode: ModeContinuable, Label: labelp("work"), Fork: true},
			"turn/start user/message turn/end session/end-seed subagent/descriptor session/end-seed " + policy + " " + inbox + " " + turnTo + " " + body, ptr64(3), 2},
		{"one-shot fresh", StartRequest{Mode: ModeOneShot},
			policy + " " + inbox + " " + turnTo + " subagent/descriptor " + body, nil, 1},
		{"one-shot fork", StartRequest{Mode: ModeOneShot, Label: labelp("recall"), Fork: true},
			"turn/start user/message turn/end session/end-seed " + policy + " " + inbox + " " + turnTo + " subagent/descriptor " + body, ptr64(3), 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newRuntimeEnv(t)
			tt.req.Message = "do <it> & report"
			res := e.start(tt.req)
			if res.Outcome.Kind != OutcomeCompleted || res.Outcome.Reply != "echo: do <it> & report" || res.Turn != tt.firstTurn {
				t.Fatalf("result = %+v", res)
			}
			if res.ChildID != "id-1" || res.MessageID != "id-2" {
				t.Errorf("ids = %s/%s, want the first two fresh ids", res.ChildID, res.MessageID)
			}
			in, err := e.st.Inspect(e.ctx, res.ChildID)
			if err != nil {
				t.Fatal(err)
			}
			if got := typesOf(in.Events); got != tt.wantTypes {
				t.Fatalf("layout\n got %s\nwant %s", got, tt.wantTypes)
			}
			if len(in.Closers) != 0 || !in.Verified {
				t.Errorf("log not balanced and verified: closers %d, verified %v", len(in.Closers), in.Verified)
			}
			h := in.Header
			want := session.Header{Version: 0, ID: "id-1", CreatedAt: testNowMillis, Cwd: labelp("/work/project"),
				ParentSession: labelp("p"), SeedLength: tt.seedLen, Origin: labelp("subagent"),
				DelegationDepth: ptr64(1), AgentPreset: labelp("coder")}
			if string(h.MarshalJSONL()) != string(want.MarshalJSONL()) {
				t.Errorf("header\n got %s\nwant %s", h.MarshalJSONL(), want.MarshalJSONL())
			}
			checkTurnPayloads(t, in.Events, tt.firstTurn, "id-2", `{"kind":"user"}`, "do <it> & report", "echo")
			provider := "spawn"
			if tt.req.Fork {
				provider = "fork"
			}
			desc := eventsOf(in.Events, session.TypeDescriptor)
			wantDesc := `{"version":2,"mode":"one-shot","provider":"` + provider + `"}`
			switch {
			case tt.req.Mode == ModeContinuable:
				wantDesc = `{"version":2,"mode":"continuable","provider":"` + provider + `","label":"work","agentProvider":"echo","agentModel":"echo"}`
			case tt.req.Label != nil:
				wantDesc = `{"version":2,"mode":"one-shot","provider":"` + provider + `","label":"recall"}`
			}
			if len(desc) != 1 || string(desc[0].Data) != wantDesc {
				t.Errorf("descriptor = %v, want exactly %s", desc, wantDesc)
			}
			if p := eventsOf(in.Events, session.TypeApproval); len(p) != 1 || string(p[0].Data) != `{"policy":"never","source":"delegation"}` {
				t.Errorf("policy events = %v", p)
			}
			// The lease is released and the checkpoint is current.
			if ls, _ := e.st.Leases(e.ctx); len(ls) != 0 {
				t.Errorf("leases after start: %+v", ls)
			}
			e.expectCheckpoint(h, int64(len(in.Events)-1))
		})
	}
}

func ptr64(v int64) *int64 { return &v }

func eventsOf(events []session.Event, typ string) []session.Event {
	var out []session.Event
	for _, e := range events {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

// checkTurnPayloads checks the payloads of the last turn in events: the
// inbox enqueue and claim, turn/start, the user message (id, text, source),
// the reply and turn/end completed.
func checkTurnPayloads(t *testing.T, events []session.Event, turn int64, msgID, source, text, provider string) {
	t.Helper()
	var start int
	for i, e := range events {
		if e.Type == session.TypeTurnStart {
			start = i
		}
	}
	msg := `{"content":[{"type":"text","text":` + jsonString(text) + `}],"source":` + source + `,"role":"user","id":"` + msgID + `"}`
	want := map[int]string{
		-1: `{"target":"next-turn","start":0,"inserted":[` + msg + `]}`,
		0:  fmt.Sprintf(`{"turn":%d}`, turn),
		1:  `{"target":"next-turn","start":0,"removedCount":1,"inserted":[]}`,
	}
	for off, data := range want {
		if got := string(events[start+off].Data); got != data {
			t.Errorf("seq %d (%s) = %s, want %s", start+off, events[start+off].Type, got, data)
		}
	}
	users := eventsOf(events[start:], session.TypeUserMessage)
	if len(users) != 1 || string(users[0].Data) != msg || string(users[0].SurfaceOp) != `"append"` {
		t.Errorf("user message = %+v, want %s appended to the surface", users, msg)
	}
	replies := eventsOf(events[start:], session.TypeAssistantMsg)
	wantReply := regexp.MustCompile(fmt.Sprintf(`^\{"turn":%d,"step":1,"message":\{"role":"assistant","content":\[\{"type":"text","text":%s\}\],"source":\{"kind":"model","provider":"%s","model":"%s"\},"id":"[^"]+"\}\}$`,
		turn, regexp.QuoteMeta(jsonString("echo: "+text)), provider, provider))
	if len(replies) != 1 || !wantReply.Match(replies[0].Data) || replies[0].HasSourceEventSeqs {
		t.Errorf("reply = %+v, want %s", replies, wantReply)
	}
	last := events[len(events)-1]
	if want := fmt.Sprintf(`{"turn":%d,"reason":{"kind":"completed"}}`, turn); last.Type != session.TypeTurnEnd || string(last.Data) != want {
		t.Errorf("last event %s %s, want turn/end %s", last.Type, last.Data, want)
	}
	for _, e := range events[start:] {
		if e.Time != testNowMillis {
			t.Errorf("seq %d time %d, want the runtime clock %d", e.Seq, e.Time, int64(testNowMillis))
		}
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&").Replace(string(b))
}

// expectCheckpoint checks that h's checkpoint record covers the log up to
// asOfSeq (written at turn/end and release).
func (e *runtimeEnv) expectCheckpoint(h session.Header, asOfSeq int64) {
	e.t.Helper()
	found, err := projcache.NewCache(e.st, NewRegistry()).Lookup(e.ctx, h)
	if err != nil {
		e.t.Fatal(err)
	}
	if found.AsOfSeq != asOfSeq {
		e.t.Errorf("checkpoint of %s as of %d (%v), want %d", h.ID, found.AsOfSeq, found.Status, asOfSeq)
	}
}

// A fork child's seed is the parent's events up to its last turn/end,
// verbatim; a parent with no completed turn gives a fresh child.
func TestStartForkSeed(t *testing.T) {
	e := newRuntimeEnv(t)
	parent := e.events("p")
	// An open turn after the completed one is not inherited.
	open := []session.Event{{Type: session.TypeTurnStart, Seq: 3, Time: 2, Data: json.RawMessage(`{"turn":2}`)}}
	if err := e.st.Append(e.ctx, "p", 3, open); err != nil {
		t.Fatal(err)
	}
	id := e.start(StartRequest{Mode: ModeContinuable, Label: labelp("w"), Fork: true, Message: "m"}).ChildID
	got := e.events(id)
	for i, pe := range parent {
		if b1, _ := got[i].MarshalJSON(); string(b1) != mustJSON(t, pe) {
			t.Errorf("seed event %d = %s, want the parent's %s", i, b1, mustJSON(t, pe))
		}
	}
	if got[3].Type != session.TypeEndSeed || got[3].Time != testNowMillis {
		t.Errorf("event 3 = %+v, want the end-seed marker", got[3])
	}

	// No completed turn: no seed, no seedLength; still the fork provider.
	if err := e.st.CreateSession(e.ctx, session.Header{ID: "empty", CreatedAt: 1, Cwd: labelp("/w")}, nil); err != nil {
		t.Fatal(err)
	}
	res := e.start(StartRequest{Parent: "empty", Mode: ModeContinuable, Label: labelp("w"), Fork: true, Message: "m"})
	in, _ := e.st.Inspect(e.ctx, res.ChildID)
	if in.Header.SeedLength != nil || in.Events[0].Type != session.TypeDescriptor || !strings.Contains(string(in.Events[0].Data), `"provider":"fork"`) || res.Turn != 1 {
		t.Errorf("fork of a turnless parent: header %s, first %s %s, turn %d", in.Header.MarshalJSONL(), in.Events[0].Type, in.Events[0].Data, res.Turn)
	}
}

func mustJSON(t *testing.T, e session.Event) string {
	t.Helper()
	b, err := e.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Refused starts, in DSH's order, write nothing.
func TestStartChecks(t *testing.T) {
	e := newRuntimeEnv(t)
	deep := int64(2)
	e.root("deep", &deep)
	e.continuable("taken", "x")
	before := e.state()
	tests := []struct {
		name     string
		req      StartRequest
		wantCode dsherr.Code
		wantMsg  string
	}{
		{"continuable without label", StartRequest{Mode: ModeContinuable}, dsherr.InvalidInput, "a continuable child needs a label"},
		{"unknown mode", StartRequest{Mode: "later", Label: labelp("x")}, dsherr.Usage, `unknown mode "later" (want continuable or one-shot)`},
		{"unknown provider", StartRequest{Mode: ModeOneShot, Provider: ProviderConfig{Name: "gpt"}}, dsherr.Usage, `unknown provider "gpt" (want echo or exec)`},
		{"exec without command", StartRequest{Mode: ModeOneShot, Provider: ProviderConfig{Name: ProviderExec}}, dsherr.Usage, "the exec provider needs a command (--exec CMD)"},
		{"command without exec", StartRequest{Mode: ModeOneShot, Provider: ProviderConfig{Name: ProviderEcho, Command: "true"}}, dsherr.Usage, `a command (--exec) needs the exec provider, not "echo"`},
		{"missing parent", StartRequest{Parent: "nope", Mode: ModeOneShot}, dsherr.NotFound, `parent session "nope" not found`},
		{"duplicate id", StartRequest{ChildID: "taken", Mode: ModeOneShot}, dsherr.DuplicateChild, `subagent "taken" already exists`},
		{"parent id reused", StartRequest{ChildID: "p", Mode: ModeOneShot}, dsherr.DuplicateChild, `subagent "p" already exists`},
		{"depth", StartRequest{Parent: "deep", Mode: ModeOneShot}, dsherr.DepthExceeded, "subagent depth 3 exceeds maxDepth 2"},
		{"negative maxDepth", StartRequest{Mode: ModeOneShot, MaxDepth: -1}, dsherr.InvalidInput, "subagent maxDepth must be a non-negative safe integer"},
		// Duplicate is checked before depth, as DSH does.
		{"duplicate before depth", StartRequest{Parent: "deep", ChildID: "taken", Mode: ModeOneShot}, dsherr.DuplicateChild, `subagent "taken" already exists`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := tt.req
			if req.Parent == "" {
				req.Parent = "p"
			}
			if req.MaxDepth == 0 {
				req.MaxDepth = 2
			}
			req.Message = "m"
			_, err := e.rt.Start(e.ctx, req)
			if dsherr.CodeOf(err) != tt.wantCode || err.Error() != tt.wantMsg {
				t.Fatalf("Start = %v (%s), want %s %q", err, dsherr.CodeOf(err), tt.wantCode, tt.wantMsg)
			}
			if after := e.state(); after != before {
				t.Fatalf("a refused start wrote:\n%s", after)
			}
		})
	}
	// maxDepth 0 refuses even a root's child (C-S9).
	_, err := e.rt.Start(e.ctx, StartRequest{Parent: "p", Mode: ModeOneShot, Message: "m", MaxDepth: 0})
	if err == nil || err.Error() != "subagent depth 1 exceeds maxDepth 0" {
		t.Errorf("maxDepth 0: %v", err)
	}
	// Depth 2 under a depth-1 child is within maxDepth 2.
	res := e.start(StartRequest{Parent: "taken", Mode: ModeOneShot, Message: "m"})
	if h, _ := e.st.Header(e.ctx, res.ChildID); h.Depth() != 2 {
		t.Errorf("grandchild depth %d, want 2", h.Depth())
	}
}

// A child id chosen by dsh is a lowercase UUID v4, like crypto.randomUUID.
func TestStartDefaultIDs(t *testing.T) {
	e := newRuntimeEnv(t)
	e.rt.NewID = nil
	res := e.start(StartRequest{Mode: ModeOneShot, Message: "m"})
	uuidV4 := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	if !uuidV4.MatchString(res.ChildID) || !uuidV4.MatchString(res.MessageID) || res.ChildID == res.MessageID {
		t.Errorf("ids %q, %q are not two fresh UUID v4", res.ChildID, res.MessageID)
	}
}

// A start whose id is taken by a concurrent writer between the check and
// the creation is still refused as a duplicate, and leaves no lease.
func TestStartDuplicateRace(t *testing.T) {
	e := newRuntimeEnv(t)
	plan, err := e.rt.planStart(e.ctx, StartRequest{Parent: "p", ChildID: "c", Mode: ModeOneShot, Message: "m", MaxDepth: 2})
	if err != nil {
		t.Fatal(err)
	}
	e.continuable("c", "first")
	before := e.state()
	if _, err := e.rt.begin(e.ctx, plan); dsherr.CodeOf(err) != dsherr.DuplicateChild || !errors.Is(err, backend.ErrDuplicate) {
		t.Fatalf("create over an existing id = %v", err)
	}
	if e.state() != before {
		t.Fatal("a refused create wrote")
	}
}

func BenchmarkStartEcho(b *testing.B) {
	e := newRuntimeEnv(b)
	label := "bench"
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := e.rt.Start(e.ctx, StartRequest{Parent: "p", Mode: ModeContinuable, Label: &label, Message: "m", MaxDepth: 2}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "children/s")
}

// dshSnapshot reads one DSH-written session file (packed chunk rows
// expanded), substituting an absolute cwd for the fixtures' placeholder.
func dshSnapshot(t *testing.T, scenario, file string) *dshformat.Session {
	t.Helper()
	path := filepath.Join(dshfixtures.Dir(t, filepath.Join("dsh-snapshots", "acp-agent", scenario)), file)
	src, err := dshformat.OpenJSONL(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	hs, err := src.Headers(context.Background())
	if err != nil || len(hs) != 1 {
		t.Fatalf("%s: headers %v, %v", path, hs, err)
	}
	s, err := src.Read(context.Background(), hs[0].ID)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	cwd := "/work/project"
	s.Header.Cwd = &cwd
	return s
}

// offlinePart is the comparison of a DSH log with a dsh offline turn: from
// index from through the first turn/end, the events of the types an offline
// turn writes, minus DSH's injected runtime-context user messages (source
// kind "plugin"). Model traffic (request/header, request/context,
// assistant/chunk and packed chunk rows), session titles and follow-ups a
// resident child queued mid-turn have no offline counterpart.
func offlinePart(events []session.Event, from int) []session.Event {
	written := map[string]bool{
		session.TypeDescriptor: true, session.TypeEndSeed: true, session.TypeApproval: true,
		session.TypeInboxSpliced: true, session.TypeTurnStart: true, session.TypeStepStart: true,
		session.TypeUserMessage: true, session.TypeAssistantMsg: true, session.TypeStepEnd: true,
		session.TypeTurnEnd: true,
	}
	var out []session.Event
	inTurn := false
	for _, e := range events[from:] {
		switch {
		case !written[e.Type]:
		case e.Type == session.TypeUserMessage && (strings.Contains(string(e.Data), `"source":{"kind":"plugin"`) || strings.Contains(string(e.Data), `"source":{"kind":"runtime-context"`)):
		case e.Type == session.TypeInboxSpliced && inTurn && !strings.HasSuffix(string(e.Data), `"inserted":[]}`):
		default:
			out = append(out, e)
		}
		switch e.Type {
		case session.TypeTurnStart:
			inTurn = true
		case session.TypeTurnEnd:
			return out
		}
	}
	return out
}

var (
	messageIDs = regexp.MustCompile(`"id":"[^"]*"`)
	dshRoute   = strings.NewReplacer(`"deepseek-official"`, `"echo"`, `"deepseek-v4-flash"`, `"echo"`)
)

// comparePayloads compares the two parts event by event: same types in the
// same order, and the same payload bytes up to message ids and the model
// route — except the assistant's reply, whose content an offline provider
// decides.
func comparePayloads(t *testing.T, dsh, ours []session.Event) {
	t.Helper()
	if typesOf(dsh) != typesOf(ours) {
		t.Fatalf("event types\n DSH %s\n dsh %s", typesOf(dsh), typesOf(ours))
	}
	for i := range dsh {
		if dsh[i].Type == session.TypeAssistantMsg {
			continue
		}
		want := messageIDs.ReplaceAllString(dshRoute.Replace(string(dsh[i].Data)), `"id":"ID"`)
		got := messageIDs.ReplaceAllString(string(ours[i].Data), `"id":"ID"`)
		if got != want {
			t.Errorf("%s (DSH seq %d, dsh seq %d)\n DSH %s\n dsh %s", dsh[i].Type, dsh[i].Seq, ours[i].Seq, want, got)
		}
		if string(dsh[i].SurfaceOp) != string(ours[i].SurfaceOp) {
			t.Errorf("%s surfaceOp: DSH %s, dsh %s", dsh[i].Type, dsh[i].SurfaceOp, ours[i].SurfaceOp)
		}
	}
}

// promptOf is the text and label DSH's child was started with.
func promptOf(t *testing.T, events []session.Event) (text string, label *string) {
	t.Helper()
	for _, e := range events {
		switch e.Type {
		case session.TypeUserMessage:
			if text == "" {
				var m struct {
					Content []struct{ Text string }
				}
				if err := json.Unmarshal(e.Data, &m); err != nil || len(m.Content) == 0 {
					t.Fatalf("prompt: %v", err)
				}
				text = m.Content[0].Text
			}
		case session.TypeDescriptor:
			d, err := ParseDescriptor(e.Data)
			if err != nil || d == nil {
				t.Fatalf("DSH descriptor: %v", err)
			}
			label = d.Label
		}
	}
	return text, label
}

// The four start kinds against children DSH itself wrote (semantics §7.2).
// DSH has no snapshot of a continuable fork; its layout is checked against
// the derived sequence in TestStartLayouts.
func TestStartMatchesDSHLayouts(t *testing.T) {
	tests := []struct {
		scenario string
		mode     Mode
		fork     bool
	}{
		{"subagent-list-agents", ModeContinuable, false},
		{"subagent-continuable", ModeContinuable, false},
		{"subagent-spawn-in-process", ModeOneShot, false},
		{"subagent-fork-in-process", ModeOneShot, true},
	}
	for _, tt := range tests {
		t.Run(tt.scenario, func(t *testing.T) {
			child := dshSnapshot(t, tt.scenario, "session.1.jsonl")
			e := newRuntimeEnv(t)
			parentID := child.Header.Parent()
			parentHeader := session.Header{ID: parentID, CreatedAt: 1, Cwd: child.Header.Cwd}
			var parentLog []session.Event
			cut := int(child.Header.InheritedCut())
			if tt.fork {
				// The parent as it was when DSH forked it: its events up
				// to the inherited cut.
				parent := dshSnapshot(t, tt.scenario, "session.jsonl")
				parentHeader = parent.Header
				parentLog = parent.Events[:cut]
			}
			if res, err := e.st.ImportSession(e.ctx, parentHeader, parentLog, nil); err != nil || !res.Verified {
				t.Fatalf("import parent: %+v, %v", res, err)
			}
			text, label := promptOf(t, child.Events[cut:])
			res := e.start(StartRequest{Parent: parentID, Mode: tt.mode, Label: label, Fork: tt.fork, Message: text})
			ours := e.events(res.ChildID)

			if tt.fork {
				for i := 0; i < cut; i++ {
					if got, want := mustJSON(t, ours[i]), mustJSON(t, child.Events[i]); got != want {
						t.Fatalf("inherited event %d\n DSH %s\n dsh %s", i, want, got)
					}
				}
			}
			comparePayloads(t, offlinePart(child.Events, cut), offlinePart(ours, cut))

			in, _ := e.st.Inspect(e.ctx, res.ChildID)
			if got, want := withoutIdentity(in.Header), withoutIdentity(child.Header); string(got.MarshalJSONL()) != string(want.MarshalJSONL()) {
				t.Errorf("header\n DSH %s\n dsh %s", want.MarshalJSONL(), got.MarshalJSONL())
			}
		})
	}
}

// withoutIdentity blanks the fields that name one particular child.
func withoutIdentity(h session.Header) session.Header {
	h.ID, h.CreatedAt = "", 0
	return h
}
