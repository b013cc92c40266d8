package session

import (
	"errors"
	"testing"
)

func TestNormalizeLegacyConversions(t *testing.T) {
	cases := []struct {
		name     string
		in       string
		wantType string
		wantData string
	}{
		{"turn/start trigger dropped",
			ev(3, "turn/start", `{"turn":2.0,"trigger":{"kind":"user"}}`), "turn/start", `{"turn":2}`},
		{"current turn/start untouched",
			ev(3, "turn/start", `{"turn":2}`), "turn/start", `{"turn":2}`},
		{"aborted without reason",
			ev(3, "turn/end", `{"turn":1,"reason":{"kind":"aborted"}}`), "turn/end", `{"turn":1,"reason":{"kind":"aborted","reason":{"kind":"legacy"}}}`},
		{"current aborted untouched",
			ev(3, "turn/end", `{"turn":1,"reason":{"kind":"aborted","reason":{"kind":"user"}}}`), "turn/end", `{"turn":1,"reason":{"kind":"aborted","reason":{"kind":"user"}}}`},
		{"disposed",
			ev(3, "turn/end", `{"reason":{"kind":"disposed"},"turn":1}`), "turn/end", `{"reason":{"kind":"aborted","reason":{"kind":"disposed"}},"turn":1}`},
		{"error with detailed failure",
			ev(3, "turn/end", `{"turn":1,"reason":{"kind":"error","step":2,"failure":{"message":"m","code":"RATE","status":429,"providerRetryAfterMs":1000,"requestId":"r"}}}`),
			"turn/end", `{"turn":1,"reason":{"kind":"error","error":{"message":"m","code":"RATE","status":429,"providerRetryAfterMs":1000,"requestId":"r"}}}`},
		{"error with message and code",
			ev(3, "turn/end", `{"turn":1,"reason":{"kind":"error","step":0,"message":"m","code":"X"}}`), "turn/end", `{"turn":1,"reason":{"kind":"error","error":{"message":"m","code":"X"}}}`},
		{"error without code",
			ev(3, "turn/end", `{"turn":1,"reason":{"kind":"error","step":0,"message":"m"}}`), "turn/end", `{"turn":1,"reason":{"kind":"error","error":{"message":"m","code":"UNKNOWN"}}}`},
		{"extension reason passes through",
			ev(3, "turn/end", `{"turn":1,"reason":{"kind":"plugin-stop","why":1}}`), "turn/end", `{"turn":1,"reason":{"kind":"plugin-stop","why":1}}`},
		{"wrapped steering",
			ev(3, "steering/message", `{"turn":1,"message":{"content":[],"source":{"kind":"user"},"role":"user","id":"m1"}}`, `"surfaceOp":"append"`),
			"user/message", `{"content":[],"source":{"kind":"user"},"role":"user","id":"m1"}`},
		{"bare steering",
			ev(3, "steering/message", `{"turn":1,"content":[{"type":"text","text":"x"}],"source":{"kind":"user"}}`, `"surfaceOp":"append"`),
			"user/message", `{"content":[{"type":"text","text":"x"}],"source":{"kind":"user"},"id":"legacy-message:s-1:3","role":"user"}`},
		{"pre-identity user message",
			ev(3, "user/message", `{"content":[],"source":{"kind":"user"}}`, `"surfaceOp":"append"`),
			"user/message", `{"content":[],"source":{"kind":"user"},"id":"legacy-message:s-1:3","role":"user"}`},
		{"pre-identity assistant message",
			ev(3, "assistant/message", `{"turn":1,"step":1,"content":[],"provenance":{"provider":"p","kind":"x","model":"m"},"usage":{}}`, `"surfaceOp":"append"`),
			"assistant/message", `{"turn":1,"step":1,"usage":{},"message":{"id":"legacy-message:s-1:3","role":"assistant","content":[],"source":{"provider":"p","kind":"model","model":"m"}}}`},
		{"pre-identity tool result",
			ev(3, "tool/result", `{"turn":1,"step":1,"callId":"c1","content":[],"isError":false}`, `"surfaceOp":"append"`),
			"tool/result", `{"turn":1,"step":1,"message":{"id":"legacy-message:s-1:3","role":"user","content":[{"type":"tool-result","toolCallId":"c1","content":[],"isError":false}],"source":{"kind":"tool","callId":"c1"}}}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := lines(t, c.in)
			out, err := NormalizeLegacy("s-1", in)
			if err != nil {
				t.Fatal(err)
			}
			if out[0].Type != c.wantType || string(out[0].Data) != c.wantData {
				t.Fatalf("got %s %s\nwant %s %s", out[0].Type, out[0].Data, c.wantType, c.wantData)
			}
			if out[0].Seq != in[0].Seq || string(out[0].SurfaceOp) != string(in[0].SurfaceOp) {
				t.Fatalf("envelope changed: %+v", out[0])
			}
		})
	}
}

func TestNormalizeLegacyLeavesCurrentLogsAlone(t *testing.T) {
	in := lines(t, baseLog()...)
	out, err := NormalizeLegacy("s-1", in)
	if err != nil {
		t.Fatal(err)
	}
	if &out[0] != &in[0] {
		t.Fatal("a current log was copied")
	}
}

func TestNormalizeLegacyReplacementInheritsTargetID(t *testing.T) {
	in := lines(t,
		ev(0, "turn/start", `{"turn":1,"trigger":{"kind":"user"}}`),
		ev(1, "tool/result", `{"turn":1,"step":1,"callId":"c1","content":[{"type":"text","text":"long"}],"isError":false}`, `"surfaceOp":"append"`),
		ev(2, "compaction/prune", `{"shadowedRange":{"start":1,"end":1},"shadowedSeqs":[1],"shadowedTokenCount":9}`),
		ev(3, "tool/result", `{"turn":1,"step":1,"callId":"c1","content":[],"isError":false}`, `"sourceEventSeqs":[1]`, `"surfaceOp":{"op":"replace","start":1,"end":1}`),
		ev(4, "turn/end", `{"turn":1,"reason":{"kind":"completed"}}`),
	)
	out, err := NormalizeLegacy("s-1", in)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := eventMessageID(out[3])
	if id != "legacy-message:s-1:1" {
		t.Fatalf("replacement id %q, want the target's legacy id", id)
	}
	if err := ValidateLog(testHeader(), out); err != nil {
		t.Fatalf("normalized legacy log fails validation: %v", err)
	}
	if err := ValidateLog(testHeader(), in); err == nil {
		t.Fatal("the unnormalized pre-identity log validated")
	}
}

func TestNormalizeLegacyRejectsMalformedOldRecords(t *testing.T) {
	cases := map[string]string{
		"turn/start trigger without kind": ev(0, "turn/start", `{"turn":1,"trigger":{}}`),
		"turn/start trigger extra key":    ev(0, "turn/start", `{"turn":1,"trigger":{"kind":"user"},"x":1}`),
		"turn/start turn 0":               ev(0, "turn/start", `{"turn":0,"trigger":{"kind":"user"}}`),
		"steering extra key":              ev(0, "steering/message", `{"turn":1,"content":[],"source":{"kind":"user"},"extra":true}`, `"surfaceOp":"append"`),
		"steering data null":              ev(0, "steering/message", `null`, `"surfaceOp":"append"`),
		"turn/end completed extra":        ev(0, "turn/end", `{"turn":1,"reason":{"kind":"completed","extra":true}}`),
		"turn/end reason null":            ev(0, "turn/end", `{"turn":1,"reason":null}`),
		"turn/end with step":              ev(0, "turn/end", `{"turn":1,"step":1,"reason":{"kind":"completed"}}`),
		"turn/end aborted extra":          ev(0, "turn/end", `{"turn":1,"reason":{"kind":"aborted","extra":true}}`),
		"turn/end error negative step":    ev(0, "turn/end", `{"turn":1,"reason":{"kind":"error","step":-1,"message":"m"}}`),
		"turn/end error numeric code":     ev(0, "turn/end", `{"turn":1,"reason":{"kind":"error","step":1,"message":"m","code":5}}`),
	}
	for name, l := range cases {
		t.Run(name, func(t *testing.T) {
			e := line(t, l)
			_, err := NormalizeLegacy("s-1", []Event{e})
			var ve *ValidationError
			if !errors.As(err, &ve) || ve.Rule != RuleLegacyShape || ve.Seq != 0 {
				t.Fatalf("got %v, want %s", err, RuleLegacyShape)
			}
			want := `session "s-1" contains malformed pre-react-loop ` + e.Type + ` at seq 0`
			if ve.Msg != want {
				t.Fatalf("message %q, want %q", ve.Msg, want)
			}
		})
	}
}
