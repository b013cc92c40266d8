package subagent

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-project/dsh/internal/dshfixtures"
	"github.com/dsh-project/dsh/internal/dshformat"
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
