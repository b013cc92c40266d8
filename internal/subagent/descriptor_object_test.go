package subagent

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/dsh-project/dsh/internal/jsjson"
)

// tokenObject is decodeObject through encoding/json's tokens: the obvious
// implementation, kept as the oracle the hand-written walk must agree with.
func tokenObject(raw []byte) (keys []string, vals map[string]string, ok bool) {
	if kindOf(raw) != kindObject {
		return nil, nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil {
		return nil, nil, false
	}
	vals = map[string]string{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, false
		}
		key := tok.(string)
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil, nil, false
		}
		if _, seen := vals[key]; !seen {
			keys = append(keys, key)
		}
		vals[key] = string(val)
	}
	return jsjson.PropertyOrder(keys), vals, true
}

// FuzzDecodeObject checks decodeObject against the token decoder on any
// valid JSON: the same keys in the same property order, the same value
// text for each, and the same first unknown key.
func FuzzDecodeObject(f *testing.F) {
	for _, seed := range []string{
		`{"version":2,"mode":"one-shot","provider":"spawn"}`,
		` { "a" : [1, {"b": "}"}] , "a":"\"x\\" , "2": null, "1":true, "\u00e9": -1.5e3 } `,
		`{"toolFilter":{"allow":["a","b\"]"],"deny":[]}}`,
		`{}`, `[]`, `"s"`, `{"\ud800":1,"k\u0000":{}}`, "{\"\xff\":1}",
	} {
		f.Add([]byte(seed))
	}
	allowed := map[string]bool{"version": true, "mode": true, "a": true}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return // decodeObject's precondition
		}
		keys, vals, wantOK := tokenObject(raw)
		obj, ok := decodeObject(raw, nil)
		if ok != wantOK {
			t.Fatalf("%q: ok %v, token decoder %v", raw, ok, wantOK)
		}
		if !ok {
			return
		}
		var gotKeys []string
		for _, m := range obj.members {
			gotKeys = append(gotKeys, m.key)
			if got, _ := obj.get(m.key); string(got) != vals[m.key] {
				t.Fatalf("%q: value of %q is %q, token decoder %q", raw, m.key, got, vals[m.key])
			}
		}
		if !reflect.DeepEqual(jsjson.PropertyOrder(gotKeys), keys) {
			t.Fatalf("%q: keys %q, token decoder %q", raw, gotKeys, keys)
		}
		var wantUnknown string
		for _, k := range keys {
			if !allowed[k] {
				wantUnknown = k
				break
			}
		}
		if got, _ := obj.firstUnknown(allowed); got != wantUnknown {
			t.Fatalf("%q: first unknown %q, token decoder %q", raw, got, wantUnknown)
		}
	})
}
