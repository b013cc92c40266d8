package session

import (
	"strconv"
	"strings"
	"testing"
)

const (
	turnStart1 = `{"type":"turn/start","seq":0,"time":100,"data":{"turn":1}}`
	stepStart1 = `{"type":"step/start","seq":1,"time":101,"data":{"turn":1,"step":1}}`
)

func assistantCalling(seq int, ids ...string) string {
	var blocks []string
	for _, id := range ids {
		blocks = append(blocks, `{"type":"tool-call","id":"`+id+`","name":"bash","arguments":"{}"}`)
	}
	return ev(seq, "assistant/message", assistantMsg("a", strings.Join(append([]string{`{"type":"text","text":"ok"}`}, blocks...), ",")), `"surfaceOp":"append"`)
}

func toolCall(seq int, id string) string {
	return ev(seq, "tool/call", `{"turn":1,"step":1,"callId":"`+id+`","name":"bash","arguments":"{}"}`)
}

func notStartedCloser(seq int, callID string) string {
	return `{"type":"tool/result","seq":` + strconv.Itoa(seq) + `,"time":TIME,"data":{"turn":1,"step":1,"message":{"id":"interrupted-tool-result-` + callID + `-` + strconv.Itoa(seq) +
		`","role":"user","source":{"kind":"tool","callId":"` + callID + `"},"content":[{"type":"tool-result","toolCallId":"` + callID +
		`","isError":true,"content":[{"type":"text","text":"The tool call was interrupted before the Harness recorded it as started. Retry it if it is still needed."}]}]},"error":{"name":"ToolNotStartedError","code":"TOOL_NOT_STARTED"}},"surfaceOp":"append"}`
}

func outcomeUnknownCloser(seq int, callID string, callSeq int) string {
	return `{"type":"tool/result","seq":` + strconv.Itoa(seq) + `,"time":TIME,"data":{"turn":1,"step":1,"message":{"id":"interrupted-tool-result-` + callID + `-` + strconv.Itoa(seq) +
		`","role":"user","source":{"kind":"tool","callId":"` + callID + `"},"content":[{"type":"tool-result","toolCallId":"` + callID +
		`","isError":true,"content":[{"type":"text","text":"The tool call was interrupted after it was recorded, but no result was durably recorded. Its outcome is unknown. Decide whether to retry from the tool semantics: retry only if the operation is read-only or idempotent; if it may have side effects, first verify external state or ask the user. Do not retry blindly."}]}]},"error":{"name":"ToolOutcomeUnknownError","code":"TOOL_OUTCOME_UNKNOWN"}},"surfaceOp":"append","sourceEventSeqs":[` +
		strconv.Itoa(callSeq) + `]}`
}

func stepEndCloser(seq int) string {
	return `{"type":"step/end","seq":` + strconv.Itoa(seq) + `,"time":TIME,"data":{"turn":1,"step":1}}`
}

func turnEndCloser(seq int) string {
	return `{"type":"turn/end","seq":` + strconv.Itoa(seq) + `,"time":TIME,"data":{"turn":1,"reason":{"kind":"interrupted"}}}`
}

func TestInterruptedTurnClosers(t *testing.T) {
	cases := []struct {
		name string
		log  []string
		want []string // JSONL lines; TIME stands for the last event's time
	}{
		{"empty log", nil, nil},
		{"balanced log", baseLog(), nil},
		{"open turn without a step", []string{turnStart1}, []string{turnEndCloser(1)}},
		{"open step", []string{turnStart1, stepStart1}, []string{stepEndCloser(2), turnEndCloser(3)}},
		{"unstarted call", []string{turnStart1, stepStart1, assistantCalling(2, "c1")},
			[]string{notStartedCloser(3, "c1"), stepEndCloser(4), turnEndCloser(5)}},
		{"answered call", []string{turnStart1, stepStart1, assistantCalling(2, "c1"), toolCall(3, "c1"),
			ev(4, "tool/result", toolResult("r", "c1", ""), `"surfaceOp":"append"`)},
			[]string{stepEndCloser(5), turnEndCloser(6)}},
		{"call in an already closed step", []string{turnStart1, stepStart1, assistantCalling(2, "c1"),
			ev(3, "step/end", `{"turn":1,"step":1}`)},
			[]string{turnEndCloser(4)}},
		{"only the open turn's calls", []string{turnStart1, stepStart1, assistantCalling(2, "old"),
			ev(3, "turn/end", `{"turn":1,"reason":{"kind":"completed"}}`), ev(4, "turn/start", `{"turn":1}`),
			ev(5, "step/start", `{"turn":1,"step":1}`), assistantCalling(6, "c1")},
			[]string{notStartedCloser(7, "c1"), stepEndCloser(8), turnEndCloser(9)}},
		{"multiple calls in log order", []string{turnStart1, stepStart1, assistantCalling(2, "c2", "c1"), toolCall(3, "c1")},
			[]string{notStartedCloser(4, "c2"), outcomeUnknownCloser(5, "c1", 3), stepEndCloser(6), turnEndCloser(7)}},
		{"recorded call", []string{turnStart1, stepStart1, assistantCalling(2, "c1"), toolCall(3, "c1")},
			[]string{outcomeUnknownCloser(4, "c1", 3), stepEndCloser(5), turnEndCloser(6)}},
		{"orphan tool/call", []string{turnStart1, stepStart1, toolCall(2, "c9")},
			[]string{stepEndCloser(3), turnEndCloser(4)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			events := lines(t, c.log...)
			closers := InterruptedTurnClosers(events)
			if len(closers) != len(c.want) {
				t.Fatalf("got %d closers, want %d", len(closers), len(c.want))
			}
			if len(c.want) == 0 {
				return
			}
			lastTime := strconv.FormatInt(events[len(events)-1].Time, 10)
			for i, want := range c.want {
				got, err := closers[i].MarshalJSON()
				if err != nil {
					t.Fatal(err)
				}
				if want = strings.ReplaceAll(want, "TIME", lastTime); string(got) != want {
					t.Fatalf("closer %d:\n got %s\nwant %s", i, got, want)
				}
			}
			// DSH constructs the repaired session from events ++ closers:
			// the result must validate.
			if err := ValidateLog(testHeader(), append(events, closers...)); err != nil {
				t.Fatalf("repaired log fails validation: %v", err)
			}
		})
	}
}

func TestInterruptedTurnClosersKeepTurnValueAsLogged(t *testing.T) {
	events := lines(t, `{"type":"turn/start","seq":0,"time":5,"data":{"turn":2.0}}`)
	closers := InterruptedTurnClosers(events)
	if len(closers) != 1 || string(closers[0].Data) != `{"turn":2,"reason":{"kind":"interrupted"}}` {
		t.Fatalf("got %+v", closers)
	}
	if InterruptedTurnClosers(lines(t, `{"type":"turn/start","seq":0,"time":5,"data":{"turn":null}}`)) != nil {
		t.Fatal("a turn/start with a null turn does not open a turn in DSH")
	}
}

func TestForkPrefix(t *testing.T) {
	if ForkPrefix(nil) != nil || ForkPrefix(lines(t, turnStart1, stepStart1)) != nil {
		t.Fatal("a log without turn/end has no fork prefix")
	}
	log := lines(t, append(baseLog(), ev(9, "session/title", `{"title":"t"}`), ev(10, "turn/start", `{"turn":2}`))...)
	p := ForkPrefix(log)
	if len(p) != 9 || p[len(p)-1].Type != TypeTurnEnd {
		t.Fatalf("prefix has %d events ending in %s, want 9 ending in turn/end", len(p), p[len(p)-1].Type)
	}
	if cap(p) != len(p) {
		t.Fatal("prefix must not let an append overwrite the caller's log")
	}
}

func TestSummarize(t *testing.T) {
	if got := Summarize(nil); got != (Summary{LastSeq: -1}) {
		t.Fatalf("empty: %+v", got)
	}
	closed := lines(t, baseLog()...)
	if got := Summarize(closed); got != (Summary{Turns: 1, LastType: TypeTurnEnd, LastSeq: 8}) {
		t.Fatalf("balanced: %+v", got)
	}
	open := lines(t, append(baseLog(), ev(9, "turn/start", `{"turn":2}`), ev(10, "step/start", `{"turn":2,"step":1}`))...)
	if got := Summarize(open); got != (Summary{Turns: 2, OpenTurn: true, LastType: TypeStepStart, LastSeq: 10}) {
		t.Fatalf("open: %+v", got)
	}
}
