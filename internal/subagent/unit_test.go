package subagent

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/dsh-project/dsh/internal/jsjson"
	"github.com/dsh-project/dsh/internal/projcache"
	"github.com/dsh-project/dsh/internal/session"
)

// logBuilder writes event logs the way the catalogue's scenarios read.
type logBuilder struct{ events []session.Event }

func (b *logBuilder) add(typ, data string) *logBuilder {
	b.events = append(b.events, session.Event{Type: typ, Seq: int64(len(b.events)), Time: 1, Data: json.RawMessage(data)})
	return b
}

func (b *logBuilder) descriptor(data string) *logBuilder { return b.add(session.TypeDescriptor, data) }

// desc is the catalogue's desc(label, v=2).
func desc(label string) string {
	return `{"version":2,"mode":"continuable","provider":"spawn","label":` + jsjson.String(label) + `}`
}

// childEvents is the catalogue's childEvents(d): turn/start, a user message,
// the descriptor d at seq 2, turn/end.
func childEvents(d string) *logBuilder {
	b := &logBuilder{}
	b.add(session.TypeTurnStart, `{"turn":1}`)
	b.events = append(b.events, session.Event{Type: session.TypeUserMessage, Seq: 1, Time: 1,
		Data:      json.RawMessage(`{"content":[{"type":"text","text":"work"}],"source":{"kind":"user"},"role":"user","id":"m1"}`),
		SurfaceOp: json.RawMessage(`"append"`)})
	b.descriptor(d)
	return b.add(session.TypeTurnEnd, `{"turn":1,"reason":{"kind":"completed"}}`)
}

func newRegistry(t *testing.T) *projcache.Registry {
	t.Helper()
	reg := projcache.NewRegistry()
	if err := RegisterUnit(reg); err != nil {
		t.Fatal(err)
	}
	return reg
}

// foldView folds events with only the subagent unit registered and returns
// its view.
func foldView(t *testing.T, events []session.Event) string {
	t.Helper()
	snap, err := newRegistry(t).Restore(events)
	if err != nil {
		t.Fatalf("Restore: %v", err)
	}
	return string(snap.Values[UnitKey])
}

func TestUnitFold(t *testing.T) {
	cases := []struct {
		name string
		log  *logBuilder
		want string
	}{
		{"empty log", &logBuilder{}, `null`},
		{"no descriptor (D7)", (&logBuilder{}).add(session.TypeTurnStart, `{"turn":1}`).add(session.TypeTurnEnd, `{"turn":1,"reason":{"kind":"interrupted"}}`), `null`},
		{"one descriptor carries its seq", childEvents(desc("twin child")), `{"mode":"continuable","label":"twin child","seq":2}`},
		{"one-shot without label", childEvents(`{"version":2,"mode":"one-shot","provider":"spawn"}`), `{"mode":"one-shot","seq":2}`},
		{"last wins (L11)", childEvents(desc("twice")).descriptor(desc("twice again")), `{"mode":"continuable","label":"twice again","seq":4}`},
		{"later malformed resets (L12, L13)", childEvents(desc("was valid")).descriptor(`{"version":2,"mode":"continuable","provider":7}`), `null`},
		{"later unsupported resets", childEvents(desc("was valid")).descriptor(`{"version":4,"mode":"continuable","provider":"spawn","label":"future"}`), `null`},
		{"later non-object resets", childEvents(desc("was valid")).descriptor(`"oops"`), `null`},
		{"valid after a reset wins again", childEvents(desc("first")).descriptor(`null`).descriptor(desc("again")), `{"mode":"continuable","label":"again","seq":5}`},
		{"malformed only (L19)", childEvents(`{"version":2,"mode":"continuable","provider":7}`), `null`},
		{"unknown version only (L20)", childEvents(`{"version":4,"mode":"continuable","provider":"spawn","label":"from the future"}`), `null`},
		{"seed ancestor identity is still folded (L21)", childEvents(desc("ancestor label")), `{"mode":"continuable","label":"ancestor label","seq":2}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := foldView(t, c.log.events); got != c.want {
				t.Fatalf("view %s, want %s", got, c.want)
			}
		})
	}
}

// TestUnitTwinLogs is L27: a log with an extra compaction user/message that
// replaces surface node 1 folds to the same identity as its twin.
func TestUnitTwinLogs(t *testing.T) {
	plain := childEvents(desc("twin child"))
	compacted := childEvents(desc("twin child"))
	compacted.events = append(compacted.events, session.Event{Type: session.TypeUserMessage, Seq: 4, Time: 1,
		Data:               json.RawMessage(`{"content":[{"type":"text","text":"summary"}],"source":{"kind":"compaction"},"role":"user","id":"m2"}`),
		SourceEventSeqs:    []int64{1},
		HasSourceEventSeqs: true,
		SurfaceOp:          json.RawMessage(`{"op":"replace","start":1,"end":1}`)})
	a, b := foldView(t, plain.events), foldView(t, compacted.events)
	if a != b || a != `{"mode":"continuable","label":"twin child","seq":2}` {
		t.Fatalf("twins fold to %s and %s", a, b)
	}
}

// TestUnitSkipsOtherEvents: events other than descriptors leave the state
// byte-for-byte unchanged and their data is never decoded (data that is not
// even JSON cannot fail the fold).
func TestUnitSkipsOtherEvents(t *testing.T) {
	u := identityUnit{}
	state, _ := u.Apply(u.Init(), session.Event{Type: session.TypeDescriptor, Seq: 0, Data: json.RawMessage(desc("kept"))})
	for _, typ := range []string{session.TypeTurnStart, session.TypeUserMessage, session.TypeEndSeed, "x/unknown", "subagent/descriptorx"} {
		next, err := u.Apply(state, session.Event{Type: typ, Seq: 1, Data: json.RawMessage(`{{{ not json`)})
		if err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		if &next[0] != &state[0] || string(next) != string(state) {
			t.Fatalf("%s changed the state: %s -> %s", typ, state, next)
		}
	}
}

// TestUnitViewSurvivesJSON is L12: a null view stays null through a JSON
// round trip, and identities read back equal.
func TestUnitViewSurvivesJSON(t *testing.T) {
	for _, log := range []*logBuilder{
		childEvents(desc("was valid")).descriptor(`{"version":2,"mode":"continuable","provider":7}`),
		childEvents(desc("label")),
	} {
		snap, err := newRegistry(t).Restore(log.events)
		if err != nil {
			t.Fatal(err)
		}
		frame, err := json.Marshal(snap.Values)
		if err != nil {
			t.Fatal(err)
		}
		var back map[string]json.RawMessage
		if err := json.Unmarshal(frame, &back); err != nil {
			t.Fatal(err)
		}
		raw, present := back[UnitKey]
		if !present {
			t.Fatalf("key %q lost in %s", UnitKey, frame)
		}
		want, _ := IdentityFromView(snap.Values[UnitKey])
		got, err := IdentityFromView(raw)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("round trip %v, %v; want %v", got, err, want)
		}
	}
}

// TestUnitView: View accepts exactly the states the unit can hold, however
// they are spelled (a checkpoint may come from another writer), and renders
// DSH's view.
func TestUnitView(t *testing.T) {
	u := identityUnit{}
	ok := map[string]string{
		`{}`:    `null`,
		` { } `: `null`,
		`{"identity":{"mode":"one-shot","seq":3}}`:                              `{"mode":"one-shot","seq":3}`,
		`{ "identity" : { "seq" : 3, "label" : "l", "mode" : "continuable" } }`: `{"mode":"continuable","label":"l","seq":3}`,
		`{"identity":{"mode":"continuable","label":"a\u003cb","seq":0}}`:        `{"mode":"continuable","label":"a<b","seq":0}`,
	}
	for state, want := range ok {
		got, err := u.View(json.RawMessage(state))
		if err != nil || string(got) != want {
			t.Errorf("%s: %s, %v; want %s", state, got, err, want)
		}
	}
	for _, state := range []string{
		`null`, `[]`, `{"identity":null}`, `{"identity":{"mode":"one-shot","seq":3},"x":1}`,
		`{"identity":{"mode":"one-shot","seq":3}}}`, `{"identity":{"mode":"continuable","seq":3}}`, `{"identity":`,
	} {
		if got, err := u.View(json.RawMessage(state)); err == nil {
			t.Errorf("%s: view %s, want an error", state, got)
		}
	}
}

func TestIdentityFromView(t *testing.T) {
	label := "l"
	ok := []struct {
		raw  string
		want *Identity
	}{
		{``, nil},
		{`null`, nil},
		{`{"mode":"one-shot","seq":0}`, &Identity{Mode: ModeOneShot, Seq: 0}},
		{`{"mode":"continuable","label":"l","seq":7}`, &Identity{Mode: ModeContinuable, Label: &label, Seq: 7}},
		{`{"seq":7,"label":"l","mode":"continuable"}`, &Identity{Mode: ModeContinuable, Label: &label, Seq: 7}},
	}
	for _, c := range ok {
		got, err := IdentityFromView(json.RawMessage(c.raw))
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: got %+v, %v; want %+v", c.raw, got, err, c.want)
		}
	}
	bad := []string{
		`[]`, `"continuable"`, `{}`,
		`{"mode":"later","seq":0}`,
		`{"mode":"continuable","seq":0}`,
		`{"mode":"one-shot","label":null,"seq":0}`,
		`{"mode":"one-shot","seq":-1}`,
		`{"mode":"one-shot","seq":1.5}`,
		`{"mode":"one-shot","seq":"1"}`,
		`{"mode":"one-shot","seq":9007199254740992}`,
		`{"mode":"one-shot","seq":0,"createdAt":1}`,
		`{"mode":`,
	}
	for _, raw := range bad {
		if got, err := IdentityFromView(json.RawMessage(raw)); err == nil {
			t.Errorf("%s: got %+v, want an error", raw, got)
		}
	}
}

func TestIdentityMarshal(t *testing.T) {
	label := "a<b"
	got, _ := Identity{Mode: ModeContinuable, Label: &label, Seq: 12}.MarshalJSON()
	if string(got) != `{"mode":"continuable","label":"a<b","seq":12}` {
		t.Fatalf("got %s", got)
	}
	got, _ = Identity{Mode: ModeOneShot, Seq: 0}.MarshalJSON()
	if string(got) != `{"mode":"one-shot","seq":0}` {
		t.Fatalf("got %s", got)
	}
}

func TestOwnSuffix(t *testing.T) {
	cases := []struct {
		seq, cut int64
		want     bool
	}{
		{0, 0, true},  // unseeded: everything is own
		{5, 0, true},  // unseeded
		{3, 4, false}, // ancestor descriptor inside a 4-event seed (L21)
		{4, 4, true},  // first own event
		{5, 4, true},  // own descriptor after the end-seed marker (L15)
		{0, 1, false},
	}
	for _, c := range cases {
		if got := OwnSuffix(c.seq, c.cut); got != c.want {
			t.Errorf("OwnSuffix(%d, %d) = %v, want %v", c.seq, c.cut, got, c.want)
		}
	}
}

// hostileUnit is L23's extra unit: its view panics when the log holds a
// descriptor labeled "poison me".
type hostileUnit struct{}

func (hostileUnit) Key() string           { return "hostile" }
func (hostileUnit) StateVersion() int     { return 1 }
func (hostileUnit) Init() json.RawMessage { return json.RawMessage(`false`) }
func (hostileUnit) Apply(state json.RawMessage, e session.Event) (json.RawMessage, error) {
	if e.Type == session.TypeDescriptor && strings.Contains(string(e.Data), "poison me") {
		return json.RawMessage(`true`), nil
	}
	return state, nil
}
func (hostileUnit) View(state json.RawMessage) (json.RawMessage, error) {
	if string(state) == "true" {
		panic("poisoned view")
	}
	return state, nil
}

// TestHostileUnit is L23: a unit that panics on one log is that log's unit
// failure; the subagent unit's value and other logs are unaffected.
func TestHostileUnit(t *testing.T) {
	reg := newRegistry(t)
	if err := reg.Register(hostileUnit{}); err != nil {
		t.Fatal(err)
	}
	snap, err := reg.Restore(childEvents(desc("poison me")).events)
	var ue *projcache.UnitError
	if !errors.As(err, &ue) || ue.Key != "hostile" || !strings.Contains(ue.Error(), "poisoned view") {
		t.Fatalf("error %v, want the hostile unit's failure", err)
	}
	if got := string(snap.Values[UnitKey]); got != `{"mode":"continuable","label":"poison me","seq":2}` {
		t.Fatalf("subagent view %s", got)
	}
	if _, present := snap.Values["hostile"]; present {
		t.Fatal("failed unit still has a value")
	}
	healthy, err := reg.Restore(childEvents(desc("healthy")).events)
	if err != nil || string(healthy.Values["hostile"]) != "false" {
		t.Fatalf("healthy log: %v, %s", err, healthy.Values["hostile"])
	}
}

// TestUnitMatchesDSHCheckpoints folds the oracle corpora's logs and compares
// the subagent state with the checkpoint rows DSH's own cache wrote for them.
func TestUnitMatchesDSHCheckpoints(t *testing.T) {
	root := filepath.Join("..", "..", "..", "shared", "fixtures", "dsh-oracle")
	corpora, _ := filepath.Glob(filepath.Join(root, "*", "projcache", "session_projcache.json"))
	if len(corpora) == 0 {
		t.Skipf("DSH oracle fixtures not found under %s", root)
	}
	compared := 0
	for _, cacheFile := range corpora {
		corpus := filepath.Dir(filepath.Dir(cacheFile))
		var file struct {
			Tables struct {
				Sessions map[string]struct {
					Rows map[string]struct {
						Ver int             `json:"ver"`
						Seq int64           `json:"seq"`
						Val json.RawMessage `json:"val"`
					} `json:"rows"`
				} `json:"sessions"`
			} `json:"tables"`
		}
		b, err := os.ReadFile(cacheFile)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &file); err != nil {
			t.Fatal(err)
		}
		for id, rec := range file.Tables.Sessions {
			row, ok := rec.Rows[UnitKey]
			if !ok {
				continue
			}
			if row.Ver != UnitStateVersion {
				t.Errorf("%s: DSH wrote state version %d", id, row.Ver)
			}
			var prefix []session.Event
			for _, e := range readLog(t, corpus, id) {
				if e.Seq <= row.Seq {
					prefix = append(prefix, e)
				}
			}
			fold := newRegistry(t).NewFold()
			fold.Apply(prefix...)
			cp, err := fold.Checkpoint()
			if err != nil {
				t.Fatal(err)
			}
			want, _ := jsjson.Compact(row.Val)
			if got := cp[UnitKey]; string(got.Val) != string(want) || got.Seq != row.Seq {
				t.Errorf("%s: folded %s at seq %d, DSH has %s at seq %d", id, got.Val, got.Seq, want, row.Seq)
			}
			compared++
		}
	}
	if compared == 0 {
		t.Fatal("no subagent checkpoint rows compared")
	}
	t.Logf("%d DSH checkpoint rows reproduced", compared)
}

// readLog reads one session's events from a DSH JSONL corpus, plain when the
// corpus has a plain copy, else zstd-framed (type, seq and data are all the
// unit reads).
func readLog(t *testing.T, corpus, id string) []session.Event {
	t.Helper()
	var text io.Reader
	if logs, _ := filepath.Glob(filepath.Join(corpus, "jsonl-plain", "*", id, "session.jsonl")); len(logs) == 1 {
		f, err := os.Open(logs[0])
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		text = f
	} else if logs, _ := filepath.Glob(filepath.Join(corpus, "jsonl", "*", id, "session.jsonl.zstd")); len(logs) == 1 {
		f, err := os.Open(logs[0])
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		dec, err := zstd.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		defer dec.Close()
		text = dec
	} else {
		t.Fatalf("%s: no log in %s", id, corpus)
	}
	var events []session.Event
	sc := bufio.NewScanner(text)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var line struct {
			Type string          `json:"type"`
			Seq  int64           `json:"seq"`
			Data json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		if line.Type == "session" {
			continue
		}
		events = append(events, session.Event{Type: line.Type, Seq: line.Seq, Data: line.Data})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return events
}
