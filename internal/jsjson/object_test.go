package jsjson

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// tokenObject reads an object through encoding/json's tokens: the obvious
// implementation, kept as the oracle the splitters must agree with. It
// returns the distinct keys in property order and each key's last value.
func tokenObject(raw []byte) (keys []string, vals map[string]string, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
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
	return PropertyOrder(keys), vals, true
}

// FuzzSplitObject checks the object reader against the token decoder on any
// valid JSON — the same keys in the same property order, the same last value
// text for each, the same first unknown key — and checks that SplitObject
// and ParseObject split valid text into the same members.
func FuzzSplitObject(f *testing.F) {
	for _, seed := range []string{
		`{"version":2,"mode":"one-shot","provider":"spawn"}`,
		` { "a" : [1, {"b": "}"}] , "a":"\"x\\" , "2": null, "1":true, "\u00e9": -1.5e3 } `,
		`{"toolFilter":{"allow":["a","b\"]"],"deny":[]}}`,
		`{}`, `[]`, `"s"`, `{"\ud800":1,"k\u0000":{}}`, "{\"\xff\":1}",
		`{"mode":1,"mode":2,"x":3}`,
	} {
		f.Add([]byte(seed))
	}
	allowed := map[string]bool{"version": true, "mode": true, "a": true}
	known := []string{"version", "mode", "a"}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			SplitObject(raw) // in bounds on anything
			ArrayElements(raw)
			Lookup(raw, "a")
			return
		}
		keys, vals, wantOK := tokenObject(raw)
		obj, ok := AppendObject(nil, raw, known)
		if ok != wantOK {
			t.Fatalf("%q: ok %v, token decoder %v", raw, ok, wantOK)
		}
		parsed, err := ParseObject(raw)
		if (err == nil) != ok {
			t.Fatalf("%q: SplitObject ok %v, ParseObject %v", raw, ok, err)
		}
		if !ok {
			return
		}
		for i := range parsed {
			if parsed[i].Key != obj[i].Key || !bytes.Equal(parsed[i].Value, obj[i].Value) {
				t.Fatalf("%q: member %d is %q=%q, ParseObject %q=%q", raw, i, obj[i].Key, obj[i].Value, parsed[i].Key, parsed[i].Value)
			}
		}
		if len(parsed) != len(obj) {
			t.Fatalf("%q: %d members, ParseObject %d", raw, len(obj), len(parsed))
		}
		for _, m := range obj {
			if got, _ := obj.Get(m.Key); string(got) != vals[m.Key] {
				t.Fatalf("%q: value of %q is %q, token decoder %q", raw, m.Key, got, vals[m.Key])
			}
			if got, ok := Lookup(raw, m.Key); !ok || string(got) != vals[m.Key] {
				t.Fatalf("%q: Lookup(%q) = %q, %v; token decoder %q", raw, m.Key, got, ok, vals[m.Key])
			}
		}
		if _, present := vals["absent"]; !present {
			if _, ok := Lookup(raw, "absent"); ok {
				t.Fatalf("%q: Lookup found an absent key", raw)
			}
		}
		if got := obj.Keys(); !reflect.DeepEqual(got, keys) && len(got)+len(keys) > 0 {
			t.Fatalf("%q: keys %q, token decoder %q", raw, got, keys)
		}
		var wantUnknown string
		for _, k := range keys {
			if !allowed[k] {
				wantUnknown = k
				break
			}
		}
		if got, _ := obj.FirstUnknown(allowed); got != wantUnknown {
			t.Fatalf("%q: first unknown %q, token decoder %q", raw, got, wantUnknown)
		}
	})
}

// A duplicated key reads as its last value at the place of its first, as
// JSON.parse leaves it; integer-like keys enumerate first.
func TestObjectReadsAsJavaScript(t *testing.T) {
	o, ok := SplitObject([]byte(` {"b":1,"a":2,"b":3,"10":4,"2":5} `))
	if !ok {
		t.Fatal("not split")
	}
	if v, _ := o.Get("b"); string(v) != "3" {
		t.Errorf(`Get("b") = %s, want the last value 3`, v)
	}
	if _, ok := o.Get("B"); ok {
		t.Error(`Get("B") found a key of another case`)
	}
	if got, want := o.Keys(), []string{"2", "10", "b", "a"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Keys() = %q, want %q", got, want)
	}
	if !o.HasExactKeys("a", "b", "2", "10") || o.HasExactKeys("a", "b", "2") {
		t.Error("HasExactKeys does not compare the distinct key set")
	}
	if !o.HasOnlyKeys([]string{"a"}, "b", "2", "10") || o.HasOnlyKeys([]string{"a", "c"}, "b", "2", "10") {
		t.Error("HasOnlyKeys does not require every required key and refuse others")
	}
	if k, ok := o.FirstUnknown(map[string]bool{"a": true, "b": true}); !ok || k != "2" {
		t.Errorf("FirstUnknown = %q, %v; want 2, the first in property order", k, ok)
	}
	if _, ok := o.FirstUnknown(map[string]bool{"a": true, "b": true, "2": true, "10": true}); ok {
		t.Error("FirstUnknown found a key that is allowed")
	}
	empty, ok := SplitObject([]byte(`{}`))
	if !ok || empty == nil || len(empty) != 0 {
		t.Errorf("{} = %v, %v; want a present, empty object", empty, ok)
	}
	for _, notObject := range []string{`[]`, `"{}"`, `null`, ``, `{`} {
		if _, ok := SplitObject([]byte(notObject)); ok {
			t.Errorf("%q split as an object", notObject)
		}
	}
}

// A known key is the caller's string, not a copy; an escaped spelling of it
// still decodes to the same key.
func TestAppendObjectKnownKeys(t *testing.T) {
	known := []string{"version", "mode"}
	var buf [4]Member
	o, ok := AppendObject(buf[:0], []byte(`{"version":2,"m\u006fde":"x","other":1}`), known)
	if !ok || len(o) != 3 {
		t.Fatalf("= %v, %v", o, ok)
	}
	if &o[0] != &buf[0] {
		t.Error("members not appended to the caller's array")
	}
	if o[1].Key != "mode" || o[2].Key != "other" {
		t.Errorf("keys %q, %q", o[1].Key, o[2].Key)
	}
	raw := []byte(`{"version":2,"mode":"x"}`)
	if allocs := testing.AllocsPerRun(100, func() {
		AppendObject(buf[:0], raw, known)
	}); allocs != 0 {
		t.Errorf("known keys cost %v allocations, want 0", allocs)
	}
}

// Strings decode as JavaScript holds them: escapes resolved, bytes that are
// not UTF-8 and lone surrogates as U+FFFD; surrounding whitespace is allowed.
func TestStringValue(t *testing.T) {
	for raw, want := range map[string]string{
		`"abc"`:             "abc",
		` "a\"b" `:          `a"b`,
		"\"\xff\"":          "\uFFFD",
		`"\ud800"`:          "\uFFFD",
		`"\u00e9\u0041"`:    "éA",
		`"\ud83d\ude00"`:    "😀",
		`"tab\there"`:       "tab\there",
		"\"plain\xe9x\"":    "plain\uFFFDx",
		`"kept / slash"`:    "kept / slash",
		`"esc\/aped"`:       "esc/aped",
		`"trailing"` + "\n": "trailing",
	} {
		got, ok := StringValue([]byte(raw))
		if !ok || got != want {
			t.Errorf("StringValue(%q) = %q, %v; want %q", raw, got, ok, want)
		}
	}
	for _, raw := range []string{`1`, `null`, `"`, `"\x"`, `["a"]`} {
		if s, ok := StringValue([]byte(raw)); ok {
			t.Errorf("StringValue(%q) = %q, want not a string", raw, s)
		}
	}
}

func TestArrayElements(t *testing.T) {
	elems, ok := ArrayElements([]byte(` [1, "a,b" ,{"c":[2]}, []] `))
	if !ok {
		t.Fatal("not split")
	}
	want := []string{`1`, `"a,b"`, `{"c":[2]}`, `[]`}
	if len(elems) != len(want) {
		t.Fatalf("%q, want %q", elems, want)
	}
	for i := range want {
		if string(elems[i]) != want[i] {
			t.Errorf("element %d = %q, want %q", i, elems[i], want[i])
		}
	}
	if elems, ok := ArrayElements([]byte(`[]`)); !ok || elems == nil || len(elems) != 0 {
		t.Errorf("[] = %q, %v; want a present, empty list", elems, ok)
	}
	for _, notArray := range []string{`{}`, `"[]"`, ``, `[`} {
		if _, ok := ArrayElements([]byte(notArray)); ok {
			t.Errorf("%q split as an array", notArray)
		}
	}
}
