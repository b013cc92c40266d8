package usage_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/dshfixtures"
	"github.com/dsh-project/dsh/internal/dshformat"
	"github.com/dsh-project/dsh/internal/location"
	"github.com/dsh-project/dsh/internal/logdamage"
	"github.com/dsh-project/dsh/internal/pgstore"
	"github.com/dsh-project/dsh/internal/pgtest"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/sqlitepersist"
	"github.com/dsh-project/dsh/internal/subagent"
	"github.com/dsh-project/dsh/internal/transfer"
	"github.com/dsh-project/dsh/internal/usage"
)

// store is a backend under test with what these tests need of it.
type store interface {
	backend.Backend
	backend.UsageReader
}

func sqliteStore(t *testing.T) store {
	t.Helper()
	st, err := sqlitepersist.Open(context.Background(), filepath.Join(t.TempDir(), "dsh.db"), sqlitepersist.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func pgStore(t *testing.T) store {
	t.Helper()
	st, err := pgstore.Open(context.Background(), pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// eachStore runs fn on a fresh SQLite store and a fresh PostgreSQL one.
func eachStore(t *testing.T, fn func(t *testing.T, st store)) {
	t.Run("sqlite", func(t *testing.T) { fn(t, sqliteStore(t)) })
	t.Run("postgres", func(t *testing.T) { fn(t, pgStore(t)) })
}

func openSource(t *testing.T, spec string) (*dshformat.Corpus, dshformat.Source) {
	t.Helper()
	loc, err := location.ParseSource(spec)
	if err != nil {
		t.Fatal(err)
	}
	src, err := location.ImportSource(context.Background(), loc, location.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	c, err := dshformat.NewCorpus(context.Background(), src, spec)
	if err != nil {
		t.Fatal(err)
	}
	return c, src
}

func importSource(t *testing.T, st store, spec string) {
	t.Helper()
	_, src := openSource(t, spec)
	if _, err := transfer.Import(context.Background(), st, src, transfer.ImportOptions{}); err != nil {
		t.Fatalf("import %s: %v", spec, err)
	}
}

func read(t *testing.T, src backend.HeaderReader, ids ...string) map[string]usage.Session {
	t.Helper()
	got, err := usage.Read(context.Background(), src, ids)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]usage.Session{}
	for _, s := range got {
		out[s.ID] = s
	}
	return out
}

func ev(seq int64, typ, data string) session.Event {
	return session.Event{Type: typ, Seq: seq, Time: 1000 + seq, Data: json.RawMessage(data)}
}

// The stores' SQL applies exactly the Go rules: every odd shape a log
// imported as found may hold gives the same figures in SQLite, PostgreSQL
// and OfEvent.
func TestStoresApplyTheGoRules(t *testing.T) {
	msg := func(usage string) string {
		return `{"turn":1,"step":1,"message":{"role":"assistant","content":[],"source":{"kind":"model","provider":"p","model":"m"},"id":"x"},"usage":` + usage + `}`
	}
	cases := map[string]session.Event{
		"plain":                   ev(0, "assistant/message", msg(`{"inputTokens":10,"outputTokens":5,"cacheReadTokens":2,"reasoningTokens":1}`)),
		"exponent":                ev(0, "assistant/message", msg(`{"inputTokens":1e3,"outputTokens":5}`)),
		"fraction":                ev(0, "assistant/message", msg(`{"inputTokens":10.0,"outputTokens":5}`)),
		"negative":                ev(0, "assistant/message", msg(`{"inputTokens":-4,"outputTokens":5}`)),
		"minus-zero":              ev(0, "assistant/message", msg(`{"inputTokens":-0,"outputTokens":5}`)),
		"max-safe":                ev(0, "assistant/message", msg(`{"inputTokens":9007199254740991}`)),
		"past-safe":               ev(0, "assistant/message", msg(`{"inputTokens":9007199254740992,"outputTokens":99999999999999999999}`)),
		"string-count":            ev(0, "assistant/message", msg(`{"inputTokens":"10","outputTokens":null}`)),
		"duplicate-kind":          ev(0, "assistant/message", msg(`{"inputTokens":1,"inputTokens":2}`)),
		"escaped-key":             ev(0, "assistant/message", msg(`{"input\u0054okens":7, "outputTokens" : 3 }`)),
		"usage-array":             ev(0, "assistant/message", msg(`[1,2]`)),
		"usage-null":              ev(0, "assistant/message", msg(`null`)),
		"usage-empty":             ev(0, "assistant/message", msg(`{}`)),
		"no-usage":                ev(0, "assistant/message", `{"turn":1,"message":{"source":{"model":"m"}}}`),
		"duplicate-usage":         ev(0, "assistant/message", `{"usage":{"inputTokens":1},"message":{"source":{"model":"a"}},"usage":{"inputTokens":2},"message":{"source":{"model":"b"}}}`),
		"model-not-string":        ev(0, "assistant/message", `{"message":{"source":{"model":5}},"usage":{"inputTokens":3}}`),
		"source-not-object":       ev(0, "assistant/message", `{"message":{"source":"m"},"usage":{"inputTokens":3}}`),
		"model-unicode":           ev(0, "assistant/message", `{"message":{"source":{"model":"d\u00e9ep-\u4e2d\u6587 \"q\""}},"usage":{"inputTokens":3}}`),
		"model-surrogate":         ev(0, "assistant/message", `{"message":{"source":{"model":"a\ud800b"}},"usage":{"inputTokens":3}}`),
		"model-nul":               ev(0, "assistant/message", `{"message":{"source":{"model":"a\u0000b"}},"usage":{"inputTokens":3}}`),
		"odd-text-elsewhere":      ev(0, "assistant/message", `{"message":{"content":[{"text":"\u0000 \udc00"}],"source":{"model":"m"}},"usage":{"inputTokens":3}}`),
		"model-fdd0":              ev(0, "assistant/message", `{"message":{"source":{"model":"a\ufdd0"}},"usage":{"inputTokens":3}}`),
		"model-escaped-backslash": ev(0, "assistant/message", `{"message":{"source":{"model":"a\\\\ud800 \\\\ufdd1"}},"usage":{"inputTokens":3}}`),
		"compaction":              ev(0, "compaction/summary", `{"compactionId":"c","provider":"p","model":"cm","usage":{"inputTokens":20,"outputTokens":4}}`),
		"chunk-not-counted":       ev(0, "assistant/chunk", `{"turn":1,"step":1,"chunk":{"type":"usage","usage":{"inputTokens":10,"outputTokens":5}}}`),
		"data-array":              ev(0, "assistant/message", `[{"usage":{"inputTokens":1}}]`),
		"data-string":             ev(0, "assistant/message", `"usage"`),
	}
	eachStore(t, func(t *testing.T, st store) {
		ctx := context.Background()
		var ids []string
		for name, e := range cases {
			h := session.Header{ID: "edge-" + name, CreatedAt: 1, Version: 0}
			if _, err := st.ImportSession(ctx, h, []session.Event{e}, nil); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			ids = append(ids, h.ID)
		}
		got := read(t, st, ids...)
		for name, e := range cases {
			want := usage.OfEvents([]session.Event{e})
			if g := got["edge-"+name]; !reflect.DeepEqual(nonNil(g.Models), nonNil(want)) {
				t.Errorf("%s: store %+v, Go %+v", name, g.Models, want)
			}
		}
		// A few figures checked by hand, so that both sides cannot be
		// wrong together.
		for name, want := range map[string]int64{"plain": 10, "exponent": 0, "fraction": 0, "negative": 0, "minus-zero": 0,
			"max-safe": 9007199254740991, "past-safe": 0, "string-count": 0, "duplicate-kind": 2, "escaped-key": 7,
			"duplicate-usage": 2, "compaction": 20} {
			if g := got["edge-"+name].Total.InputTokens; g != want {
				t.Errorf("%s: inputTokens %d, want %d", name, g, want)
			}
		}
		for name, want := range map[string]string{"duplicate-usage": "b", "model-not-string": "", "model-surrogate": "", "model-nul": "", "model-fdd0": "", "model-escaped-backslash": "", "odd-text-elsewhere": "m", "model-unicode": `déep-中文 "q"`, "compaction": "cm"} {
			if m := got["edge-"+name].Models; len(m) != 1 || m[0].Model != want {
				t.Errorf("%s: models %+v, want one named %q", name, m, want)
			}
		}
		for _, name := range []string{"usage-array", "usage-null", "no-usage", "chunk-not-counted", "data-array", "data-string"} {
			if m := got["edge-"+name].Models; len(m) != 0 {
				t.Errorf("%s: counted %+v, want nothing", name, m)
			}
		}
		if m := got["edge-usage-empty"].Models; len(m) != 1 || m[0].Messages != 1 || m[0].InputTokens != 0 {
			t.Errorf("usage-empty: %+v, want one message of zero tokens", m)
		}
	})
}

func nonNil(ms []backend.ModelUsage) []backend.ModelUsage {
	if ms == nil {
		return []backend.ModelUsage{}
	}
	return ms
}

// validMessage is an assistant/message DSH's validation accepts.
func validMessage(seq int64, model string, in, out int64) session.Event {
	return ev(seq, "assistant/message", `{"turn":1,"step":1,"message":{"role":"assistant","content":[{"type":"text","text":"ok"}],"source":{"kind":"model","provider":"p","model":"`+model+`"},"id":"m`+strconv.FormatInt(seq, 10)+`"},"usage":{"inputTokens":`+strconv.FormatInt(in, 10)+`,"outputTokens":`+strconv.FormatInt(out, 10)+`}}`)
}

// The totals follow every write: create, append, an append in a
// transaction rolled back, and the seed cut of a fork.
func TestTotalsFollowWrites(t *testing.T) {
	eachStore(t, func(t *testing.T, st store) {
		ctx := context.Background()
		h := session.Header{ID: "w", CreatedAt: 1, Version: 0}
		turn := func(seq int64, typ, data string) session.Event { return ev(seq, typ, data) }
		first := []session.Event{
			turn(0, "turn/start", `{"turn":1}`),
			turn(1, "step/start", `{"turn":1,"step":1}`),
		}
		m2 := validMessage(2, "m1", 10, 5)
		m2.SurfaceOp = json.RawMessage(`"append"`)
		first = append(first, m2)
		if err := st.CreateSession(ctx, h, first); err != nil {
			t.Fatal(err)
		}
		check := func(what string, want usage.Totals) {
			t.Helper()
			if g := read(t, st, "w")["w"].Total; g != want {
				t.Errorf("%s: %+v, want %+v", what, g, want)
			}
		}
		check("after create", usage.Totals{Messages: 1, InputTokens: 10, OutputTokens: 5})
		m3 := validMessage(4, "m2", 7, 1)
		m3.SurfaceOp = json.RawMessage(`"append"`)
		next := []session.Event{turn(3, "step/start", `{"turn":1,"step":2}`), m3}
		rollback := st.Update(ctx, func(tx backend.Store) error {
			if err := tx.Append(ctx, "w", 3, next); err != nil {
				return err
			}
			return context.Canceled
		})
		if rollback != context.Canceled {
			t.Fatalf("rolled-back append: %v", rollback)
		}
		check("after a rolled-back append", usage.Totals{Messages: 1, InputTokens: 10, OutputTokens: 5})
		if err := st.Append(ctx, "w", 3, next); err != nil {
			t.Fatal(err)
		}
		check("after append", usage.Totals{Messages: 2, InputTokens: 17, OutputTokens: 6})
		if ms := read(t, st, "w")["w"].Models; len(ms) != 2 || ms[0].Model != "m1" || ms[1].Model != "m2" || ms[1].InputTokens != 7 {
			t.Errorf("by model: %+v", ms)
		}
		// A fork seeded with the first three events counts only its own.
		seed := int64(3)
		parent := "w"
		fork := session.Header{ID: "fork", CreatedAt: 2, Version: 0, ParentSession: &parent, SeedLength: &seed}
		events := append(append([]session.Event{}, first...), turn(3, "step/start", `{"turn":1,"step":2}`), m3)
		if _, err := st.ImportSession(ctx, fork, events, nil); err != nil {
			t.Fatal(err)
		}
		if g := read(t, st, "fork")["fork"].Total; g != (usage.Totals{Messages: 1, InputTokens: 7, OutputTokens: 1}) {
			t.Errorf("fork: %+v, want its own message only", g)
		}
	})
}

// DSH's own recorded sessions, read in place and imported into both
// stores, give the totals counted by hand from their usage lines.
func TestFixtureTotals(t *testing.T) {
	dir := dshfixtures.Dir(t, "dsh-oracle/g-nested-descendants/jsonl-plain")
	// inputTokens, outputTokens of each session's assistant/message lines.
	want := map[string]usage.Totals{
		"g-parent":                             {},
		"g-ordinary-intermediate":              {},
		"5e669728-9937-4994-aef4-54bb827650f5": {Messages: 1, InputTokens: 10, OutputTokens: 26},
		"9817445f-2b4f-4b0f-8cee-8fa8a2c84b83": {Messages: 1, InputTokens: 10, OutputTokens: 30},
		"9d4e5641-9afa-4ea3-99d5-c0d3eaade63c": {Messages: 2, InputTokens: 20, OutputTokens: 30},
		"a7dffd7b-c5c8-4b01-9286-0c9e14b2892e": {Messages: 1, InputTokens: 10, OutputTokens: 17},
		"96777fcb-af0a-43b0-9bed-9ea4a39e9c2b": {Messages: 1, InputTokens: 10, OutputTokens: 21},
		"3097f2dc-73e3-4412-9aab-34218839e366": {Messages: 1, InputTokens: 10, OutputTokens: 13},
		"00000000-0000-4000-8000-00000000bbb2": {Messages: 1, InputTokens: 10, OutputTokens: 4},
	}
	// The subtree rollups, summed by hand along the listing's tree (the
	// ordinary intermediate is walked through, its child counted).
	wantSubtree := map[string]usage.Totals{
		"g-parent":                             {Messages: 8, InputTokens: 80, OutputTokens: 141},
		"9d4e5641-9afa-4ea3-99d5-c0d3eaade63c": {Messages: 4, InputTokens: 40, OutputTokens: 68},
		"a7dffd7b-c5c8-4b01-9286-0c9e14b2892e": {Messages: 2, InputTokens: 20, OutputTokens: 38},
		"g-ordinary-intermediate":              {Messages: 1, InputTokens: 10, OutputTokens: 4},
	}
	var ids []string
	for id := range want {
		ids = append(ids, id)
	}
	checkTree := func(t *testing.T, l *subagent.Lister, src backend.HeaderReader) {
		t.Helper()
		rows, err := l.ListDescendants(context.Background(), "g-parent")
		if err != nil {
			t.Fatal(err)
		}
		tree, err := usage.Walk(context.Background(), rows, src, "g-parent")
		if err != nil {
			t.Fatal(err)
		}
		if len(tree.Nodes) != len(want) {
			t.Errorf("tree has %d nodes, want %d", len(tree.Nodes), len(want))
		}
		for _, n := range tree.Nodes {
			if n.Total != want[n.ID] {
				t.Errorf("%s own: %+v, want %+v", n.ID, n.Total, want[n.ID])
			}
			ws, ok := wantSubtree[n.ID]
			if !ok {
				ws = want[n.ID]
				if n.ID == "5e669728-9937-4994-aef4-54bb827650f5" {
					ws = usage.Totals{Messages: 2, InputTokens: 20, OutputTokens: 56}
				}
			}
			if n.Subtree != ws {
				t.Errorf("%s subtree: %+v, want %+v", n.ID, n.Subtree, ws)
			}
			if (n.Row == nil) != (n.ID == "g-parent" || n.ID == "g-ordinary-intermediate") {
				t.Errorf("%s: listed = %v", n.ID, n.Row != nil)
			}
		}
	}
	t.Run("source", func(t *testing.T) {
		c, _ := openSource(t, "jsonl:"+dir)
		for id, s := range read(t, c, ids...) {
			if s.Total != want[id] || s.Damage != "" {
				t.Errorf("%s: %+v, want %+v", id, s, want[id])
			}
		}
		checkTree(t, subagent.NewCorpusLister(c, nil, 1), c)
	})
	eachStore(t, func(t *testing.T, st store) {
		importSource(t, st, "jsonl:"+dir)
		for id, s := range read(t, st, ids...) {
			if s.Total != want[id] || s.Damage != "" {
				t.Errorf("%s: %+v, want %+v", id, s, want[id])
			}
		}
		checkTree(t, subagent.NewStoreLister(st, st, 1), st)
	})
}

// withCwd writes files (by path) into a temporary directory with {{cwd}}
// replaced, as DSH's validation wants an absolute cwd.
func withCwd(t *testing.T, files map[string][]byte) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		text = []byte(strings.ReplaceAll(string(text), "{{cwd}}", dir))
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, text, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// A V0 log with packed chunk rows and assistant/chunk usage records, and
// V4 logs whose messages carry their stream: the chunks' copies of the
// usage are not counted, a fork's inherited prefix is not its own.
func TestFormatShapes(t *testing.T) {
	v0 := dshfixtures.Dir(t, "dsh-snapshots/acp-agent/packed-chunks")
	packed, err := os.ReadFile(filepath.Join(v0, "session.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	cwd := "/work/usage-test"
	tok := dshfixtures.LaterTokens{Sessions: map[int]string{1: "v4-parent", 2: "v4-child"}, Cwd: cwd}
	fork := dshfixtures.LaterRawLog(t, dshfixtures.LaterFixture{Rel: "v4/snapshots/sdk/subagent-fork-in-process/session.1.v4.jsonl", Version: 4}, tok)
	parent := dshfixtures.LaterRawLog(t, dshfixtures.LaterFixture{Rel: "v4/snapshots/sdk/subagent-fork-in-process/session.v4.jsonl", Version: 4}, tok)
	v4 := dshformat.LogFileName(4, dshformat.CompressionNone)
	dir := withCwd(t, map[string][]byte{"packed.jsonl": packed, "p/v4-parent/" + v4: parent, "p/v4-child/" + v4: fork})
	model := "deepseek-v4-flash"
	// Counted by hand from the fixtures' assistant/message usage members.
	want := map[string]usage.Totals{
		"ff1c1e99-3bd4-4ef8-a954-80d607d628ba": {Messages: 2, InputTokens: 2878 + 167, OutputTokens: 83 + 52, CacheReadTokens: 2816, ReasoningTokens: 17 + 21},
		"v4-parent":                            {Messages: 3, InputTokens: 2885 + 158 + 65, OutputTokens: 25 + 147 + 30, CacheReadTokens: 2816 + 3072, ReasoningTokens: 23 + 59 + 25},
		// seqs 0-15 are the parent's first turn, inherited
		"v4-child": {Messages: 1, InputTokens: 97, OutputTokens: 39, CacheReadTokens: 2816, ReasoningTokens: 34},
	}
	ids := []string{"ff1c1e99-3bd4-4ef8-a954-80d607d628ba", "v4-parent", "v4-child"}
	check := func(t *testing.T, got map[string]usage.Session) {
		t.Helper()
		for id, w := range want {
			s := got[id]
			if s.Total != w || len(s.Models) != 1 || s.Models[0].Model != model || s.Damage != "" {
				t.Errorf("%s: %+v, want %+v of %s", id, s, w, model)
			}
		}
	}
	t.Run("source", func(t *testing.T) {
		c, _ := openSource(t, "jsonl:"+dir)
		check(t, read(t, c, ids...))
	})
	eachStore(t, func(t *testing.T, st store) {
		importSource(t, st, "jsonl:"+dir)
		check(t, read(t, st, ids...))
	})
}

// A torn tail and a log damaged inside its committed region count their
// valid prefix and say so, the same in place and imported; an id nobody
// holds is missing.
func TestDamagedLogs(t *testing.T) {
	header := func(id string) string {
		return `{"type":"session","version":0,"id":"` + id + `","createdAt":1,"cwd":"/w","delegationDepth":0}` + "\n"
	}
	line := func(e session.Event) string {
		b, err := json.Marshal(map[string]any{"type": e.Type, "seq": e.Seq, "time": e.Time, "data": e.Data})
		if err != nil {
			t.Fatal(err)
		}
		return string(b) + "\n"
	}
	start := line(ev(0, "turn/start", `{"turn":1}`))
	end := func(seq int64) string {
		return line(ev(seq, "turn/end", `{"turn":1,"reason":{"kind":"completed"}}`))
	}
	torn := header("torn") + start + line(validMessage(1, "m", 7, 3)) + end(2) + strings.TrimSuffix(line(validMessage(3, "m", 100, 100)), "}\n")
	damaged := header("damaged") + start + line(validMessage(1, "m", 5, 2)) + "{not json\n" + line(validMessage(3, "m", 100, 100)) + end(4)
	dir := withCwd(t, map[string][]byte{"torn.jsonl": []byte(torn), "damaged.jsonl": []byte(damaged)})
	check := func(t *testing.T, got map[string]usage.Session) {
		t.Helper()
		if s := got["torn"]; s.Total != (usage.Totals{Messages: 1, InputTokens: 7, OutputTokens: 3}) || s.Damage != logdamage.Torn || s.FromSeq != 3 {
			t.Errorf("torn: %+v", s)
		}
		if s := got["damaged"]; s.Total != (usage.Totals{Messages: 1, InputTokens: 5, OutputTokens: 2}) || s.Damage != logdamage.Damaged || s.FromSeq != 2 {
			t.Errorf("damaged: %+v", s)
		}
		if s := got["nobody"]; s.Damage != logdamage.Missing || !s.Total.IsZero() {
			t.Errorf("nobody: %+v", s)
		}
	}
	t.Run("source", func(t *testing.T) {
		c, _ := openSource(t, "jsonl:"+dir)
		check(t, read(t, c, "torn", "damaged", "nobody"))
	})
	eachStore(t, func(t *testing.T, st store) {
		importSource(t, st, "jsonl:"+dir)
		check(t, read(t, st, "torn", "damaged", "nobody"))
	})
}
