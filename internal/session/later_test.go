package session

import (
	"fmt"
	"testing"
)

func laterHeader(v int64, seeded *int64) Header {
	return Header{Version: v, ID: "c-1", CreatedAt: 5, Cwd: strp("/w"), ParentSession: strp("p"),
		SeedLength: seeded, Origin: strp(OriginSubagent), DelegationDepth: intp(1)}
}

func toolRoleResult(id, callID, content string) string {
	return fmt.Sprintf(`{"turn":1,"step":1,"message":{"role":"tool","source":{"kind":"tool","callId":%q},"toolCallId":%q,"content":[%s],"isError":false,"id":%q}}`, callID, callID, content, id)
}

func systemMsg(id string) string {
	return fmt.Sprintf(`{"turn":1,"step":1,"message":{"role":"system","content":[{"type":"text","text":"sys"}],"source":{"kind":"system-prompt"},"id":%q}}`, id)
}

// Each later format's own rules: what it adds, renames and drops against
// format 0.
func TestLaterFormatValidation(t *testing.T) {
	call := `{"turn":1,"step":1,"callId":"k","name":"n","arguments":"{}"}`
	text := func(s string) string { return `{"type":"text","text":"` + s + `"}` }
	cases := []struct {
		name    string
		version int64
		seeded  *int64
		log     []string
		rule    string // "" = valid
	}{
		{"V4 tool-role result", 4, nil, []string{
			ev(0, "tool/call", call),
			ev(1, "tool/result", toolRoleResult("m1", "k", text("out")), `"sourceEventSeqs":[0]`, `"surfaceOp":"append"`),
		}, ""},
		{"V4 refuses a user-role tool result", 4, nil, []string{
			ev(0, "tool/call", call),
			ev(1, "tool/result", toolResult("m1", "k", text("out")), `"surfaceOp":"append"`),
		}, RuleToolResultShape},
		{"V4 tool-role result with mismatched ids", 4, nil, []string{
			ev(0, "tool/result", `{"turn":1,"step":1,"message":{"role":"tool","source":{"kind":"tool","callId":"k"},"toolCallId":"other","content":[],"isError":false,"id":"m"}}`, `"surfaceOp":"append"`),
		}, RuleToolResultShape},
		{"V4 tool-role result without isError", 4, nil, []string{
			ev(0, "tool/result", `{"turn":1,"step":1,"message":{"role":"tool","source":{"kind":"tool","callId":"k"},"toolCallId":"k","content":[],"id":"m"}}`, `"surfaceOp":"append"`),
		}, RuleToolResultShape},
		{"V2 keeps format 0's tool result", 2, nil, []string{
			ev(0, "tool/result", toolResult("m1", "k", text("out")), `"surfaceOp":"append"`),
		}, ""},
		{"V4 replaces a tool result's content (startSeq/endSeq)", 4, nil, []string{
			ev(0, "tool/result", toolRoleResult("m1", "k", text("long")), `"surfaceOp":"append"`),
			ev(1, "tool/result", toolRoleResult("m1", "k", text("short")), `"sourceEventSeqs":[0]`, `"surfaceOp":{"op":"replace","startSeq":0,"endSeq":0}`),
		}, ""},
		{"V4 replace may change only content", 4, nil, []string{
			ev(0, "tool/result", toolRoleResult("m1", "k", text("long")), `"surfaceOp":"append"`),
			ev(1, "tool/result", toolRoleResult("m2", "k", text("short")), `"sourceEventSeqs":[0]`, `"surfaceOp":{"op":"replace","startSeq":0,"endSeq":0}`),
		}, RuleToolResultReplaceDiff},
		{"V3 replace range over two messages", 3, nil, []string{
			ev(0, "user/message", userMsg("u1"), `"surfaceOp":"append"`),
			ev(1, "user/message", userMsg("u2"), `"surfaceOp":"append"`),
			ev(2, "user/message", userMsg("u3"), `"sourceEventSeqs":[0,1]`, `"surfaceOp":{"op":"replace","startSeq":0,"endSeq":1}`),
		}, ""},
		{"V3 refuses format 0's replace keys", 3, nil, []string{
			ev(0, "user/message", userMsg("u1"), `"surfaceOp":"append"`),
			ev(1, "user/message", userMsg("u2"), `"sourceEventSeqs":[0]`, `"surfaceOp":{"op":"replace","start":0,"end":0}`),
		}, RuleSurfaceOpInvalid},
		{"V2 keeps format 0's replace keys", 2, nil, []string{
			ev(0, "user/message", userMsg("u1"), `"surfaceOp":"append"`),
			ev(1, "user/message", userMsg("u2"), `"sourceEventSeqs":[0]`, `"surfaceOp":{"op":"replace","start":0,"end":0}`),
		}, ""},
		{"V3 replace range end before start", 3, nil, []string{
			ev(0, "user/message", userMsg("u1"), `"surfaceOp":"append"`),
			ev(1, "user/message", userMsg("u2"), `"surfaceOp":"append"`),
			ev(2, "user/message", userMsg("u3"), `"sourceEventSeqs":[0,1]`, `"surfaceOp":{"op":"replace","startSeq":1,"endSeq":0}`),
		}, RuleReplaceRange},
		{"V3 system message on the surface", 3, nil, []string{
			ev(0, "system/message", systemMsg("s1"), `"surfaceOp":"append"`),
		}, ""},
		{"V3 system message needs surfaceOp", 3, nil, []string{
			ev(0, "system/message", systemMsg("s1")),
		}, RuleSurfaceOpRequired},
		{"V3 system message with the wrong role", 3, nil, []string{
			ev(0, "system/message", `{"turn":1,"step":1,"message":{"role":"user","content":[],"source":{"kind":"system-prompt"},"id":"s"}}`, `"surfaceOp":"append"`),
		}, RuleSystemMessageShape},
		{"V2 has no system message", 2, nil, []string{
			ev(0, "system/message", systemMsg("s1"), `"surfaceOp":"append"`),
		}, RuleUnknownType},
		{"assistant/chunk is gone from V2 on", 2, nil, []string{
			ev(0, "assistant/chunk", `{}`),
		}, RuleUnknownType},
		{"research-only developer/message is refused", 4, nil, []string{
			ev(0, "developer/message", `{}`),
		}, RuleUnknownType},
		{"catalog facts are known", 4, nil, []string{
			ev(0, "subagent/catalog", `{"version":0,"childId":"x","childCreatedAt":1,"mode":"continuable","label":"l"}`),
		}, ""},
		{"unseeded with a tagged marker", 4, nil, []string{
			ev(0, "session/end-seed", `{"inherited":true}`),
		}, RuleLineageMarker},
		{"seeded: marker at the cut", 4, intp(1), []string{
			ev(0, "turn/start", `{"turn":1}`),
			ev(1, "session/end-seed", `{"inherited":true}`),
		}, ""},
		{"seeded: cut without its marker", 4, intp(1), []string{
			ev(0, "turn/start", `{"turn":1}`),
			ev(1, "session/end-seed", `{}`),
		}, RuleLineageMarker},
		{"seeded: a tagged marker after the cut", 4, intp(0), []string{
			ev(0, "session/end-seed", `{"inherited":true}`),
			ev(1, "session/end-seed", `{"inherited":true}`),
		}, RuleLineageMarker},
		{"seeded: log ends before the cut", 4, intp(2), []string{
			ev(0, "turn/start", `{"turn":1}`),
		}, RuleLineageMarker},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := ValidateLog(laterHeader(c.version, c.seeded), lines(t, c.log...))
			if c.rule == "" {
				if err != nil {
					t.Fatalf("valid log refused: %v", err)
				}
				return
			}
			ve, ok := err.(*ValidationError)
			if !ok || ve.Rule != c.rule {
				t.Fatalf("error %v, want rule %s", err, c.rule)
			}
		})
	}
}

// A later format 5 and a format 1 are refused as formats, not as damage.
func TestLaterFormatBounds(t *testing.T) {
	for _, v := range []int64{1, 5} {
		err := ValidateHeader(laterHeader(v, nil))
		ve, ok := err.(*ValidationError)
		if !ok || !ve.IsFormatRefusal() {
			t.Errorf("version %d: %v, want a format refusal", v, err)
		}
	}
	for _, v := range []int64{0, 2, 3, 4} {
		if err := ValidateHeader(laterHeader(v, nil)); err != nil {
			t.Errorf("version %d: %v", v, err)
		}
	}
}

// A later header is written with isSeeded in DSH's key order.
func TestLaterHeaderMarshal(t *testing.T) {
	got := string(laterHeader(4, intp(16)).MarshalJSONL())
	want := `{"type":"session","version":4,"id":"c-1","createdAt":5,"cwd":"/w","parentSession":"p","isSeeded":true,"origin":"subagent","delegationDepth":1}`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}
