package jsjson

import "testing"

// Path reads nested members as JavaScript's a.b.c does on JSON.parse's
// result: each step takes the key's last occurrence, and any step that
// is missing or not an object fails the whole path, the last one included.
func TestPathFollowsEveryStep(t *testing.T) {
	raw := []byte(`{"data":{"message":{"role":"old"},"n":1,"message":{"role":"user","text":"hi"}},"type":"x"}`)
	for _, tc := range []struct {
		keys []string
		want string
		ok   bool
	}{
		{[]string{"data", "message", "role"}, `"user"`, true},
		{[]string{"data", "message"}, `{"role":"user","text":"hi"}`, true},
		{[]string{"type"}, `"x"`, true},
		{nil, string(raw), true},
		{[]string{"absent"}, "", false},
		{[]string{"data", "absent"}, "", false},
		{[]string{"data", "message", "absent"}, "", false},
		{[]string{"absent", "message"}, "", false},
		{[]string{"type", "anything"}, "", false},
		{[]string{"data", "n", "x"}, "", false},
	} {
		got, ok := Path(raw, tc.keys...)
		if ok != tc.ok || string(got) != tc.want {
			t.Errorf("Path(%q) = %q, %v; want %q, %v", tc.keys, got, ok, tc.want, tc.ok)
		}
	}
}

// A known key replaces only its exact spelling: a key that is a prefix or
// an extension of a known one keeps its own text.
func TestAppendObjectKnownKeyIsWholeKey(t *testing.T) {
	known := []string{"mode", "version"}
	o, ok := AppendObject(nil, []byte(`{"mod":1,"modes":2,"":3,"version":4}`), known)
	if !ok || len(o) != 4 {
		t.Fatalf("= %v, %v", o, ok)
	}
	for i, want := range []string{"mod", "modes", "", "version"} {
		if o[i].Key != want {
			t.Errorf("member %d key %q, want %q", i, o[i].Key, want)
		}
	}
}

// An empty object appended to nothing is present and empty, as SplitObject's
// is: a caller telling "{}" from "not an object" by nil must not see absent.
func TestAppendObjectEmptyIsPresent(t *testing.T) {
	for _, raw := range []string{`{}`, ` { } `} {
		o, ok := AppendObject(nil, []byte(raw), nil)
		if !ok || o == nil || len(o) != 0 {
			t.Errorf("AppendObject(nil, %q) = %#v, %v; want a present, empty object", raw, o, ok)
		}
	}
}
