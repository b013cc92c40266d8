package subagent

import (
	"reflect"
	"strconv"
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
		// The unit's view of a state holding canonical text is that text,
		// which must be exactly the identity's encoding.
		if enc := string(fast.appendJSON(nil)); enc != v {
			t.Errorf("%s: not canonical: the identity encodes as %s", v, enc)
		}
		if view, err := (identityUnit{}).View([]byte(`{"identity":` + v + `}`)); err != nil || string(view) != v {
			t.Errorf("%s: unit view %s (%v)", v, view, err)
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

// cachedIdentity's direct read of a record in the form dsh writes gives
// exactly what the general path (ViewOf, then IdentityFromView) gives, for
// records it reads directly and for every record it leaves to that path.
func TestCachedIdentityAgreesWithViewOf(t *testing.T) {
	l := &Lister{Units: NewRegistry()}
	ver := func(v int) string { return `{"subagent":{"ver":` + strconv.Itoa(v) + `,"seq":4,"val":` }
	cur := ver(UnitStateVersion)
	records := []string{
		cur + `{"identity":{"mode":"continuable","label":"summarize the doc","seq":3}}}}`,
		cur + `{"identity":{"mode":"one-shot","seq":2}}}}`,
		cur + `{"identity":{"mode":"continuable","label":"tab\there","seq":3}}}}`,
		cur + `{"identity":{"mode":"continuable","label":"caf\u00e9","seq":3}}}}`,
		cur + `{"identity": {"mode":"one-shot","seq":2}}}}`,
		cur + `{"identity":{"mode":"one-shot","seq":2} }}}`,
		cur + `{"identity":null}}}`,
		cur + `{}}}`,
		cur + `{"identity":{"mode":"one-shot","seq":2},"extra":1}}}`,
		ver(UnitStateVersion+1) + `{"identity":{"mode":"one-shot","seq":2}}}}`,
		`{"other":{"ver":1,"seq":4,"val":{}}}`,
		`{"subagent":{"seq":4,"ver":` + strconv.Itoa(UnitStateVersion) + `,"val":{"identity":{"mode":"one-shot","seq":2}}}}`,
		`not json`,
	}
	for _, rec := range records {
		got := l.cachedIdentity([]byte(rec), new(Identity))
		var want *Identity
		if view, err := l.Units.ViewOf([]byte(rec), UnitKey); err == nil {
			want, _ = IdentityFromView(view)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: cachedIdentity %+v, ViewOf and IdentityFromView %+v", rec, got, want)
		}
	}
}
