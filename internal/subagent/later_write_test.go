package subagent

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/dshfixtures"
	"github.com/dsh-project/dsh/internal/dshformat"
	"github.com/dsh-project/dsh/internal/pgstore"
	"github.com/dsh-project/dsh/internal/pgtest"
	"github.com/dsh-project/dsh/internal/session"
)

// laterSnapshot reads one of DSH's later-format snapshots as the raw log
// DSH wrote (later-formats §3), parent {{session:1}} = laterParent, the
// child {{session:2}} = "c".
const laterParent = "session-later-parent"

func laterSnapshot(t *testing.T, rel string) *dshformat.Session {
	t.Helper()
	var fixture dshfixtures.LaterFixture
	for _, f := range dshfixtures.LaterFixtures {
		if f.Rel == rel {
			fixture = f
		}
	}
	raw := dshfixtures.LaterRawLog(t, fixture, dshfixtures.LaterTokens{Sessions: map[int]string{1: laterParent, 2: "c"}, Cwd: "/work/project"})
	dir := t.TempDir()
	path := filepath.Join(dir, filepath.Base(rel))
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	src, err := dshformat.OpenJSONL(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	hs, err := src.Headers(context.Background())
	if err != nil || len(hs) != 1 {
		t.Fatalf("%s: headers %v, %v", rel, hs, err)
	}
	s, err := src.Read(context.Background(), hs[0].ID)
	if err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	return s
}

// dshParentInstruction strips the second text block DSH's later releases
// add to a child's first prompt (the instruction to report to the parent):
// model-facing prose an offline start does not write.
func dshParentInstruction(data string) string {
	i := strings.Index(data, `,{"type":"text","text":"Your parent agent id is `)
	if i < 0 {
		return data
	}
	j := strings.Index(data[i:], `"}],"source"`)
	if j < 0 {
		return data
	}
	return data[:i] + data[i+j+2:]
}

// firstStep is the part of a log a start writes up to its first reply:
// offlinePart up to the first step/end, with DSH's parent instruction
// stripped. (DSH's continuable snapshots go on with messages a resident
// child was sent mid-turn, which an offline turn never has.)
func firstStep(events []session.Event, from int) []session.Event {
	var out []session.Event
	for _, e := range offlinePart(events, from) {
		if e.Type == session.TypeStepEnd {
			break
		}
		e.Data = json.RawMessage(dshParentInstruction(string(e.Data)))
		out = append(out, e)
	}
	return out
}

// objectKeys is the top-level keys of a JSON object, in order.
func objectKeys(t *testing.T, data []byte) []string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(string(data)))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not an object: %s", data)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

// A child started under a later-format parent is written as DSH's later
// releases write one, compared with the children they wrote: the parent's
// format and lineage in the header (isSeeded), a version-3 descriptor, the
// tagged marker at a fork's cut and no constructor marker, the same
// creation seed and first batch payload for payload, and an
// assistant/message carrying its stream. Each log validates under its
// format's rules.
func TestStartMatchesDSHLaterLayouts(t *testing.T) {
	tests := []struct {
		child, parent string // parent "": the fork child's own prefix stands in for it
		mode          Mode
		fork          bool
	}{
		{child: "v2/snapshots/sdk/subagent-continuable/session.1.v2.jsonl", mode: ModeContinuable},
		{child: "v2/snapshots/sdk/subagent-fork-in-process/session.1.v2.jsonl", mode: ModeOneShot, fork: true},
		{child: "v3/snapshots/sdk/subagent-fork-in-process/session.1.v3.jsonl", mode: ModeContinuable, fork: true},
		{child: "v4/snapshots/sdk/subagent-continuable/session.1.v4.jsonl", mode: ModeContinuable},
		{child: "v4/snapshots/sdk/subagent-fork-in-process/session.1.v4.jsonl", parent: "v4/snapshots/sdk/subagent-fork-in-process/session.v4.jsonl", mode: ModeContinuable, fork: true},
	}
	for _, tt := range tests {
		t.Run(tt.child, func(t *testing.T) {
			child := laterSnapshot(t, tt.child)
			cut := int(child.Header.InheritedCut())
			e := newRuntimeEnv(t)
			cwd := "/work/project"
			parentHeader := session.Header{Version: child.Header.Version, ID: laterParent, CreatedAt: 1, Cwd: &cwd, DelegationDepth: ptr64(0)}
			var parentLog []session.Event
			if tt.fork {
				parentLog = child.Events[:cut]
			}
			if tt.parent != "" {
				parent := laterSnapshot(t, tt.parent)
				parentHeader, parentLog = parent.Header, parent.Events[:cut]
			}
			if res, err := e.st.ImportSession(e.ctx, parentHeader, parentLog, nil); err != nil || !res.Verified {
				t.Fatalf("import parent: %+v, %v", res, err)
			}
			text, label := promptOf(t, child.Events[cut:])
			res := e.start(StartRequest{Parent: laterParent, Mode: tt.mode, Label: label, Fork: tt.fork, Message: text})
			in, err := e.st.Inspect(e.ctx, res.ChildID)
			if err != nil {
				t.Fatal(err)
			}
			ours := in.Events
			if got, want := withoutIdentity(in.Header), withoutIdentity(child.Header); string(got.MarshalJSONL()) != string(want.MarshalJSONL()) || got.InheritedCut() != want.InheritedCut() {
				t.Errorf("header\n DSH %s (cut %d)\n dsh %s (cut %d)", want.MarshalJSONL(), want.InheritedCut(), got.MarshalJSONL(), got.InheritedCut())
			}
			// The inherited prefix is DSH's (its snapshot times are
			// synthetic, a line's index after its own header's createdAt).
			for i := 0; i < cut; i++ {
				dshEvent := child.Events[i]
				dshEvent.Time = ours[i].Time
				if got, want := mustJSON(t, ours[i]), mustJSON(t, dshEvent); got != want {
					t.Fatalf("inherited event %d\n DSH %s\n dsh %s", i, want, got)
				}
			}
			comparePayloads(t, firstStep(child.Events, cut), firstStep(ours, cut))

			// The reply: DSH's keys (less the usage an offline provider
			// has none of), and a stream that spells the reply out.
			dshReply, ourReply := eventsOf(child.Events[cut:], session.TypeAssistantMsg)[0], eventsOf(ours[cut:], session.TypeAssistantMsg)[0]
			want := strings.Join(objectKeys(t, dshReply.Data), ",")
			if got := strings.Join(objectKeys(t, ourReply.Data), ","); strings.Replace(want, ",usage", "", 1) != got {
				t.Errorf("assistant/message keys %s, DSH's %s", got, want)
			}
			checkStream(t, ourReply, res.Outcome.Reply)
			if err := session.ValidateLog(in.Header, ours); err != nil {
				t.Errorf("the child's log fails its format's validation: %v", err)
			}
		})
	}
}

// checkStream checks that a later format's assistant/message stream is
// made of the record kinds DSH writes and spells reply out: its text
// chunks and its text block's end carry the reply, and it finishes.
func checkStream(t *testing.T, e session.Event, reply string) {
	t.Helper()
	var data struct {
		Stream []struct {
			Type  string
			Texts []string
			Chunk struct {
				Type  string
				Block struct{ Text string }
			}
		}
	}
	if err := json.Unmarshal(e.Data, &data); err != nil || data.Stream == nil {
		t.Fatalf("assistant/message at seq %d has no stream: %s (%v)", e.Seq, e.Data, err)
	}
	var texts, ended string
	var kinds []string
	for _, r := range data.Stream {
		switch r.Type {
		case "text-chunks":
			texts += strings.Join(r.Texts, "")
			kinds = append(kinds, r.Type)
		case "chunk":
			kinds = append(kinds, r.Chunk.Type)
			if r.Chunk.Type == "block-end" {
				ended = r.Chunk.Block.Text
			}
		default:
			t.Errorf("stream record of type %q", r.Type)
		}
	}
	if texts != reply || ended != reply || kinds[len(kinds)-1] != "finish" {
		t.Errorf("stream %v spells %q (block %q), want %q and a finish", kinds, texts, ended, reply)
	}
}

// A resumed later-format child takes its turn in its format's shapes: the
// untagged marker between turns, the parent's message relayed as DSH's
// later releases relay one (compared with the relays in their snapshots),
// and a reply with its stream; the log still validates.
func TestResumeLaterFormat(t *testing.T) {
	for _, rel := range []string{
		"v2/snapshots/sdk/subagent-continuable/session.1.v2.jsonl",
		"v3/snapshots/sdk/subagent-fork-in-process/session.1.v3.jsonl",
		"v4/snapshots/sdk/subagent-continuable/session.1.v4.jsonl",
		"v4/snapshots/sdk/subagent-fork-in-process/session.1.v4.jsonl",
	} {
		t.Run(rel, func(t *testing.T) {
			child := laterSnapshot(t, rel)
			e := newRuntimeEnv(t)
			if res, err := e.st.ImportSession(e.ctx, child.Header, child.Events, nil); err != nil || !res.Verified {
				t.Fatalf("import child: %+v, %v", res, err)
			}
			res, err := e.resume("c", laterParent, "Now reply with exactly SECOND_OK.")
			if err != nil {
				t.Fatalf("Resume: %v", err)
			}
			in, err := e.st.Inspect(e.ctx, "c")
			if err != nil {
				t.Fatal(err)
			}
			appended := in.Events[len(child.Events):]
			if got, want := typesOf(appended), "session/end-seed agent/inbox/spliced turn/start agent/inbox/spliced step/start user/message assistant/message step/end turn/end"; got != want {
				t.Fatalf("resumed turn\n got %s\nwant %s", got, want)
			}
			if string(appended[0].Data) != `{}` {
				t.Errorf("marker between turns %s, want the untagged {}", appended[0].Data)
			}
			// DSH's relay of the same text, as its continuable snapshots
			// record one (V2 and V4; V3 lies between them).
			relay := laterSnapshot(t, "v4/snapshots/sdk/subagent-continuable/session.1.v4.jsonl")
			var want string
			for _, ev := range eventsOf(relay.Events, session.TypeUserMessage) {
				if strings.Contains(string(ev.Data), "Now reply with exactly SECOND_OK.") {
					want = messageIDs.ReplaceAllString(string(ev.Data), `"id":"ID"`)
				}
			}
			if got := messageIDs.ReplaceAllString(string(appended[5].Data), `"id":"ID"`); got != want || want == "" {
				t.Errorf("relayed message\n got %s\nwant %s", got, want)
			}
			if !strings.Contains(string(appended[1].Data), `"inserted":[`+string(appended[5].Data)+`]`) {
				t.Errorf("the inbox enqueue %s does not hold the message", appended[1].Data)
			}
			checkStream(t, appended[6], res.Outcome.Reply)
			if err := session.ValidateLog(in.Header, in.Events); err != nil {
				t.Errorf("the resumed log fails its format's validation: %v", err)
			}
		})
	}
}

// laterRoot stores a later-format root session id with one completed turn.
func (e *runtimeEnv) laterRoot(id string, version int64) {
	e.t.Helper()
	laterRootIn(e.t, e.st, id, version)
}

func laterRootIn(t testing.TB, st backend.Writer, id string, version int64) {
	t.Helper()
	cwd := "/work/project"
	h := session.Header{Version: version, ID: id, CreatedAt: 1, Cwd: &cwd, DelegationDepth: ptr64(0)}
	turn := []session.Event{
		{Type: session.TypeTurnStart, Seq: 0, Time: 1, Data: json.RawMessage(`{"turn":1}`)},
		{Type: session.TypeUserMessage, Seq: 1, Time: 1, Data: userMessageData("m-root", "hello", userSource), SurfaceOp: json.RawMessage(`"append"`)},
		{Type: session.TypeTurnEnd, Seq: 2, Time: 1, Data: json.RawMessage(`{"turn":1,"reason":{"kind":"completed"}}`)},
	}
	if err := st.CreateSession(context.Background(), h, turn); err != nil {
		t.Fatal(err)
	}
}

// A start under a later-format parent appends the child's catalog fact to
// the parent's log, in the transaction that admits the child's prompt:
// version 0, the child's id and header createdAt, its mode and (when it has
// one) label, in DSH's key order — for continuable and one-shot children,
// fresh or forked, as DSH 0.1.7 catalogs every local child. The parent's
// earlier events are untouched and its lease is released. A format-0
// parent gets no fact.
func TestStartAppendsCatalogFact(t *testing.T) {
	for _, version := range []int64{2, 3, 4} {
		e := newRuntimeEnv(t)
		e.laterRoot("p4", version)
		before := e.events("p4")
		reqs := []StartRequest{
			{Parent: "p4", ChildID: "c1", Mode: ModeContinuable, Label: labelp("first \"one\""), Message: "m"},
			{Parent: "p4", ChildID: "c2", Mode: ModeOneShot, Message: "m"},
			{Parent: "p4", ChildID: "c3", Mode: ModeOneShot, Label: labelp("forked"), Fork: true, Message: "m"},
			{Parent: "p4", ChildID: "c4", Mode: ModeContinuable, Label: labelp("forked too"), Fork: true, Message: "m"},
		}
		for _, req := range reqs {
			e.start(req)
		}
		after := e.events("p4")
		for i, ev := range before {
			if mustJSON(t, after[i]) != mustJSON(t, ev) {
				t.Fatalf("v%d: parent event %d changed", version, i)
			}
		}
		facts := after[len(before):]
		if len(facts) != len(reqs) {
			t.Fatalf("v%d: parent gained %s, want %d catalog facts", version, typesOf(facts), len(reqs))
		}
		for i, req := range reqs {
			h, err := e.st.Header(e.ctx, req.ChildID)
			if err != nil {
				t.Fatal(err)
			}
			want := `{"version":0,"childId":"` + req.ChildID + `","childCreatedAt":` + jsonInt(h.CreatedAt) + `,"mode":"` + string(req.Mode) + `"`
			if req.Label != nil {
				want += `,"label":` + jsonString(*req.Label)
			}
			want += "}"
			if f := facts[i]; f.Type != session.TypeCatalog || string(f.Data) != want || f.SurfaceOp != nil || f.HasSourceEventSeqs {
				t.Errorf("v%d: fact %d = %s %s, want %s", version, i, f.Type, f.Data, want)
			}
		}
		in, err := e.st.Inspect(e.ctx, "p4")
		if err != nil || !in.Verified || len(in.Closers) != 0 {
			t.Fatalf("v%d: parent after the starts: %v", version, err)
		}
		if ls, _ := e.st.Leases(e.ctx); len(ls) != 0 {
			t.Errorf("v%d: leases after the starts: %+v", version, ls)
		}
	}

	e := newRuntimeEnv(t)
	before := e.events("p")
	e.continuable("c", "work")
	if after := e.events("p"); len(after) != len(before) {
		t.Errorf("a format-0 parent gained %s", typesOf(after[len(before):]))
	}
}

func jsonInt(n int64) string { b, _ := json.Marshal(n); return string(b) }

// The fact dsh appends for the child DSH forked in its V4 snapshot is
// DSH's own fact for it, up to the child's id and createdAt.
func TestCatalogFactMatchesDSH(t *testing.T) {
	parent := laterSnapshot(t, "v4/snapshots/sdk/subagent-fork-in-process/session.v4.jsonl")
	child := laterSnapshot(t, "v4/snapshots/sdk/subagent-fork-in-process/session.1.v4.jsonl")
	facts := eventsOf(parent.Events, session.TypeCatalog)
	if len(facts) != 1 {
		t.Fatalf("DSH's parent holds %d catalog facts", len(facts))
	}
	cut := int(child.Header.InheritedCut())
	e := newRuntimeEnv(t)
	if _, err := e.st.ImportSession(e.ctx, parent.Header, parent.Events[:cut], nil); err != nil {
		t.Fatal(err)
	}
	text, label := promptOf(t, child.Events[cut:])
	res := e.start(StartRequest{Parent: laterParent, Mode: ModeContinuable, Label: label, Fork: true, Message: text})
	h, _ := e.st.Header(e.ctx, res.ChildID)
	ours := e.events(laterParent)[cut]
	want := strings.NewReplacer(`"childId":"c"`, `"childId":"`+res.ChildID+`"`,
		jsonInt(child.Header.CreatedAt), jsonInt(h.CreatedAt)).Replace(string(facts[0].Data))
	if ours.Type != session.TypeCatalog || string(ours.Data) != want {
		t.Errorf("fact\n dsh %s %s\n DSH %s", ours.Type, ours.Data, want)
	}
}

// A parent another live process holds (its own turn running) refuses the
// start with NOT_DELIVERED, and nothing at all is written: no child, no
// fact. A crashed holder's expired lease is taken over: the parent's
// interrupted turn is closed first, then the fact follows.
func TestStartCatalogParentLease(t *testing.T) {
	e := newRuntimeEnv(t)
	e.laterRoot("p4", 4)
	other := backend.LeaseHolder{ID: "other", PID: 1, Host: "elsewhere", TTL: time.Hour}
	if _, err := e.st.AcquireLease(e.ctx, "p4", other); err != nil {
		t.Fatal(err)
	}
	before := e.state()
	_, err := e.rt.Start(e.ctx, StartRequest{Parent: "p4", ChildID: "c", Mode: ModeContinuable, Label: labelp("l"), Message: "m", MaxDepth: 2})
	if !errors.Is(err, backend.ErrLeaseHeld) || dsherr.CodeOf(err) != dsherr.NotDelivered || !strings.Contains(err.Error(), `subagent "c" not started`) {
		t.Fatalf("start under a held parent: %v (code %s)", err, dsherr.CodeOf(err))
	}
	if after := e.state(); after != before {
		t.Fatalf("a refused start wrote:\nbefore\n%s\nafter\n%s", before, after)
	}

	// The holder crashed inside an open turn; its lease has lapsed.
	open := []session.Event{{Type: session.TypeTurnStart, Seq: 3, Time: 2, Data: json.RawMessage(`{"turn":2}`)}}
	if err := e.st.Append(e.ctx, "p4", 3, open); err != nil {
		t.Fatal(err)
	}
	crashed := backend.LeaseHolder{ID: "crashed", PID: 2, Host: "elsewhere", TTL: time.Millisecond}
	if err := e.st.ReleaseLease(e.ctx, "p4", other); err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.AcquireLease(e.ctx, "p4", crashed); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the crashed lease to lapse", func() bool { live, _ := e.st.LiveSessions(e.ctx); return len(live) == 0 })
	e.start(StartRequest{Parent: "p4", ChildID: "c", Mode: ModeContinuable, Label: labelp("l"), Message: "m"})
	if got, want := typesOf(e.events("p4")[3:]), "turn/start turn/end subagent/catalog"; got != want {
		t.Errorf("parent's tail %s, want %s", got, want)
	}
	if ls, _ := e.st.Leases(e.ctx); len(ls) != 0 {
		t.Errorf("leases after the start: %+v", ls)
	}
}

// Starts racing under one later-format parent each append their fact: the
// parent's lease and the store's transaction serialise them, none is lost
// or refused, and the parent's log stays dense and valid. On SQLite and
// PostgreSQL (whose lease acquisition locks the parent's row).
func TestStartCatalogRace(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		e := newRuntimeEnv(t)
		raceStarts(t, e.st)
	})
	t.Run("postgres", func(t *testing.T) {
		st, err := pgstore.Open(context.Background(), pgtest.NewDatabase(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		raceStarts(t, st)
	})
}

func raceStarts(t *testing.T, st backend.Backend) {
	ctx := context.Background()
	laterRootIn(t, st, "p4", 4)
	rt := &Runtime{Store: st}
	const n = 6
	errs := make(chan error, n)
	for i := range n {
		go func() {
			label := "l"
			_, err := rt.Start(ctx, StartRequest{Parent: "p4", ChildID: "c" + jsonInt(int64(i)), Mode: ModeContinuable, Label: &label, Message: "m", MaxDepth: 2})
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatalf("a racing start failed: %v", err)
		}
	}
	in, err := st.Inspect(ctx, "p4")
	if err != nil || !in.Verified {
		t.Fatalf("parent after the race: %v", err)
	}
	seen := map[string]bool{}
	for _, f := range eventsOf(in.Events, session.TypeCatalog) {
		var fact struct{ ChildID string }
		if err := json.Unmarshal(f.Data, &fact); err != nil {
			t.Fatal(err)
		}
		seen[fact.ChildID] = true
	}
	if len(seen) != n || len(in.Events) != 3+n {
		t.Fatalf("facts for %v in %d events, want %d distinct after the 3 of the root", seen, len(in.Events), n)
	}
	if ls, _ := st.Leases(ctx); len(ls) != 0 {
		t.Errorf("leases after the race: %+v", ls)
	}
}

// A later-format parent whose log cannot be appended to (a seq gap: DSH's
// inspect refuses it as corrupt) refuses the start with that failure, and
// nothing is written.
func TestStartCatalogUnwritableParent(t *testing.T) {
	e := newRuntimeEnv(t)
	cwd := "/work/project"
	h := session.Header{Version: 4, ID: "p4", CreatedAt: 1, Cwd: &cwd, DelegationDepth: ptr64(0)}
	gap := []session.Event{
		{Type: session.TypeTurnStart, Seq: 0, Time: 1, Data: json.RawMessage(`{"turn":1}`)},
		{Type: session.TypeTurnEnd, Seq: 2, Time: 1, Data: json.RawMessage(`{"turn":1,"reason":{"kind":"completed"}}`)},
	}
	if _, err := e.st.ImportSession(e.ctx, h, gap, nil); err != nil {
		t.Fatal(err)
	}
	before := e.state()
	_, err := e.rt.Start(e.ctx, StartRequest{Parent: "p4", ChildID: "c", Mode: ModeOneShot, Message: "m", MaxDepth: 2})
	if !errors.Is(err, backend.ErrCorrupt) || !strings.Contains(err.Error(), `subagent "c" not started: parent "p4" cannot be appended to`) {
		t.Fatalf("start under an invalid parent: %v", err)
	}
	if after := e.state(); after != before {
		t.Fatalf("a refused start wrote:\nbefore\n%s\nafter\n%s", before, after)
	}
}
