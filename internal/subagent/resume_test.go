package subagent

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/dshfixtures"
	"github.com/dsh-project/dsh/internal/session"
)

func (e *runtimeEnv) resume(child, parent, message string) (*TurnResult, error) {
	return e.rt.Resume(e.ctx, ResumeRequest{Child: child, Parent: parent, Message: message})
}

// userTexts are the texts of a log's user messages, in order.
func userTexts(t *testing.T, events []session.Event) []string {
	t.Helper()
	var out []string
	for _, e := range eventsOf(events, session.TypeUserMessage) {
		var m struct {
			Content []struct{ Text string }
		}
		if err := json.Unmarshal(e.Data, &m); err != nil || len(m.Content) != 1 {
			t.Fatalf("user message %s: %v", e.Data, err)
		}
		out = append(out, m.Content[0].Text)
	}
	return out
}

// C-F2: a settled child takes a follow-up through a cold resume: one more
// turn, relayed from the parent, and still exactly one descriptor.
func TestResumeSettledChild(t *testing.T) {
	e := newRuntimeEnv(t)
	id := e.continuable("c", "child task")
	before := e.events(id)
	res, err := e.resume(id, "p", "continue please")
	if err != nil {
		t.Fatalf("Resume: %v", err)
	}
	if res.Turn != 2 || res.Outcome.Kind != OutcomeCompleted || res.Outcome.Reply != "echo: continue please" || res.TookOver != nil || res.Torn != nil || len(res.Closers) != 0 {
		t.Fatalf("result = %+v", res)
	}
	after := e.events(id)
	for i, ev := range before {
		if mustJSON(t, after[i]) != mustJSON(t, ev) {
			t.Fatalf("event %d changed by the resume", i)
		}
	}
	appended := after[len(before):]
	if got, want := typesOf(appended), "session/end-seed agent/inbox/spliced turn/start agent/inbox/spliced step/start user/message assistant/message step/end turn/end"; got != want {
		t.Fatalf("resumed turn\n got %s\nwant %s", got, want)
	}
	checkTurnPayloads(t, after, 2, res.MessageID, `{"kind":"coordinator","form":"relay","senderSessionId":"p"}`, "continue please", "echo")
	if got := strings.Join(userTexts(t, after), "|"); got != "child task|continue please" {
		t.Errorf("user texts %q", got)
	}
	if n := len(eventsOf(after, session.TypeDescriptor)); n != 1 {
		t.Errorf("%d descriptors after resume, want exactly 1", n)
	}
	if n := len(eventsOf(after, session.TypeApproval)); n != 1 {
		t.Errorf("%d policy events after resume, want the start's only", n)
	}
	// Turn numbers keep counting; the depth stays the header's.
	res, err = e.resume(id, "p", "and again")
	if err != nil || res.Turn != 3 {
		t.Fatalf("second resume: %+v, %v", res, err)
	}
	h, _ := e.st.Header(e.ctx, id)
	if h.Depth() != 1 {
		t.Errorf("depth after resume %d", h.Depth())
	}
	e.expectCheckpoint(h, int64(len(e.events(id))-1))
}

// The refusals of DSH's cold resume, in its order; none writes anything.
func TestResumeRefusals(t *testing.T) {
	e := newRuntimeEnv(t)
	e.continuable("c", "work")
	e.start(StartRequest{ChildID: "one", Mode: ModeOneShot, Label: labelp("once"), Message: "m"})
	grand := "grand"
	e.start(StartRequest{Parent: "c", ChildID: grand, Mode: ModeContinuable, Label: labelp("g"), Message: "m"})
	if _, err := e.st.ImportSession(e.ctx, authoredChild("bad", "p", nil), []session.Event{
		{Type: session.TypeUserMessage, Seq: 0, Time: 1, Data: json.RawMessage(`{"content":[],"source":{"kind":"user"},"role":"user","id":"u"}`)},
	}, nil); err != nil {
		t.Fatal(err)
	}
	held := backend.LeaseHolder{ID: "other", PID: 99, Host: "elsewhere", TTL: time.Hour}
	e.continuable("busy", "busy")
	if _, err := e.st.AcquireLease(e.ctx, "busy", held); err != nil {
		t.Fatal(err)
	}
	before := e.state()
	noState := dshNoStateMessage(t)
	tests := []struct {
		name, child, parent string
		code                dsherr.Code
		msg                 string
		is                  error
	}{
		{"C-F6 unknown id", "missing", "p", dsherr.NotResumable, `subagent "missing" is unavailable`, backend.ErrNotFound},
		{"unreadable log", "bad", "p", dsherr.NotResumable, `subagent "bad" is unavailable`, nil},
		{"C-F4 another parent", "c", "stranger", dsherr.Unauthorized, `subagent "c" belongs to another parent session`, nil},
		{"grandparent is not the parent", grand, "p", dsherr.Unauthorized, `subagent "grand" belongs to another parent session`, nil},
		{"authorization before the descriptor", "one", "stranger", dsherr.Unauthorized, `subagent "one" belongs to another parent session`, nil},
		{"C-F5 one-shot", "one", "p", dsherr.NotResumable, `subagent "one" ` + noState, nil},
		{"root session", "p", "", dsherr.NotResumable, `subagent "p" ` + noState, nil},
		{"held by a live process", "busy", "p", dsherr.NotDelivered, "not delivered", backend.ErrLeaseHeld},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := e.resume(tt.child, tt.parent, "hello")
			if dsherr.CodeOf(err) != tt.code || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("Resume = %v (%s), want %s %q", err, dsherr.CodeOf(err), tt.code, tt.msg)
			}
			if tt.code != dsherr.NotDelivered && err.Error() != tt.msg {
				t.Errorf("message %q, want exactly %q", err, tt.msg)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("%v does not wrap %v", err, tt.is)
			}
			if after := e.state(); after != before {
				t.Fatalf("a refused resume wrote:\n%s", after)
			}
		})
	}
}

// dshNoStateMessage is DSH's refusal of a child with no supported
// continuation state, without its `subagent "<id>" ` prefix, as DSH's real
// runtime recorded it resuming a one-shot child of an oracle corpus.
func dshNoStateMessage(t *testing.T) string {
	t.Helper()
	o := dshfixtures.LoadOracle(t, "a-continuable-and-oneshot")
	ids := make([]string, 0, len(o.Resume))
	for id := range o.Resume {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if e := o.Resume[id].Followup.Error; e != nil && e.Code == string(dsherr.NotResumable) {
			prefix := `subagent "` + id + `" `
			if !strings.HasPrefix(e.Message, prefix) {
				t.Fatalf("DSH's NOT_RESUMABLE message %q does not name the child first", e.Message)
			}
			return strings.TrimPrefix(e.Message, prefix)
		}
	}
	t.Fatal("the oracle records no NOT_RESUMABLE resume")
	return ""
}

// authoredChild is a subagent child header of parent created at 1, with an
// optional inherited cut.
func authoredChild(id, parent string, cut *int64) session.Header {
	return session.Header{ID: id, CreatedAt: 1, Cwd: labelp("/work"), ParentSession: &parent, SeedLength: cut,
		Origin: labelp(session.OriginSubagent), DelegationDepth: ptr64(1)}
}

// descriptorLog is DSH's catalogue log childEvents(d…): a turn whose
// user message is followed by the given descriptor payloads.
func descriptorLog(from int64, descriptors ...string) []session.Event {
	at := func(typ, data string) session.Event {
		e := session.Event{Type: typ, Seq: from, Time: 1, Data: json.RawMessage(data)}
		from++
		return e
	}
	log := []session.Event{at(session.TypeTurnStart, `{"turn":1}`)}
	u := at(session.TypeUserMessage, `{"content":[{"type":"text","text":"work"}],"source":{"kind":"user"},"role":"user","id":"u-work"}`)
	u.SurfaceOp = json.RawMessage(`"append"`)
	log = append(log, u)
	for _, d := range descriptors {
		log = append(log, at(session.TypeDescriptor, d))
	}
	return append(log, at(session.TypeTurnEnd, `{"turn":1,"reason":{"kind":"completed"}}`))
}

func continuableDesc(label, model string) string {
	return `{"version":2,"mode":"continuable","provider":"spawn","label":"` + label + `","agentProvider":"echo","agentModel":"` + model + `"}`
}

// §8: where listing and resume read the same log differently. Listing
// follows the later revision (an ancestor-only fork child is corrupt), and
// resume folds the first own descriptor while listing shows the last.
func TestResumeListVsResume(t *testing.T) {
	const (
		validA     = `{"version":2,"mode":"continuable","provider":"spawn","label":"A","agentProvider":"echo","agentModel":"model-a"}`
		validB     = `{"version":2,"mode":"continuable","provider":"spawn","label":"B","agentProvider":"echo","agentModel":"model-b"}`
		oneShot    = `{"version":2,"mode":"one-shot","provider":"spawn","label":"once"}`
		malformed  = `{"version":2,"mode":"continuable","provider":"spawn"}`
		version1   = `{"version":1,"provider":"spawn","label":"old"}`
		version4   = `{"version":4,"mode":"continuable","provider":"spawn","label":"new"}`
		badLabel   = "persisted subagent descriptor label must be a string"
		seedOfFour = 4
	)
	noState := dshNoStateMessage(t)
	// An ancestor descriptor inherited in a fork seed of 4 events.
	seed := descriptorLog(0, validA)
	seed = append(seed[:len(seed):len(seed)], session.Event{Type: session.TypeEndSeed, Seq: seedOfFour, Time: 1, Data: json.RawMessage(`{}`)})
	ancestorOnly := append(seed, descriptorLog(seedOfFour+1)...)

	tests := []struct {
		name   string
		header session.Header
		log    []session.Event
		list   string // the child's row, "" = not listed
		resume string // "model-x" = resumed with that recorded model; else the error code and message (without `subagent "<id>" `)
	}{
		{"one valid continuable", authoredChild("c01", "p", nil), descriptorLog(0, validA), "child continuable A", "model-a"},
		{"one valid one-shot", authoredChild("c02", "p", nil), descriptorLog(0, oneShot), "child one-shot once", "NOT_RESUMABLE " + noState},
		{"no descriptor", authoredChild("c03", "p", nil), descriptorLog(0), "diagnostic corrupt", "NOT_RESUMABLE " + noState},
		{"unsupported version 1", authoredChild("c04", "p", nil), descriptorLog(0, version1), "diagnostic corrupt", "NOT_RESUMABLE " + noState},
		{"unsupported version 4", authoredChild("c05", "p", nil), descriptorLog(0, version4), "diagnostic corrupt", "NOT_RESUMABLE " + noState},
		{"malformed", authoredChild("c06", "p", nil), descriptorLog(0, malformed), "diagnostic corrupt", "DESCRIPTOR_MALFORMED " + badLabel},
		{"valid A then valid B", authoredChild("c07", "p", nil), descriptorLog(0, validA, validB), "child continuable B", "model-a"},
		{"valid A then malformed", authoredChild("c08", "p", nil), descriptorLog(0, validA, malformed), "diagnostic corrupt", "model-a"},
		{"malformed then valid B", authoredChild("c09", "p", nil), descriptorLog(0, malformed, validB), "child continuable B", "DESCRIPTOR_MALFORMED " + badLabel},
		{"ancestor descriptor only in the seed", authoredChild("c10", "p", ptr64(seedOfFour)), ancestorOnly, "diagnostic corrupt", "NOT_RESUMABLE " + noState},
		{"ordinary session with its own descriptor", session.Header{ID: "c11", CreatedAt: 1, Cwd: labelp("/work"), ParentSession: labelp("p")},
			descriptorLog(0, validB), "", "model-b"},
	}
	e := newRuntimeEnv(t)
	for _, tt := range tests {
		if err := e.st.CreateSession(e.ctx, tt.header, tt.log); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
	}
	rows, err := NewStoreLister(e.st, e.st, 0).ListChildren(e.ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]string{}
	for _, r := range rows {
		s := string(r.Kind) + " " + string(r.Reason)
		if r.Kind == KindChild {
			s = string(r.Kind) + " " + string(r.Mode) + " " + *r.Label
		}
		listed[r.ID] = strings.TrimSpace(s)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := tt.header.ID
			if got := listed[id]; got != tt.list {
				t.Errorf("listed as %q, want %q", got, tt.list)
			}
			before := e.state()
			res, err := e.resume(id, "p", "next")
			if !strings.HasPrefix(tt.resume, "model-") {
				if err == nil {
					t.Fatalf("resumed (%+v), want %s", res, tt.resume)
				}
				msg := strings.Replace(err.Error(), `subagent "`+id+`" `, "", 1)
				if got := string(dsherr.CodeOf(err)) + " " + msg; got != tt.resume {
					t.Errorf("Resume = %s, want %s", got, tt.resume)
				}
				var de *DescriptorError
				if dsherr.CodeOf(err) == dsherr.DescriptorMalformed && !errors.As(err, &de) {
					t.Errorf("%v does not wrap *DescriptorError", err)
				}
				if e.state() != before {
					t.Error("a refused resume wrote")
				}
				return
			}
			if err != nil {
				t.Fatalf("Resume: %v", err)
			}
			replies := eventsOf(e.events(id), session.TypeAssistantMsg)
			if len(replies) != 1 || !strings.Contains(string(replies[0].Data), `"source":{"kind":"model","provider":"echo","model":"`+tt.resume+`"}`) {
				t.Errorf("replies %v, want one with the route of the first own descriptor (model %s)", replies, tt.resume)
			}
		})
	}
}

// A resume repairs first: a torn tail is dropped, an interrupted turn is
// closed with DSH's closers, then the new turn numbers on.
func TestResumeRepairsFirst(t *testing.T) {
	e := newRuntimeEnv(t)
	desc := continuableDesc("w", "m1")
	open := append(descriptorLog(0, desc)[:3:3],
		session.Event{Type: session.TypeStepStart, Seq: 3, Time: 5, Data: json.RawMessage(`{"turn":1,"step":1}`)})
	tail := &backend.TornTail{FromSeq: 4, Reason: "unterminated line", Raw: []byte(`{"type":"assistant/chunk","se`)}
	if res, err := e.st.ImportSession(e.ctx, authoredChild("c", "p", nil), open, tail); err != nil || res.Torn == nil {
		t.Fatalf("import: %+v, %v", res, err)
	}
	res, err := e.resume("c", "p", "after the crash")
	if err != nil {
		t.Fatal(err)
	}
	if res.Torn == nil || res.Torn.FromSeq != 4 || typesOf(res.Closers) != "step/end turn/end" || res.Turn != 2 {
		t.Fatalf("repair: torn %+v, closers %s, turn %d", res.Torn, typesOf(res.Closers), res.Turn)
	}
	log := e.events("c")
	if got := string(log[5].Data); log[5].Type != session.TypeTurnEnd || got != `{"turn":1,"reason":{"kind":"interrupted"}}` || log[5].Time != 5 {
		t.Errorf("closer %s %s at %d, want DSH's interrupted turn/end at the last event's time", log[5].Type, got, log[5].Time)
	}
	if typesOf(log[6:8]) != "session/end-seed agent/inbox/spliced" {
		t.Errorf("after the closers: %s", typesOf(log[6:]))
	}
}

// A log that already ends with session/end-seed gets no second marker.
func TestResumeAfterEndSeed(t *testing.T) {
	e := newRuntimeEnv(t)
	seed := []session.Event{
		{Type: session.TypeDescriptor, Seq: 0, Time: 1, Data: json.RawMessage(continuableDesc("w", "m1"))},
		{Type: session.TypeEndSeed, Seq: 1, Time: 1, Data: json.RawMessage(`{}`)},
	}
	if err := e.st.CreateSession(e.ctx, authoredChild("c", "p", nil), seed); err != nil {
		t.Fatal(err)
	}
	res, err := e.resume("c", "p", "first")
	if err != nil {
		t.Fatal(err)
	}
	if got := typesOf(e.events("c")[:4]); res.Turn != 1 || got != "subagent/descriptor session/end-seed agent/inbox/spliced turn/start" {
		t.Errorf("turn %d, log starts %s", res.Turn, got)
	}
}

// The resumed route comes from the descriptor; flags override it, and a
// route dsh cannot run offline falls back to echo.
func TestResumeRoute(t *testing.T) {
	e := newRuntimeEnv(t)
	for id, desc := range map[string]string{
		"exec-child":   `{"version":2,"mode":"continuable","provider":"spawn","label":"x","agentProvider":"exec","agentModel":"sh"}`,
		"remote-child": `{"version":2,"mode":"continuable","provider":"spawn","label":"x","agentProvider":"deepseek-official","agentModel":"deepseek-v4-flash"}`,
		"bare-child":   `{"version":2,"mode":"continuable","provider":"spawn","label":"x"}`,
	} {
		if err := e.st.CreateSession(e.ctx, authoredChild(id, "p", nil), descriptorLog(0, desc)); err != nil {
			t.Fatal(err)
		}
	}
	before := e.state()
	if _, err := e.resume("exec-child", "p", "m"); dsherr.CodeOf(err) != dsherr.Usage || !strings.Contains(err.Error(), "--exec") {
		t.Errorf("exec route without a command = %v, want a usage error naming --exec", err)
	}
	if e.state() != before {
		t.Fatal("a refused resume wrote")
	}
	tests := []struct {
		child string
		cfg   ProviderConfig
		want  string
	}{
		{"exec-child", ProviderConfig{Command: "echo from sh"}, `"provider":"exec","model":"sh"`},
		{"exec-child", ProviderConfig{Name: ProviderEcho}, `"provider":"echo","model":"echo"`},
		{"remote-child", ProviderConfig{}, `"provider":"echo","model":"echo"`},
		{"bare-child", ProviderConfig{Model: "mine"}, `"provider":"echo","model":"mine"`},
	}
	for _, tt := range tests {
		res, err := e.rt.Resume(e.ctx, ResumeRequest{Child: tt.child, Parent: "p", Message: "m", Provider: tt.cfg})
		if err != nil {
			t.Fatalf("%s %+v: %v", tt.child, tt.cfg, err)
		}
		replies := eventsOf(e.events(tt.child), session.TypeAssistantMsg)
		if last := replies[len(replies)-1]; !strings.Contains(string(last.Data), `"source":{"kind":"model",`+tt.want+`}`) {
			t.Errorf("%s %+v: reply %s, want route %s (outcome %+v)", tt.child, tt.cfg, last.Data, tt.want, res.Outcome)
		}
	}
}

// A resumed turn against DSH's own follow-up turn: subagent-continuable's
// second turn answers a send_message from the parent. DSH enqueued that
// message while the child was still resident; offline, the enqueue opens
// the resumed turn, after the end-seed marker of the new lifecycle.
func TestResumeMatchesDSHFollowUp(t *testing.T) {
	child := dshSnapshot(t, "subagent-continuable", "session.1.jsonl")
	e := newRuntimeEnv(t)
	parent := child.Header.Parent()
	if err := e.st.CreateSession(e.ctx, session.Header{ID: parent, CreatedAt: 1, Cwd: child.Header.Cwd}, nil); err != nil {
		t.Fatal(err)
	}
	prompt, label := promptOf(t, child.Events)
	id := e.start(StartRequest{Parent: parent, Mode: ModeContinuable, Label: label, Message: prompt}).ChildID
	turnStart := func(events []session.Event, turn string) int {
		for i, ev := range events {
			if ev.Type == session.TypeTurnStart && string(ev.Data) == `{"turn":`+turn+`}` {
				return i
			}
		}
		t.Fatalf("no turn %s", turn)
		return 0
	}
	dshTurn := offlinePart(child.Events, turnStart(child.Events, "2"))
	followUp := userTexts(t, dshTurn)[0]
	if _, err := e.resume(id, parent, followUp); err != nil {
		t.Fatal(err)
	}
	ours := e.events(id)
	at := turnStart(ours, "2")
	comparePayloads(t, dshTurn, offlinePart(ours, at))
	if got := typesOf(ours[at-2 : at]); got != "session/end-seed agent/inbox/spliced" {
		t.Fatalf("before the resumed turn: %s", got)
	}
	var dshEnqueue session.Event
	for _, ev := range child.Events {
		if ev.Type == session.TypeInboxSpliced && strings.Contains(string(ev.Data), jsonString(followUp)) {
			dshEnqueue = ev
			break
		}
	}
	comparePayloads(t, []session.Event{dshEnqueue}, ours[at-1:at])
}

func BenchmarkResumeEcho(b *testing.B) {
	e := newRuntimeEnv(b)
	const children = 64
	ids := make([]string, children)
	for i := range ids {
		ids[i] = e.continuable(fmt.Sprintf("c%d", i), "bench")
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := e.resume(ids[i%children], "p", "again"); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "resumes/s")
}
