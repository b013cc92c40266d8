package session

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/dsh-project/dsh/internal/jsjson"
)

func TestEventDecodeAcceptsJavaScriptIntegers(t *testing.T) {
	cases := map[string]struct{ seq, time int64 }{
		`{"type":"x/y","seq":1.0,"time":1e3,"data":{}}`:                           {1, 1000},
		`{"type":"x/y","seq":9007199254740991,"time":-9007199254740991,"data":0}`: {jsjson.MaxSafeInteger, -jsjson.MaxSafeInteger},
		`{"type":"x/y","seq":2,"time":5,"data":null,"seq":3}`:                     {3, 5}, // JSON.parse keeps the last duplicate
	}
	for in, want := range cases {
		e := line(t, in)
		if e.Seq != want.seq || e.Time != want.time {
			t.Errorf("%s: seq %d time %d, want %d %d", in, e.Seq, e.Time, want.seq, want.time)
		}
	}
}

func TestEventDecodeRejectsWrongKnownKeyTypes(t *testing.T) {
	cases := map[string]string{
		`{"type":"x/y","seq":1.5,"time":1,"data":{}}`:                       `"seq" 1.5 is not a safe integer`,
		`{"type":"x/y","seq":9007199254740992,"time":1,"data":{}}`:          `"seq" 9007199254740992 is not a safe integer`,
		`{"type":"x/y","seq":"1","time":1,"data":{}}`:                       `"seq" "1" is not a safe integer`,
		`{"type":"x/y","seq":1,"time":0.5,"data":{}}`:                       `"time" 0.5 is not a safe integer`,
		`{"type":7,"seq":1,"time":1,"data":{}}`:                             `"type" is not a string`,
		`{"type":"x/y","seq":1,"time":1}`:                                   `lacks "data"`,
		`{"type":"x/y","time":1,"data":{}}`:                                 `lacks "seq"`,
		`{"type":"x/y","seq":1,"time":1,"data":{},"ignorable":false}`:       `"ignorable" is false; it must be exactly true`,
		`{"type":"x/y","seq":1,"time":1,"data":{},"sourceEventSeqs":null}`:  `"sourceEventSeqs" null is not an array`,
		`{"type":"x/y","seq":1,"time":1,"data":{},"sourceEventSeqs":[0.5]}`: `element 0.5 is not a safe integer`,
		`[1,2]`:    "not a JSON jsjson.Object",
		`{"type":`: "not valid JSON",
	}
	for in, want := range cases {
		var e Event
		err := e.UnmarshalJSON([]byte(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want error containing %q", in, err, want)
		}
	}
}

func TestEventDecodeKeepsDataRawAndRecordsUnknownKeys(t *testing.T) {
	in := `{"type":"user/message","seq":0,"time":1,"data":{"b":1,"a":"<&>"},"note":1,"sourceEventSeqs":[],"surfaceOp":"append","ignorable":true,"note":2}`
	e := line(t, in)
	want := Event{
		Type: "user/message", Time: 1, Data: json.RawMessage(`{"b":1,"a":"<&>"}`),
		SourceEventSeqs: []int64{}, HasSourceEventSeqs: true, SurfaceOp: json.RawMessage(`"append"`),
		Ignorable: true, UnknownKeys: []string{"note"},
	}
	if !reflect.DeepEqual(e, want) {
		t.Fatalf("decoded %+v\nwant    %+v", e, want)
	}
	out, err := e.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	const wantOut = `{"type":"user/message","seq":0,"time":1,"data":{"b":1,"a":"<&>"},"sourceEventSeqs":[],"surfaceOp":"append","ignorable":true}`
	if string(out) != wantOut {
		t.Fatalf("encoded %s\nwant    %s", out, wantOut)
	}
}

func TestEventDecodeDoesNotAliasInput(t *testing.T) {
	buf := []byte(`{"type":"x/y","seq":0,"time":1,"data":{"k":"v"}}`)
	var e Event
	if err := json.Unmarshal(buf, &e); err != nil {
		t.Fatal(err)
	}
	for i := range buf {
		buf[i] = ' '
	}
	if string(e.Data) != `{"k":"v"}` {
		t.Fatalf("data changed with the input buffer: %s", e.Data)
	}
}

func TestEventEncode(t *testing.T) {
	cases := []struct {
		name string
		e    Event
		want string
	}{
		{"absent optionals", Event{Type: "turn/start", Seq: 0, Time: -5, Data: []byte(`{"turn":1}`)},
			`{"type":"turn/start","seq":0,"time":-5,"data":{"turn":1}}`},
		{"whitespace in data is compacted the JavaScript way",
			Event{Type: "x/y", Seq: 1, Time: 2, Data: []byte("{ \"a\" : [1.0, \"\u2028\"] }")},
			"{\"type\":\"x/y\",\"seq\":1,\"time\":2,\"data\":{\"a\":[1,\"\u2028\"]}}"},
		{"live order", Event{Type: TypeToolResult, Seq: 7, Time: 1, Data: []byte(`{"message":{"id":"r1"}}`),
			SourceEventSeqs: []int64{5}, HasSourceEventSeqs: true, SurfaceOp: []byte(`"append"`)},
			`{"type":"tool/result","seq":7,"time":1,"data":{"message":{"id":"r1"}},"sourceEventSeqs":[5],"surfaceOp":"append"}`},
		{"repair closer order", Event{Type: TypeToolResult, Seq: 7, Time: 1, Data: []byte(`{"message":{"id":"interrupted-tool-result-c1-7"}}`),
			SourceEventSeqs: []int64{5}, HasSourceEventSeqs: true, SurfaceOp: []byte(`"append"`)},
			`{"type":"tool/result","seq":7,"time":1,"data":{"message":{"id":"interrupted-tool-result-c1-7"}},"surfaceOp":"append","sourceEventSeqs":[5]}`},
		{"a replacement of a closer keeps the live order", Event{Type: TypeToolResult, Seq: 9, Time: 1, Data: []byte(`{"message":{"id":"interrupted-tool-result-c1-7"}}`),
			SourceEventSeqs: []int64{7}, HasSourceEventSeqs: true, SurfaceOp: []byte(`{"op":"replace","start":7,"end":7}`)},
			`{"type":"tool/result","seq":9,"time":1,"data":{"message":{"id":"interrupted-tool-result-c1-7"}},"sourceEventSeqs":[7],"surfaceOp":{"op":"replace","start":7,"end":7}}`},
		{"type escaped like JSON.stringify", Event{Type: "a\"</b>", Data: []byte(`0`)},
			`{"type":"a\"</b>","seq":0,"time":0,"data":0}`},
	}
	for _, c := range cases {
		got, err := c.e.MarshalJSON()
		if err != nil || string(got) != c.want {
			t.Errorf("%s: got %s (%v)\nwant %s", c.name, got, err, c.want)
		}
	}
	for _, bad := range []Event{{Type: "x/y"}, {Type: "x/y", Data: []byte(`{`)}, {Type: "x/y", Data: []byte(`1`), SurfaceOp: []byte(`"`)}} {
		if _, err := bad.MarshalJSON(); err == nil {
			t.Errorf("%+v encoded without error", bad)
		}
	}
}

func TestHeaderMarshalJSONL(t *testing.T) {
	full := Header{Version: 0, ID: "ada8966c", CreatedAt: 1783352137161, Cwd: strp("/w"), ParentSession: strp("96cf59c9"),
		SeedLength: intp(42), Origin: strp(OriginSubagent), DelegationDepth: intp(1), AgentPreset: strp("rev\u2028")}
	const wantFull = "{\"type\":\"session\",\"version\":0,\"id\":\"ada8966c\",\"createdAt\":1783352137161,\"cwd\":\"/w\",\"parentSession\":\"96cf59c9\",\"seedLength\":42,\"origin\":\"subagent\",\"delegationDepth\":1,\"agentPreset\":\"rev\u2028\"}"
	if got := string(full.MarshalJSONL()); got != wantFull {
		t.Errorf("got  %s\nwant %s", got, wantFull)
	}
	// delegationDepth is always written, 0 when absent.
	bare := Header{ID: "x", CreatedAt: 1}
	if got := string(bare.MarshalJSONL()); got != `{"type":"session","version":0,"id":"x","createdAt":1,"delegationDepth":0}` {
		t.Errorf("got %s", got)
	}
	back, err := ParseHeaderJSON(full.MarshalJSONL())
	if err != nil || !reflect.DeepEqual(back, full) {
		t.Errorf("round trip: %+v (%v)", back, err)
	}
}

func TestParseHeaderJSONReadRules(t *testing.T) {
	const ok = `"type":"session","version":0,"id":"s","createdAt":1,"delegationDepth":0`
	cases := []struct {
		line string
		rule string // "" = accepted
		msg  string
	}{
		{`{` + ok + `}`, "", ""},
		{`{` + ok + `,"createdAt":1.0,"extra":{"x":1}}`, "", ""},
		{`{"type":"session","version":42,"id":123}`, RuleFormatVersion, `session "123" uses log format v42, but this harness reads only v0 and v2–v4`},
		{`{"version":99,"id":"s","shape":"anything"}`, RuleFormatVersion, "written by a newer harness"},
		{`{"type":"session","version":-1,"id":"s"}`, RuleFormatVersion, `session "s" uses log format v-1, older than the supported v0`},
		{`{"type":"session","version":7}`, RuleFormatVersion, `session "undefined" uses log format v7`},
		{`42`, RuleHeaderShape, notAHeader},
		{`{"type":"session","version":"0","id":"s","createdAt":1,"delegationDepth":0}`, RuleHeaderShape, "version is not a number"},
		{`{` + ok + `,"type":"sessions"}`, RuleHeaderShape, `type is not "session"`},
		{`{` + ok + `,"id":5}`, RuleHeaderShape, "id is not a string"},
		{`{` + ok + `,"createdAt":1.5}`, RuleHeaderShape, "createdAt"},
		{`{` + ok + `,"createdAt":-1}`, RuleHeaderShape, "createdAt"},
		{`{` + ok + `,"createdAt":-0}`, RuleHeaderShape, "createdAt"},
		{`{` + ok + `,"createdAt":9007199254740992}`, RuleHeaderShape, "createdAt"},
		{`{"type":"session","version":0,"id":"s","createdAt":1}`, RuleHeaderShape, "delegationDepth"},
		{`{` + ok + `,"delegationDepth":"0"}`, RuleHeaderShape, "delegationDepth"},
		{`{` + ok + `,"delegationDepth":0.5}`, RuleHeaderShape, "delegationDepth"},
		{`{` + ok + `,"delegationDepth":-1}`, RuleHeaderShape, "delegationDepth"},
		{`{` + ok + `,"delegationDepth":-0}`, RuleHeaderShape, "delegationDepth"},
		{`{` + ok + `,"origin":"external"}`, RuleHeaderShape, "origin"},
		{`{` + ok + `,"agentPreset":3}`, RuleHeaderShape, "agentPreset"},
		{`{` + ok + `,"sandboxMode":"x"}`, RuleHeaderRetiredFields, "session header uses retired policy baseline fields"},
		{`{` + ok + `,"approvalPolicy":null}`, RuleHeaderRetiredFields, "retired policy baseline fields"},
		{`{` + ok + `,"cwd":null}`, RuleHeaderCwd, "session header cwd must be a string"},
		{`{` + ok + `,"parentSession":1}`, RuleHeaderParentSession, "session header parentSession must be a string"},
		{`{` + ok + `,"seedLength":0.5}`, RuleHeaderSeedLength, "seedLength must be a non-negative safe integer"},
	}
	for _, c := range cases {
		_, err := ParseHeaderJSON([]byte(c.line))
		if c.rule == "" {
			if err != nil {
				t.Errorf("%s: rejected: %v", c.line, err)
			}
			continue
		}
		var ve *ValidationError
		if !errors.As(err, &ve) || ve.Rule != c.rule || ve.Seq != -1 || !strings.Contains(ve.Msg, c.msg) {
			t.Errorf("%s: got %v, want rule %s with %q", c.line, err, c.rule, c.msg)
		}
	}
}

func TestParseHeaderJSONLeavesRestoreChecksToValidateHeader(t *testing.T) {
	h, err := ParseHeaderJSON([]byte(`{"type":"session","version":0,"id":"s","createdAt":1,"cwd":"rel","seedLength":-2,"delegationDepth":0}`))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	if *h.Cwd != "rel" || *h.SeedLength != -2 {
		t.Fatalf("parsed %+v", h)
	}
	var ve *ValidationError
	if err := ValidateHeader(h); !errors.As(err, &ve) || ve.Rule != RuleHeaderCwd {
		t.Fatalf("ValidateHeader: %v, want %s", err, RuleHeaderCwd)
	}
}
