package projcache

import (
	"reflect"
	"testing"
)

// The fast path for canonical one-unit records returns what the general
// decoder returns, and declines every other shape.
func TestCanonicalSingleRowAgreesWithDecoder(t *testing.T) {
	accepted := []string{
		`{"subagent":{"ver":2,"seq":5,"val":{"identity":{"mode":"one-shot","seq":3}}}}`,
		`{"subagent":{"ver":2,"seq":-1,"val":{}}}`,
		`{"k":{"ver":0,"seq":0,"val":null}}`,
	}
	declined := []string{
		`{"a":{"ver":1,"seq":0,"val":{}},"b":{"ver":1,"seq":0,"val":{}}}`, // two rows
		`{"subagent":{"ver":2,"seq":0,"val":{},"ver":3}}`,                 // repeated field
		`{"subagent":{"ver":2,"seq":0,"vAl":{}}}`,                         // wrong case
		`{"subagent":{"ver":02,"seq":0,"val":{}}}`,
		`{"subagent":{"ver":-1,"seq":0,"val":{}}}`,
		`{"subagent":{"ver":2,"seq":-2,"val":{}}}`,
		`{"sub\u0061gent":{"ver":2,"seq":0,"val":{}}}`,
		`{"subagent":{"ver":2,"seq":0,"val":{}} }`,
		`{"subagent":{"seq":0,"ver":2,"val":{}}}`,
		`{"subagent":{"ver":2,"seq":0,"val":{"x":}}}`,
	}
	for _, text := range accepted {
		fast, ok := canonicalSingleRow([]byte(text))
		if !ok {
			t.Errorf("%s: declined", text)
			continue
		}
		slow, err := decodeRowsGeneral([]byte(text))
		if err != nil || !reflect.DeepEqual(fast, slow) {
			t.Errorf("%s: fast %v, decoder %v (%v)", text, fast, slow, err)
		}
	}
	for _, text := range declined {
		if cp, ok := canonicalSingleRow([]byte(text)); ok {
			t.Errorf("%s: accepted as %v", text, cp)
		}
	}
}
