package storetest

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/search"
	"github.com/dsh-project/dsh/internal/session"
)

// searchWords are the words the search test's messages are written of:
// each write of the test adds a word of its own.
var searchWords = []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo", "common"}

// said is a turn whose user message and answer say text.
func said(from int64, n int, text string) []session.Event {
	out := turn(from, n)
	for i, ev := range out {
		switch ev.Type {
		case session.TypeUserMessage:
			out[i].Data = json.RawMessage(fmt.Sprintf(`{"content":[{"type":"text","text":%q}],"source":{"kind":"user"},"role":"user","id":"u-%d"}`, text, ev.Seq))
		case session.TypeAssistantMsg:
			out[i].Data = json.RawMessage(fmt.Sprintf(`{"turn":%d,"step":1,"message":{"id":"a-%d","role":"assistant","content":[{"type":"text","text":%q}],"source":{"kind":"model","provider":"echo","model":"echo-1"}}}`, n, ev.Seq, "re: "+text))
		}
	}
	return out
}

// testSearch: the index a SearchReader keeps is exact after every write —
// create, append, an import with a fork's inherited prefix, an import
// with a torn tail (a stored row past the cut among it), the repairing
// Load that cuts it, a resumed session's append after the repair, a
// damaged log's import and a refused header: each query's hits are those
// of the stored logs read back and matched from scratch (package search's
// text rule over each own event), and DamagedLogs names the logs that are
// not whole (the torn one too, whose tail no record names) and the ids no
// session has.
func testSearch(t *testing.T, e *env) {
	r, ok := e.b.(backend.SearchReader)
	if !ok {
		t.Skip("the store keeps no search index")
	}
	ids := []string{}
	check := func(step string) {
		t.Helper()
		for _, w := range append(slices.Clone(searchWords), "common NOT alpha", `"re common"`, "ech*") {
			q, err := search.Parse(w)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			err = r.Search(e.ctx, backend.SearchRequest{FTS5: q.FTS5(), TSQuery: q.TSQuery()}, func(h backend.SearchHit) error {
				got = append(got, fmt.Sprintf("%s/%d", h.SessionID, h.Seq))
				return nil
			})
			if err != nil {
				t.Fatalf("%s: search %q: %v", step, w, err)
			}
			// The best n are the first n of all, whatever rows a limited
			// page of the index drops.
			for n := 1; n <= len(got); n++ {
				var best []string
				err = r.Search(e.ctx, backend.SearchRequest{FTS5: q.FTS5(), TSQuery: q.TSQuery(), Limit: n}, func(h backend.SearchHit) error {
					best = append(best, fmt.Sprintf("%s/%d", h.SessionID, h.Seq))
					return nil
				})
				if err != nil || !reflect.DeepEqual(best, got[:n]) {
					t.Errorf("%s: search %q, best %d = %v, %v; want %v", step, w, n, best, err, got[:n])
				}
			}
			slices.Sort(got)
			if want := extracted(t, e, ids, q); !reflect.DeepEqual(got, want) {
				t.Errorf("%s: search %q = %v; the stored logs matched from scratch: %v", step, w, got, want)
			}
		}
	}

	e.create(root("s", 1), said(0, 1, "alpha common"))
	ids = append(ids, "s")
	check("create")
	if err := e.b.Append(e.ctx, "s", 6, said(6, 2, "bravo common")); err != nil {
		t.Fatal(err)
	}
	check("append")

	fork := child("fork", "s", 2)
	fork.SeedLength = ptr(int64(6))
	if _, err := e.b.ImportSession(e.ctx, fork, append(said(0, 1, "alpha common"), said(6, 2, "charlie common")...), nil); err != nil {
		t.Fatal(err)
	}
	ids = append(ids, "fork")
	check("import of a fork")

	// A torn import: a committed turn, an open one, and past a gap a
	// stored message that is not part of the log.
	events := append(said(0, 1, "delta common"), said(6, 2, "echo common")[:2]...)
	cut := int64(len(events)) + 1
	stray := said(cut, 3, "foxtrot common")[1]
	stray.Seq = cut
	res, err := e.b.ImportSession(e.ctx, root("torn", 3), append(events, stray), nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Torn == nil || res.Torn.FromSeq != cut {
		t.Fatalf("import = %+v, want a torn tail from %d", res, cut)
	}
	tail := &backend.TornTail{FromSeq: 6, Reason: "unterminated line", Raw: []byte(`{"type":"user/message","data":{"content":[{"type":"text","text":"golf`)}
	if _, err := e.b.ImportSession(e.ctx, root("tail", 4), said(0, 1, "hotel common"), tail); err != nil {
		t.Fatal(err)
	}
	ids = append(ids, "torn", "tail")
	check("import with a torn tail")
	if got := damagedLogs(t, e, r, []string{"s", "torn", "tail"}); !reflect.DeepEqual(got, []backend.LogDamage{
		{ID: "tail", TornFrom: 6, DamagedFrom: -1},
		{ID: "torn", TornFrom: cut, DamagedFrom: -1},
	}) {
		t.Errorf("DamagedLogs of the torn imports = %+v, want each torn where its reader cuts it", got)
	}

	for _, id := range []string{"torn", "tail"} {
		if _, err := e.b.Load(e.ctx, id); err != nil {
			t.Fatalf("Load %s: %v", id, err)
		}
	}
	check("repairing Load")
	next := int64(len(e.inspect(e.b, "torn").Events))
	if err := e.b.Append(e.ctx, "torn", next, said(next, 3, "india common")); err != nil {
		t.Fatal(err)
	}
	check("resume after the repair")

	damage := backend.DamagedLog{FromSeq: 6, Reason: "unparsable committed event at line 7", Encoding: "jsonl-text", Raw: []byte(`{"type":"user/message","data":"kilo"` + "\n")}
	if _, err := e.b.ImportDamagedSession(e.ctx, root("damaged", 5), said(0, 1, "juliet common"), damage); err != nil {
		t.Fatal(err)
	}
	refused := root("refused", 6)
	if err := e.b.RecordRefusal(e.ctx, backend.Refusal{Location: "/src/refused.jsonl", ID: "refused", Header: &refused, Code: backend.RefusedFormat, Reason: "refused"}); err != nil {
		t.Fatal(err)
	}
	ids = append(ids, "damaged")
	check("damaged import and a refusal")

	damaged := damagedLogs(t, e, r, []string{"s", "torn", "damaged", "refused", "nobody"})
	want := []backend.LogDamage{
		{ID: "damaged", TornFrom: -1, DamagedFrom: 6},
		{ID: "nobody", TornFrom: -1, DamagedFrom: -1, Missing: true},
		{ID: "refused", TornFrom: -1, DamagedFrom: -1, Refused: true},
	}
	if !reflect.DeepEqual(damaged, want) {
		t.Errorf("DamagedLogs = %+v, want %+v", damaged, want)
	}
}

func damagedLogs(t *testing.T, e *env, r backend.SearchReader, ids []string) []backend.LogDamage {
	t.Helper()
	var out []backend.LogDamage
	if err := r.DamagedLogs(e.ctx, ids, func(d backend.LogDamage) error {
		out = append(out, d)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// extracted is the hits of q in the stored logs of ids, each log read back
// (Audit: its valid prefix, or the events an import kept before the
// damage) and matched from scratch: the own events (from the header's
// cut) whose text matches.
func extracted(t *testing.T, e *env, ids []string, q *search.Query) []string {
	t.Helper()
	m := search.NewMatcher(q, search.FoldDiacritics)
	var out []string
	for _, id := range ids {
		a, err := e.b.Audit(e.ctx, id)
		if err != nil {
			t.Fatalf("audit %s: %v", id, err)
		}
		events := a.Events
		if a.Damaged != nil {
			events = a.Prefix // the events before an import's damage
		}
		for _, ev := range events {
			if ev.Seq < a.Header.InheritedCut() {
				continue
			}
			text, ok := search.Text(ev)
			if !ok {
				continue
			}
			toks := search.Tokens(text, search.FoldDiacritics)
			if m.Match(toks, make([]bool, len(toks))) {
				out = append(out, fmt.Sprintf("%s/%d", id, ev.Seq))
			}
		}
	}
	slices.Sort(out)
	return out
}
