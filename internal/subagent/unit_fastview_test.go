package subagent

import (
	"reflect"
	"testing"
)

// The canonical fast path accepts only views the general decoder reads to
// the same identity, and declines everything it is not sure about.
func TestCanonicalIdentityAgreesWithDecoder(t *testing.T) {
	accepted := []string{
		`{"mode":"continuable","label":"summarize the doc","seq":0}`,
		`{"mode":"one-shot","seq":12}`,
		`{"mode":"one-shot","label":"","seq":9007199254740991}`,
	}
	declined := []string{
		`{"mode":"continuable","seq":1}`,                               // continuable without a label: invalid
		`{"mode":"one-shot","seq":01}`,                                 // not a JSON number
		`{"mode":"one-shot","seq":1.0}`,                                // integral, but not canonical
		`{"mode":"one-shot","seq":-1}`,                                 // negative: invalid
		`{"mode":"one-shot","seq":9007199254740992}`,                   // beyond the safe range: invalid
		`{"mode":"continuable","label":"a\"b","seq":1}`,                // escapes: general path
		`{"mode":"continuable","label":"caf\u00e9","seq":1}`,           // escapes: general path
		"{\"mode\":\"continuable\",\"label\":\"caf\u00e9\",\"seq\":1}", // non-ASCII: general path
		`{"mode":"continuable","label":"x","seq":1,"extra":2}`,         // unknown key: invalid
		`{"seq":1,"mode":"one-shot"}`,                                  // other key order
		`{"mode":"later","seq":1}`,
		`{ "mode":"one-shot","seq":1}`,
	}
	for _, v := range accepted {
		fast, ok := canonicalIdentity([]byte(v))
		if !ok {
			t.Errorf("%s: declined", v)
			continue
		}
		slow, err := decodeIdentityView([]byte(v))
		if err != nil || !reflect.DeepEqual(&fast, slow) {
			t.Errorf("%s: fast %+v, decoder %+v (%v)", v, fast, slow, err)
		}
	}
	for _, v := range declined {
		if id, ok := canonicalIdentity([]byte(v)); ok {
			t.Errorf("%s: accepted as %+v", v, id)
		}
	}
}

func BenchmarkIdentityFromView(b *testing.B) {
	view := []byte(`{"mode":"continuable","label":"summarize the doc","seq":42}`)
	for b.Loop() {
		if id, err := IdentityFromView(view); err != nil || id == nil {
			b.Fatal(err)
		}
	}
}
