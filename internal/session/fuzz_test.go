package session

import (
	"bytes"
	"reflect"
	"testing"
)

// FuzzEventLine pins that bad data is normal input: any line either fails
// to decode with an error, or decodes to an event that re-encodes, decodes
// back to the same event, and runs through validation, repair and legacy
// conversion without a panic.
func FuzzEventLine(f *testing.F) {
	for _, l := range baseLog() {
		f.Add([]byte(l))
	}
	f.Add([]byte(`{"type":"steering/message","seq":0,"time":1,"data":{"turn":1,"content":[],"source":{"kind":"user"}},"surfaceOp":"append"}`))
	f.Add([]byte(`{"type":"tool/result","seq":0,"time":1,"data":{"turn":1,"step":1,"callId":"c","content":[],"isError":false},"surfaceOp":{"op":"replace","start":0,"end":0}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		var e Event
		if err := e.UnmarshalJSON(line); err != nil {
			return
		}
		out, err := e.MarshalJSON()
		if err != nil {
			t.Fatalf("decoded event does not encode: %v", err)
		}
		var back Event
		if err := back.UnmarshalJSON(out); err != nil {
			t.Fatalf("re-encoded event does not decode: %v\n%s", err, out)
		}
		e.UnknownKeys = nil
		if !reflect.DeepEqual(normalizeRaw(t, e), normalizeRaw(t, back)) {
			t.Fatalf("round trip changed the event:\n%+v\n%+v", e, back)
		}
		_ = NewValidator(testHeader()).Add(e)
		_ = InterruptedTurnClosers([]Event{line0(t), e})
		_, _ = NormalizeLegacy("s", []Event{e})
	})
}

func line0(t *testing.T) Event {
	return line(t, `{"type":"turn/start","seq":0,"time":0,"data":{"turn":1}}`)
}

// normalizeRaw compacts raw members so whitespace differences do not count.
func normalizeRaw(t *testing.T, e Event) Event {
	t.Helper()
	var err error
	if e.Data, err = compactJSON(e.Data); err != nil {
		t.Fatal(err)
	}
	if e.SurfaceOp != nil {
		if e.SurfaceOp, err = compactJSON(e.SurfaceOp); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// FuzzHeaderLine: a header line either fails with a *ValidationError or
// parses to a header whose JSONL line parses back to the same header.
func FuzzHeaderLine(f *testing.F) {
	f.Add([]byte(`{"type":"session","version":0,"id":"s","createdAt":1,"cwd":"/w","parentSession":"p","seedLength":3,"origin":"subagent","delegationDepth":1,"agentPreset":"a"}`))
	f.Add([]byte(`{"type":"session","version":42,"id":[1,null,"x"]}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		h, err := ParseHeaderJSON(line)
		if err != nil {
			if _, ok := err.(*ValidationError); !ok {
				t.Fatalf("error %T %v is not a *ValidationError", err, err)
			}
			return
		}
		out := h.MarshalJSONL()
		back, err := ParseHeaderJSON(out)
		if err != nil || !reflect.DeepEqual(h, back) {
			t.Fatalf("header round trip: %+v -> %s -> %+v (%v)", h, out, back, err)
		}
		if !bytes.HasPrefix(out, []byte(`{"type":"session","version":0,`)) {
			t.Fatalf("unexpected line %s", out)
		}
	})
}
