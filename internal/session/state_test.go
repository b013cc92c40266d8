package session

import (
	"fmt"
	"strings"
	"testing"
)

// verdict runs a validator over events from position from and returns the
// first error text (with rule and position) or "ok", plus the final state.
func verdict(t *testing.T, v *Validator, events []Event) (string, []byte) {
	t.Helper()
	for _, e := range events {
		if err := v.Add(e); err != nil {
			ve := err.(*ValidationError)
			return fmt.Sprintf("%s@%d: %s", ve.Rule, ve.Seq, ve.Msg), nil
		}
	}
	st, err := v.MarshalState()
	if err != nil {
		t.Fatal(err)
	}
	return "ok", st
}

// TestRestoredValidatorMatchesUninterrupted splits every log at every k:
// validating events[:k], persisting the state, restoring it and validating
// events[k:] must give exactly the verdict (and final state) of one pass.
func TestRestoredValidatorMatchesUninterrupted(t *testing.T) {
	h := testHeader()
	type namedLog struct {
		name   string
		events []Event
	}
	var logs []namedLog
	for _, c := range ruleCases(t) {
		logs = append(logs, namedLog{c.name + " (valid)", c.valid}, namedLog{c.name + " (invalid)", c.invalid})
	}
	for _, log := range loadFixtureLogs(t) {
		if !log.packed {
			_, events := decodeFixture(t, log)
			logs = append(logs, namedLog{log.path, events})
		}
	}
	for _, log := range logs {
		want, wantState := verdict(t, NewValidator(h), log.events)
		for k := 0; k <= len(log.events); k++ {
			v := NewValidator(h)
			got, _ := verdict(t, v, log.events[:k])
			if got != "ok" {
				if got != want {
					t.Fatalf("%s split at %d: prefix verdict %q, uninterrupted %q", log.name, k, got, want)
				}
				continue
			}
			state, err := v.MarshalState()
			if err != nil {
				t.Fatal(err)
			}
			restored, err := RestoreValidator(h, state)
			if err != nil {
				t.Fatalf("%s split at %d: restore: %v", log.name, k, err)
			}
			if restored.Next() != int64(k) {
				t.Fatalf("%s split at %d: restored Next() = %d", log.name, k, restored.Next())
			}
			got, gotState := verdict(t, restored, log.events[k:])
			if got != want || string(gotState) != string(wantState) {
				t.Fatalf("%s split at %d:\n got %q %s\nwant %q %s", log.name, k, got, gotState, want, wantState)
			}
		}
	}
}

func TestMarshalStateKeepsToolOutputOut(t *testing.T) {
	v := NewValidator(testHeader())
	big := strings.Repeat("x", 10000)
	log := withLine(6, ev(6, "tool/result", toolResult("r1", "c1", `{"type":"text","text":"`+big+`"}`), `"sourceEventSeqs":[5]`, `"surfaceOp":"append"`))
	for _, e := range lines(t, log...) {
		if err := v.Add(e); err != nil {
			t.Fatal(err)
		}
	}
	st, err := v.MarshalState()
	if err != nil {
		t.Fatal(err)
	}
	if len(st) > 1000 || strings.Contains(string(st), big) {
		t.Fatalf("state carries the tool output (%d bytes)", len(st))
	}
}

func TestRestoreValidatorRejectsInconsistentState(t *testing.T) {
	cases := map[string]string{
		"not JSON":              `{"v":1,`,
		"other version":         `{"v":2,"next":0,"nodes":[],"replaceGeneration":0}`,
		"negative next":         `{"v":1,"next":-1,"nodes":[],"replaceGeneration":0}`,
		"node beyond next":      `{"v":1,"next":3,"nodes":[3],"replaceGeneration":0}`,
		"repeated node":         `{"v":1,"next":3,"nodes":[1,1],"replaceGeneration":0}`,
		"tool result not node":  `{"v":1,"next":3,"nodes":[1],"replaceGeneration":0,"toolResults":[{"seq":2,"rest":"{}"}]}`,
		"tool result empty key": `{"v":1,"next":3,"nodes":[1],"replaceGeneration":0,"toolResults":[{"seq":1,"rest":""}]}`,
	}
	for name, st := range cases {
		if _, err := RestoreValidator(testHeader(), []byte(st)); err == nil {
			t.Errorf("%s: restored without error", name)
		}
	}
}

// syntheticLog builds a long, valid log shaped like real sessions: turns with
// a prompt, streamed chunks, an assistant message calling a tool, the call
// and its result, and a periodic compaction replacing the older surface.
func syntheticLog(tb testing.TB, turns int) []Event {
	tb.Helper()
	var out []string
	seq := 0
	add := func(typ, data string, extra ...string) {
		out = append(out, ev(seq, typ, data, extra...))
		seq++
	}
	firstNode := -1
	var nodes []int
	for turn := 1; turn <= turns; turn++ {
		add("turn/start", fmt.Sprintf(`{"turn":%d}`, turn))
		nodes = append(nodes, seq)
		if firstNode < 0 {
			firstNode = seq
		}
		add("user/message", userMsg(fmt.Sprintf("u%d", turn)), `"surfaceOp":"append"`)
		add("request/header", `{"header":{"config":{"provider":"deepseek","model":"chat"},"system":"s","tools":"t"},"reason":"resume"}`)
		add("step/start", fmt.Sprintf(`{"turn":%d,"step":1}`, turn))
		for i := 0; i < 20; i++ {
			add("assistant/chunk", fmt.Sprintf(`{"turn":%d,"step":1,"chunk":{"type":"text-delta","index":0,"text":"word %d "}}`, turn, i))
		}
		call := fmt.Sprintf("call-%d", turn)
		nodes = append(nodes, seq)
		add("assistant/message", assistantMsg(fmt.Sprintf("a%d", turn), `{"type":"tool-call","id":"`+call+`","name":"bash","arguments":"{}"}`), `"sourceEventSeqs":[]`, `"surfaceOp":"append"`)
		add("tool/call", `{"turn":1,"step":1,"callId":"`+call+`","name":"bash","arguments":"{}"}`)
		nodes = append(nodes, seq)
		add("tool/result", toolResult(fmt.Sprintf("r%d", turn), call, `{"type":"text","text":"`+strings.Repeat("output ", 50)+`"}`), fmt.Sprintf(`"sourceEventSeqs":[%d]`, seq-1), `"surfaceOp":"append"`)
		add("step/end", fmt.Sprintf(`{"turn":%d,"step":1}`, turn))
		add("turn/end", fmt.Sprintf(`{"turn":%d,"reason":{"kind":"completed"}}`, turn))
		if turn%10 == 0 {
			shadow := nodes[:len(nodes)-3]
			src := strings.Trim(strings.Join(strings.Fields(fmt.Sprint(shadow)), ","), "[]")
			add("compaction/summary", `{"compactionId":"c","summary":"s"}`)
			nodes = append([]int{seq}, nodes[len(nodes)-3:]...)
			add("user/message", userMsg(fmt.Sprintf("s%d", turn)), `"sourceEventSeqs":[`+src+`]`,
				fmt.Sprintf(`"surfaceOp":{"op":"replace","start":%d,"end":%d}`, shadow[0], shadow[len(shadow)-1]))
		}
	}
	return lines(tb, out...)
}

func TestSyntheticLogIsValid(t *testing.T) {
	if err := ValidateLog(testHeader(), syntheticLog(t, 30)); err != nil {
		t.Fatal(err)
	}
}

func BenchmarkValidatorAdd(b *testing.B) {
	events := syntheticLog(b, 400)
	h := testHeader()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		v := NewValidator(h)
		for _, e := range events {
			if err := v.Add(e); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(len(events))*float64(b.N)/b.Elapsed().Seconds(), "events/s")
}
