package session

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/jsjson"
)

func strp(s string) *string { return &s }
func intp(n int64) *int64   { return &n }

func testHeader() Header {
	return Header{Version: 0, ID: "s-1", CreatedAt: 1783352050748, Cwd: strp("/work/project"), DelegationDepth: intp(0)}
}

// line decodes one JSONL event line the way the store would.
func line(t testing.TB, s string) Event {
	t.Helper()
	var e Event
	if err := e.UnmarshalJSON([]byte(s)); err != nil {
		t.Fatalf("decode %s: %v", s, err)
	}
	return e
}

func lines(t testing.TB, ss ...string) []Event {
	t.Helper()
	out := make([]Event, len(ss))
	for i, s := range ss {
		out[i] = line(t, s)
	}
	return out
}

// JSON builders for the event payloads the rule tables vary.
func userMsg(id string) string {
	return fmt.Sprintf(`{"content":[{"type":"text","text":"hi"}],"source":{"kind":"user"},"role":"user","id":%q}`, id)
}

func assistantMsg(id, blocks string) string {
	return fmt.Sprintf(`{"turn":1,"step":1,"message":{"id":%q,"role":"assistant","content":[%s],"source":{"kind":"model","provider":"deepseek","model":"chat"}}}`, id, blocks)
}

func toolResult(id, callID, inner string) string {
	return fmt.Sprintf(`{"turn":1,"step":1,"message":{"id":%q,"role":"user","source":{"kind":"tool","callId":%q},"content":[{"type":"tool-result","toolCallId":%q,"isError":false,"content":[%s]}]}}`, id, callID, callID, inner)
}

func ev(seq int, typ, data string, extra ...string) string {
	s := fmt.Sprintf(`{"type":%q,"seq":%d,"time":%d,"data":%s`, typ, seq, 1000+seq, data)
	for _, x := range extra {
		s += "," + x
	}
	return s + "}"
}

// baseLog is a small valid turn: a prompt, a request header, an assistant
// message calling one tool, the recorded call and its result.
func baseLog() []string {
	return []string{
		ev(0, "turn/start", `{"turn":1}`),
		ev(1, "user/message", userMsg("u1"), `"surfaceOp":"append"`),
		ev(2, "request/header", `{"header":{"config":{"provider":"deepseek","model":"chat"}},"reason":"initial"}`),
		ev(3, "step/start", `{"turn":1,"step":1}`),
		ev(4, "assistant/message", assistantMsg("a1", `{"type":"tool-call","id":"c1","name":"bash","arguments":"{}"}`), `"sourceEventSeqs":[]`, `"surfaceOp":"append"`),
		ev(5, "tool/call", `{"turn":1,"step":1,"callId":"c1","name":"bash","arguments":"{}"}`),
		ev(6, "tool/result", toolResult("r1", "c1", `{"type":"text","text":"out"}`), `"sourceEventSeqs":[5]`, `"surfaceOp":"append"`),
		ev(7, "step/end", `{"turn":1,"step":1}`),
		ev(8, "turn/end", `{"turn":1,"reason":{"kind":"completed"}}`),
	}
}

// withLine returns baseLog with line i replaced (or appended when i is the
// length).
func withLine(i int, s string) []string {
	log := baseLog()
	if i == len(log) {
		return append(log, s)
	}
	log[i] = s
	return log
}

type ruleCase struct {
	name    string
	valid   []Event
	invalid []Event
	rule    string
	seq     int64
	msg     string // substring of the expected message
}

func eventsFrom(t *testing.T, log []string, edit func([]Event)) []Event {
	t.Helper()
	events := lines(t, log...)
	if edit != nil {
		edit(events)
	}
	return events
}

func ruleCases(t *testing.T) []ruleCase {
	base := eventsFrom(t, baseLog(), nil)
	replaceUser := ev(9, "user/message", userMsg("u2"), `"sourceEventSeqs":[1]`, `"surfaceOp":{"op":"replace","start":1,"end":1}`)
	return []ruleCase{
		{
			name: "envelope-keys", rule: RuleEnvelopeKeys, seq: 3, msg: `seed event at index 3 has an invalid event envelope: unknown key "extra"`,
			valid:   base,
			invalid: eventsFrom(t, withLine(3, ev(3, "step/start", `{"turn":1,"step":1}`, `"extra":1`)), nil),
		},
		{
			name: "envelope-seq", rule: RuleEnvelopeSeq, seq: 0, msg: "seq -1 is not a non-negative safe integer",
			valid:   base,
			invalid: eventsFrom(t, baseLog(), func(e []Event) { e[0].Seq = -1 }),
		},
		{
			name: "envelope-time", rule: RuleEnvelopeTime, seq: 2, msg: "time 9007199254740992 is not a safe integer",
			valid:   eventsFrom(t, baseLog(), func(e []Event) { e[2].Time = -jsjson.MaxSafeInteger }),
			invalid: eventsFrom(t, baseLog(), func(e []Event) { e[2].Time = jsjson.MaxSafeInteger + 1 }),
		},
		{
			name: "envelope-data absent", rule: RuleEnvelopeData, seq: 7, msg: "data is absent",
			valid:   eventsFrom(t, withLine(7, ev(7, "step/end", `null`)), nil),
			invalid: eventsFrom(t, baseLog(), func(e []Event) { e[7].Data = nil }),
		},
		{
			name: "envelope-data not JSON", rule: RuleEnvelopeData, seq: 7, msg: "data is not valid JSON",
			valid:   base,
			invalid: eventsFrom(t, baseLog(), func(e []Event) { e[7].Data = []byte(`{"turn":`) }),
		},
		{
			name: "legacy request/header-delta", rule: RuleLegacyVocabulary, seq: 2,
			msg:     `session "s-1" contains unsupported legacy request/header-delta event at seq 2`,
			valid:   base,
			invalid: eventsFrom(t, withLine(2, ev(2, "request/header-delta", `{}`)), nil),
		},
		{
			name: "legacy mode/set", rule: RuleLegacyVocabulary, seq: 2,
			msg:     `session "s-1" contains unsupported legacy mode/set event at seq 2`,
			valid:   base,
			invalid: eventsFrom(t, withLine(2, ev(2, "mode/set", `{}`)), nil),
		},
		{
			name: "legacy fallback reason", rule: RuleLegacyVocabulary, seq: 2,
			msg:     `session "s-1" contains unsupported legacy request/header reason "fallback" at seq 2`,
			valid:   eventsFrom(t, withLine(2, ev(2, "request/header", `{"header":{"config":{"provider":"p","model":"m"}},"reason":"resume"}`)), nil),
			invalid: eventsFrom(t, withLine(2, ev(2, "request/header", `{"header":{"config":{"provider":"p","model":"m"}},"reason":"fallback"}`)), nil),
		},
		{
			name: "unknown-type", rule: RuleUnknownType, seq: 9,
			msg:     `session "s-1" contains event type "future/event" (seq 9) unknown to this harness and not marked ignorable; refusing to interpret the log — it was likely written by a newer harness`,
			valid:   eventsFrom(t, withLine(9, ev(9, "future/event", `{"payload":1}`, `"ignorable":true`)), nil),
			invalid: eventsFrom(t, withLine(9, ev(9, "future/event", `{"payload":1}`)), nil),
		},
		{
			name: "user message without id", rule: RuleUserMessageShape, seq: 1, msg: "session event at seq 1 lacks an identified message",
			valid:   base,
			invalid: eventsFrom(t, withLine(1, ev(1, "user/message", `{"content":[],"source":{"kind":"user"},"role":"user","id":""}`, `"surfaceOp":"append"`)), nil),
		},
		{
			name: "user message role", rule: RuleUserMessageShape, seq: 1, msg: `session event at seq 1 message must have role "user"`,
			valid:   base,
			invalid: eventsFrom(t, withLine(1, ev(1, "user/message", `{"content":[],"source":{"kind":"user"},"role":"assistant","id":"u1"}`, `"surfaceOp":"append"`)), nil),
		},
		{
			name: "user message source", rule: RuleUserMessageShape, seq: 1, msg: "session event at seq 1 message has invalid source",
			valid:   base,
			invalid: eventsFrom(t, withLine(1, ev(1, "user/message", `{"content":[],"source":{"kind":""},"role":"user","id":"u1"}`, `"surfaceOp":"append"`)), nil),
		},
		{
			name: "user message content", rule: RuleUserMessageShape, seq: 1, msg: "session event at seq 1 message has invalid content",
			valid:   base,
			invalid: eventsFrom(t, withLine(1, ev(1, "user/message", `{"content":"hi","source":{"kind":"user"},"role":"user","id":"u1"}`, `"surfaceOp":"append"`)), nil),
		},
		{
			name: "user message key case", rule: RuleUserMessageShape, seq: 1, msg: "lacks an identified message",
			valid:   base,
			invalid: eventsFrom(t, withLine(1, ev(1, "user/message", `{"content":[],"source":{"kind":"user"},"role":"user","ID":"u1"}`, `"surfaceOp":"append"`)), nil),
		},
		{
			name: "assistant message source", rule: RuleAssistantMessageShape, seq: 4, msg: "session event at seq 4 message must have model source",
			valid:   base,
			invalid: eventsFrom(t, withLine(4, ev(4, "assistant/message", `{"turn":1,"step":1,"message":{"id":"a1","role":"assistant","content":[],"source":{"kind":"model","provider":"deepseek"}}}`, `"surfaceOp":"append"`)), nil),
		},
		{
			name: "assistant message without message", rule: RuleAssistantMessageShape, seq: 4, msg: "session event at seq 4 lacks an identified message",
			valid:   base,
			invalid: eventsFrom(t, withLine(4, ev(4, "assistant/message", `{"turn":1,"step":1,"content":[]}`, `"surfaceOp":"append"`)), nil),
		},
		{
			name: "tool result source", rule: RuleToolResultShape, seq: 6, msg: "session event at seq 6 message must have tool source",
			valid:   base,
			invalid: eventsFrom(t, withLine(6, ev(6, "tool/result", `{"turn":1,"step":1,"message":{"id":"r1","role":"user","source":{"kind":"tool"},"content":[{"type":"tool-result","toolCallId":"c1","content":[]}]}}`, `"surfaceOp":"append"`)), nil),
		},
		{
			name: "tool result blocks", rule: RuleToolResultShape, seq: 6, msg: "session event at seq 6 message must contain one tool-result block",
			valid:   base,
			invalid: eventsFrom(t, withLine(6, ev(6, "tool/result", `{"turn":1,"step":1,"message":{"id":"r1","role":"user","source":{"kind":"tool","callId":"c1"},"content":[{"type":"tool-result","toolCallId":"c1","content":[]},{"type":"text","text":"x"}]}}`, `"surfaceOp":"append"`)), nil),
		},
		{
			name: "tool result call ids", rule: RuleToolResultShape, seq: 6, msg: "session event at seq 6 message has mismatched tool call ids",
			valid:   base,
			invalid: eventsFrom(t, withLine(6, ev(6, "tool/result", `{"turn":1,"step":1,"message":{"id":"r1","role":"user","source":{"kind":"tool","callId":"c1"},"content":[{"type":"tool-result","toolCallId":"c2","content":[]}]}}`, `"surfaceOp":"append"`)), nil),
		},
		{
			name: "request header provider/model", rule: RuleRequestHeaderShape, seq: 2, msg: "seed request/header at index 2 lacks provider/model",
			valid:   base,
			invalid: eventsFrom(t, withLine(2, ev(2, "request/header", `{"header":{"config":{"provider":"deepseek","model":""}},"reason":"initial"}`)), nil),
		},
		{
			name: "request header reasoningEffort", rule: RuleRequestHeaderShape, seq: 2, msg: "seed request/header at index 2 has an invalid reasoningEffort",
			valid:   eventsFrom(t, withLine(2, ev(2, "request/header", `{"header":{"config":{"provider":"p","model":"m","reasoningEffort":"high"}},"reason":"initial"}`)), nil),
			invalid: eventsFrom(t, withLine(2, ev(2, "request/header", `{"header":{"config":{"provider":"p","model":"m","reasoningEffort":""}},"reason":"initial"}`)), nil),
		},
		{
			name: "request header adapterDefaults", rule: RuleRequestHeaderShape, seq: 2, msg: "seed request/header at index 2 has invalid adapterDefaults",
			valid:   eventsFrom(t, withLine(2, ev(2, "request/header", `{"header":{"config":{"provider":"p","model":"m","maxTokens":8},"adapterDefaults":{"maxTokens":true}},"reason":"initial"}`)), nil),
			invalid: eventsFrom(t, withLine(2, ev(2, "request/header", `{"header":{"config":{"provider":"p","model":"m"},"adapterDefaults":{"maxTokens":true}},"reason":"initial"}`)), nil),
		},
		{
			name: "request header adapterDefaults marker", rule: RuleRequestHeaderShape, seq: 2, msg: "has invalid adapterDefaults",
			valid:   base,
			invalid: eventsFrom(t, withLine(2, ev(2, "request/header", `{"header":{"config":{"provider":"p","model":"m","maxTokens":8},"adapterDefaults":{"maxTokens":1}},"reason":"initial"}`)), nil),
		},
		{
			name: "seq-contiguous", rule: RuleSeqContiguous, seq: 3, msg: "session event seq 5 is not contiguous; expected 3",
			valid:   base,
			invalid: eventsFrom(t, withLine(3, ev(5, "step/start", `{"turn":1,"step":1}`)), nil),
		},
		{
			name: "surface-op-forbidden", rule: RuleSurfaceOpForbidden, seq: 0,
			msg:     `invalid seed event at index 0: session event "turn/start" is not surface-eligible and cannot carry surfaceOp`,
			valid:   base,
			invalid: eventsFrom(t, withLine(0, ev(0, "turn/start", `{"turn":1}`, `"surfaceOp":"append"`)), nil),
		},
		{
			name: "source-seqs-forbidden", rule: RuleSourceSeqsForbidden, seq: 8,
			msg:     `session event "turn/end" is not surface-eligible and cannot carry sourceEventSeqs`,
			valid:   base,
			invalid: eventsFrom(t, withLine(8, ev(8, "turn/end", `{"turn":1,"reason":{"kind":"completed"}}`, `"sourceEventSeqs":[1]`)), nil),
		},
		{
			name: "surface-op-required", rule: RuleSurfaceOpRequired, seq: 1,
			msg:     `session event "user/message" is surface-eligible and requires a surfaceOp marker`,
			valid:   base,
			invalid: eventsFrom(t, withLine(1, ev(1, "user/message", userMsg("u1"))), nil),
		},
		{
			name: "surface-op-invalid", rule: RuleSurfaceOpInvalid, seq: 1, msg: `session event "user/message" carries an invalid surfaceOp`,
			valid:   base,
			invalid: eventsFrom(t, withLine(1, ev(1, "user/message", userMsg("u1"), `"surfaceOp":"prepend"`)), nil),
		},
		{
			name: "surface-op-invalid replace keys", rule: RuleSurfaceOpInvalid, seq: 9, msg: `carries an invalid replace surfaceOp`,
			valid:   eventsFrom(t, withLine(9, replaceUser), nil),
			invalid: eventsFrom(t, withLine(9, ev(9, "user/message", userMsg("u2"), `"sourceEventSeqs":[1]`, `"surfaceOp":{"op":"replace","start":1,"end":1,"why":"x"}`)), nil),
		},
		{
			name: "surface-op-invalid replace bounds", rule: RuleSurfaceOpInvalid, seq: 9, msg: `carries an invalid replace surfaceOp`,
			valid:   eventsFrom(t, withLine(9, ev(9, "user/message", userMsg("u2"), `"sourceEventSeqs":[1]`, `"surfaceOp":{"end":1.0,"start":1,"op":"replace"}`)), nil),
			invalid: eventsFrom(t, withLine(9, ev(9, "user/message", userMsg("u2"), `"sourceEventSeqs":[1]`, `"surfaceOp":{"op":"replace","start":1,"end":1.5}`)), nil),
		},
		{
			name: "source-seqs-empty", rule: RuleSourceSeqsEmpty, seq: 1, msg: "sourceEventSeqs must not be empty except on assistant/message",
			valid:   base, // assistant/message at seq 4 carries []
			invalid: eventsFrom(t, withLine(1, ev(1, "user/message", userMsg("u1"), `"sourceEventSeqs":[]`, `"surfaceOp":"append"`)), nil),
		},
		{
			name: "source-seqs-range", rule: RuleSourceSeqsRange, seq: 6,
			msg:     `session event "tool/result" sourceEventSeqs must densely contain non-negative safe integers`,
			valid:   base,
			invalid: eventsFrom(t, withLine(6, ev(6, "tool/result", toolResult("r1", "c1", ""), `"sourceEventSeqs":[-1]`, `"surfaceOp":"append"`)), nil),
		},
		{
			name: "source-seqs-duplicate", rule: RuleSourceSeqsDuplicate, seq: 6, msg: "sourceEventSeqs must not contain duplicates",
			valid:   eventsFrom(t, withLine(6, ev(6, "tool/result", toolResult("r1", "c1", ""), `"sourceEventSeqs":[5,4]`, `"surfaceOp":"append"`)), nil),
			invalid: eventsFrom(t, withLine(6, ev(6, "tool/result", toolResult("r1", "c1", ""), `"sourceEventSeqs":[5,5]`, `"surfaceOp":"append"`)), nil),
		},
		{
			name: "source-seqs-not-earlier", rule: RuleSourceSeqsNotEarlier, seq: 6, msg: "sourceEventSeqs must reference earlier events: 6 >= current seq 6",
			valid:   base,
			invalid: eventsFrom(t, withLine(6, ev(6, "tool/result", toolResult("r1", "c1", ""), `"sourceEventSeqs":[6,5]`, `"surfaceOp":"append"`)), nil),
		},
		{
			name: "replace-range start", rule: RuleReplaceRange, seq: 9, msg: "surface replace: start seq 0 not found in surface",
			valid:   eventsFrom(t, withLine(9, replaceUser), nil),
			invalid: eventsFrom(t, withLine(9, ev(9, "user/message", userMsg("u2"), `"sourceEventSeqs":[0,1]`, `"surfaceOp":{"op":"replace","start":0,"end":1}`)), nil),
		},
		{
			name: "replace-range end", rule: RuleReplaceRange, seq: 9, msg: "surface replace: end seq 5 not found in surface",
			valid:   base,
			invalid: eventsFrom(t, withLine(9, ev(9, "user/message", userMsg("u2"), `"sourceEventSeqs":[1,5]`, `"surfaceOp":{"op":"replace","start":1,"end":5}`)), nil),
		},
		{
			name: "replace-range order by position", rule: RuleReplaceRange, seq: 10,
			msg: "surface replace: start seq 4 (index 1) is after end seq 9 (index 0)",
			// After seq 9 replaces node 1 the surface is [9,4,6]: a range may
			// start at a numerically larger seq, but not at a later position.
			valid: eventsFrom(t, append(withLine(9, replaceUser),
				ev(10, "user/message", userMsg("u3"), `"sourceEventSeqs":[9,4]`, `"surfaceOp":{"op":"replace","start":9,"end":4}`)), nil),
			invalid: eventsFrom(t, append(withLine(9, replaceUser),
				ev(10, "user/message", userMsg("u3"), `"sourceEventSeqs":[9,4]`, `"surfaceOp":{"op":"replace","start":4,"end":9}`)), nil),
		},
		{
			name: "replace-coverage", rule: RuleReplaceCoverage, seq: 9,
			msg:     "surface replace: sourceEventSeqs must include every shadowed surface node; missing 4, 6",
			valid:   eventsFrom(t, withLine(9, ev(9, "user/message", userMsg("u2"), `"sourceEventSeqs":[1,4,6,2]`, `"surfaceOp":{"op":"replace","start":1,"end":6}`)), nil),
			invalid: eventsFrom(t, withLine(9, ev(9, "user/message", userMsg("u2"), `"sourceEventSeqs":[1]`, `"surfaceOp":{"op":"replace","start":1,"end":6}`)), nil),
		},
		{
			name: "tool-result-replace-count", rule: RuleToolResultReplaceCount, seq: 9,
			msg:     "tool/result surface replacement must rewrite exactly one current node",
			valid:   base,
			invalid: eventsFrom(t, withLine(9, ev(9, "tool/result", toolResult("r1", "c1", ""), `"sourceEventSeqs":[4,6]`, `"surfaceOp":{"op":"replace","start":4,"end":6}`)), nil),
		},
		{
			name: "tool-result-replace-target", rule: RuleToolResultReplaceKind, seq: 9,
			msg:     "tool/result surface replacement must target a current tool/result",
			valid:   base,
			invalid: eventsFrom(t, withLine(9, ev(9, "tool/result", toolResult("r1", "c1", ""), `"sourceEventSeqs":[4]`, `"surfaceOp":{"op":"replace","start":4,"end":4}`)), nil),
		},
		{
			name: "tool-result-replace-content", rule: RuleToolResultReplaceDiff, seq: 9,
			msg: "tool/result surface replacement may change only content",
			// Only the inner content may change; key order and number
			// spelling are not changes (deep equality over JSON values).
			valid: eventsFrom(t, withLine(9, ev(9, "tool/result",
				`{"step":1.0,"turn":1,"message":{"role":"user","id":"r1","source":{"callId":"c1","kind":"tool"},"content":[{"content":[{"type":"text","text":"[pruned]"}],"isError":false,"toolCallId":"c1","type":"tool-result"}]}}`,
				`"sourceEventSeqs":[6]`, `"surfaceOp":{"op":"replace","start":6,"end":6}`)), nil),
			invalid: eventsFrom(t, withLine(9, ev(9, "tool/result",
				`{"turn":1,"step":1,"message":{"id":"r1","role":"user","source":{"kind":"tool","callId":"c1"},"content":[{"type":"tool-result","toolCallId":"c1","isError":true,"content":[]}]}}`,
				`"sourceEventSeqs":[6]`, `"surfaceOp":{"op":"replace","start":6,"end":6}`)), nil),
		},
		{
			name: "tool-result-replace-content meta drift", rule: RuleToolResultReplaceDiff, seq: 9,
			msg:     "may change only content",
			valid:   base,
			invalid: eventsFrom(t, withLine(9, ev(9, "tool/result", strings.Replace(toolResult("r1", "c1", ""), `"turn":1,`, `"turn":1,"meta":{"pruned":true},`, 1), `"sourceEventSeqs":[6]`, `"surfaceOp":{"op":"replace","start":6,"end":6}`)), nil),
		},
	}
}

func checkRuleError(t *testing.T, err error, c ruleCase) {
	t.Helper()
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("got %v, want a *ValidationError for rule %s", err, c.rule)
	}
	if ve.Rule != c.rule || ve.Seq != c.seq || !strings.Contains(ve.Msg, c.msg) {
		t.Fatalf("got rule %s seq %d msg %q\nwant rule %s seq %d msg containing %q", ve.Rule, ve.Seq, ve.Msg, c.rule, c.seq, c.msg)
	}
	wantClass, wantCode := ErrInvalidLog, dsherr.InvalidLog
	if c.rule == RuleUnknownType || c.rule == RuleFormatVersion {
		wantClass, wantCode = ErrFormatUnsupported, dsherr.UnsupportedFormat
	}
	if !errors.Is(err, wantClass) || dsherr.CodeOf(err) != wantCode {
		t.Errorf("error class: errors.Is(%v) false or code %s, want %s", wantClass, dsherr.CodeOf(err), wantCode)
	}
}

func TestValidateLogRules(t *testing.T) {
	for _, c := range ruleCases(t) {
		t.Run(c.name, func(t *testing.T) {
			if err := ValidateLog(testHeader(), c.valid); err != nil {
				t.Fatalf("valid log rejected: %v", err)
			}
			checkRuleError(t, ValidateLog(testHeader(), c.invalid), c)
		})
	}
}

func TestValidatorAddRejectsWithoutChangingState(t *testing.T) {
	for _, c := range ruleCases(t) {
		t.Run(c.name, func(t *testing.T) {
			v := NewValidator(testHeader())
			for i, e := range c.invalid {
				err := v.Add(e)
				if err == nil {
					continue
				}
				checkRuleError(t, err, c)
				if v.Next() != int64(i) {
					t.Fatalf("Next() = %d after a rejected event at %d", v.Next(), i)
				}
				// The validator still accepts the valid log's event there.
				if i < len(c.valid) && c.valid[i].Seq == int64(i) {
					if err := v.Add(c.valid[i]); err != nil {
						t.Fatalf("valid event %d rejected after a rejection: %v", i, err)
					}
				}
				return
			}
			t.Fatalf("no event of the invalid log was rejected")
		})
	}
}

func TestValidateLogReportsDSHPrecedence(t *testing.T) {
	// A bad message later in the log outranks an unknown type earlier: DSH
	// validates every message before it checks types.
	log := eventsFrom(t, withLine(9, ev(9, "future/event", `{}`)), func(e []Event) {
		e[1].Data = []byte(`{"content":[],"source":{"kind":"user"},"role":"user"}`)
	})
	var ve *ValidationError
	if err := ValidateLog(testHeader(), log); !errors.As(err, &ve) || ve.Rule != RuleUserMessageShape {
		t.Fatalf("got %v, want %s", err, RuleUserMessageShape)
	}
	// A header version refusal outranks everything in the events.
	h := testHeader()
	h.Version = 99
	if err := ValidateLog(h, log); !errors.As(err, &ve) || ve.Rule != RuleFormatVersion {
		t.Fatalf("got %v, want %s", err, RuleFormatVersion)
	}
}

func TestValidateHeaderRules(t *testing.T) {
	cases := []struct {
		name string
		edit func(*Header)
		rule string
		msg  string
	}{
		{"newer version", func(h *Header) { h.Version = 99 }, RuleFormatVersion,
			`session "s-1" uses log format v99, but this harness reads only v0 and v2–v4: the log was written by a newer harness — upgrade the harness to open it`},
		{"older version", func(h *Header) { h.Version = -1 }, RuleFormatVersion,
			`session "s-1" uses log format v-1, older than the supported v0, and this build ships no upgrade path for it`},
		{"empty id", func(h *Header) { h.ID = "" }, RuleHeaderID, "session header id must be a non-empty string"},
		{"negative createdAt", func(h *Header) { h.CreatedAt = -1 }, RuleHeaderCreatedAt, "session header createdAt must be a non-negative safe integer"},
		{"unsafe createdAt", func(h *Header) { h.CreatedAt = jsjson.MaxSafeInteger + 1 }, RuleHeaderCreatedAt, "createdAt must be a non-negative safe integer"},
		{"relative cwd", func(h *Header) { h.Cwd = strp("{{cwd}}") }, RuleHeaderCwd, `session header cwd must be an absolute path, got "{{cwd}}"`},
		{"negative seedLength", func(h *Header) { h.SeedLength = intp(-1) }, RuleHeaderSeedLength, "session header seedLength must be a non-negative safe integer"},
		{"foreign origin", func(h *Header) { h.Origin = strp("external") }, RuleHeaderOrigin, `session header origin must be "subagent"`},
		{"negative depth", func(h *Header) { h.DelegationDepth = intp(-1) }, RuleHeaderDelegationDepth, "session header delegationDepth must be a non-negative safe integer"},
	}
	if err := ValidateHeader(testHeader()); err != nil {
		t.Fatalf("valid header rejected: %v", err)
	}
	seeded := testHeader()
	seeded.SeedLength, seeded.Origin, seeded.ParentSession = intp(0), strp(OriginSubagent), strp("p")
	if err := ValidateHeader(seeded); err != nil {
		t.Fatalf("valid seeded subagent header rejected: %v", err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := testHeader()
			c.edit(&h)
			checkRuleError(t, ValidateHeader(h), ruleCase{rule: c.rule, seq: -1, msg: c.msg})
		})
	}
}

func TestKnownTypesIsDSHsGeneratedList(t *testing.T) {
	if len(knownTypes) != 48 {
		t.Fatalf("%d known types, DSH 0.1.0-rc.8 lists 48", len(knownTypes))
	}
	for _, legacy := range []string{"steering/message", "request/header-delta", "mode/set", "text-chunks"} {
		if knownTypes[legacy] {
			t.Errorf("%s must not be a known type", legacy)
		}
	}
}
