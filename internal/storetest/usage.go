package storetest

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/usage"
)

// usageTurn is turn with usage on its assistant message.
func usageTurn(from int64, n int, model, counts string) []session.Event {
	out := turn(from, n)
	for i, ev := range out {
		if ev.Type == session.TypeAssistantMsg {
			data := strings.Replace(string(ev.Data), `"model":"echo-1"`, `"model":"`+model+`"`, 1)
			out[i].Data = json.RawMessage(strings.TrimSuffix(data, "}") + `,"usage":` + counts + `}`)
		}
	}
	return out
}

// testUsage: a store's kept totals (UsageOf) are package usage's rules
// applied to the log it stores, after create, append, an import with a
// seed, a torn tail and its repair, a damaged log and a refused header.
func testUsage(t *testing.T, e *env) {
	r, ok := e.b.(backend.UsageReader)
	if !ok {
		t.Skip("the store keeps no usage")
	}
	e.create(root("u", 1), usageTurn(0, 1, "m1", `{"inputTokens":10,"outputTokens":2}`))
	if err := e.b.Append(e.ctx, "u", 6, usageTurn(6, 2, "m2", `{"inputTokens":5,"outputTokens":1,"cacheReadTokens":3,"reasoningTokens":4}`)); err != nil {
		t.Fatal(err)
	}
	fork := child("fork", "u", 2)
	fork.SeedLength = ptr(int64(6))
	forkEvents := append(usageTurn(0, 1, "m1", `{"inputTokens":10,"outputTokens":2}`), usageTurn(6, 2, "m3", `{"inputTokens":7,"outputTokens":7}`)...)
	if _, err := e.b.ImportSession(e.ctx, fork, forkEvents, nil); err != nil {
		t.Fatal(err)
	}
	torn := usageTurn(0, 1, "m1", `{"inputTokens":1,"outputTokens":1}`)
	tail := &backend.TornTail{FromSeq: int64(len(torn)), Reason: "unterminated line", Raw: []byte(`{"type":"assistant/message","data":{"usage":{"inputTokens":9`)}
	if _, err := e.b.ImportSession(e.ctx, root("torn", 3), torn, tail); err != nil {
		t.Fatal(err)
	}
	damage := backend.DamagedLog{FromSeq: 6, Reason: "unparsable committed event at line 7", Encoding: "jsonl-text", Raw: []byte("{not json}\n")}
	if _, err := e.b.ImportDamagedSession(e.ctx, root("damaged", 4), torn, damage); err != nil {
		t.Fatal(err)
	}
	refused := root("refused", 5)
	if err := e.b.RecordRefusal(e.ctx, backend.Refusal{Location: "/src/refused.jsonl", ID: "refused", Header: &refused, Code: backend.RefusedFormat, Reason: "refused"}); err != nil {
		t.Fatal(err)
	}
	// An import storing, past a gap, a message that is not part of the
	// log (its reader cuts a torn tail off there, with no record of it).
	gapped := usageTurn(0, 1, "m1", `{"inputTokens":2,"outputTokens":2}`)
	cut := int64(len(gapped)) + 1
	stray := usageTurn(cut, 2, "m9", `{"inputTokens":1000,"outputTokens":1000}`)[3]
	stray.Seq = cut
	if res, err := e.b.ImportSession(e.ctx, root("gapped", 6), append(slices.Clone(gapped), stray), nil); err != nil || res.Torn == nil || res.Torn.FromSeq != cut {
		t.Fatalf("import past a gap = %+v, %v; want a torn tail from %d", res, err, cut)
	}
	read := func() map[string]backend.SessionUsage {
		got := map[string]backend.SessionUsage{}
		if err := r.UsageOf(e.ctx, []string{"u", "fork", "torn", "damaged", "refused", "gapped", "nobody"}, func(u backend.SessionUsage) error {
			got[u.ID] = u
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return got
	}
	got := read()
	if _, ok := got["nobody"]; ok || len(got) != 6 {
		t.Errorf("UsageOf answered for %d ids, want the 6 stored", len(got))
	}
	if stray.Type != session.TypeAssistantMsg {
		t.Fatalf("the stray row is a %s; the test needs one that carries usage", stray.Type)
	}
	want := map[string][]backend.ModelUsage{
		"u":       usage.OfEvents(append(usageTurn(0, 1, "m1", `{"inputTokens":10,"outputTokens":2}`), usageTurn(6, 2, "m2", `{"inputTokens":5,"outputTokens":1,"cacheReadTokens":3,"reasoningTokens":4}`)...)),
		"fork":    usage.OfEvents(usage.OwnEvents(6, forkEvents)),
		"torn":    usage.OfEvents(torn),
		"damaged": usage.OfEvents(torn),
		"gapped":  usage.OfEvents(gapped),
	}
	for id, w := range want {
		if !reflect.DeepEqual(got[id].Models, w) {
			t.Errorf("%s: UsageOf %+v, the rules over its log %+v", id, got[id].Models, w)
		}
	}
	if m := got["fork"].Models; len(m) != 1 || m[0].Model != "m3" || m[0].InputTokens != 7 {
		t.Errorf("fork: %+v, want its own message only (m3, 7 input tokens)", m)
	}
	if u := got["torn"]; u.TornFrom != tail.FromSeq || u.DamagedFrom != -1 || u.Refused {
		t.Errorf("torn: %+v, want the tail from %d", u, tail.FromSeq)
	}
	if u := got["damaged"]; u.DamagedFrom != damage.FromSeq || u.TornFrom != -1 {
		t.Errorf("damaged: %+v, want the damage from %d", u, damage.FromSeq)
	}
	if u := got["gapped"]; u.TornFrom != cut || u.DamagedFrom != -1 {
		t.Errorf("gapped: %+v, want the tail its reader cuts off from %d", u, cut)
	}
	if u := got["refused"]; !u.Refused || len(u.Models) != 0 {
		t.Errorf("refused: %+v, want a refused header with no usage", u)
	}
	// Repair cuts the tail off and closes nothing that counts.
	if _, err := e.b.Load(e.ctx, "torn"); err != nil {
		t.Fatal(err)
	}
	if u := read()["torn"]; u.TornFrom != -1 || !reflect.DeepEqual(u.Models, want["torn"]) {
		t.Errorf("torn after Load: %+v, want the same totals and no tail", u)
	}
	if _, err := e.b.Load(e.ctx, "gapped"); err != nil {
		t.Fatal(err)
	}
	if u := read()["gapped"]; u.TornFrom != -1 || !reflect.DeepEqual(u.Models, want["gapped"]) {
		t.Errorf("gapped after Load: %+v, want the same totals and no tail", u)
	}
}
