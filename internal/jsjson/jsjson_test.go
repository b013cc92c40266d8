package jsjson

import "testing"

func TestStringEscapesLikeJavaScript(t *testing.T) {
	cases := map[string]string{
		"plain":                `"plain"`,
		"a\"b\\c":              `"a\"b\\c"`,
		"<tag>&amp;":           `"<tag>&amp;"`,
		"line\nnext\tx":        `"line\nnext\tx"`,
		"\b\f\r":               `"\b\f\r"`,
		"\x01\x1f":             `"\u0001\u001f"`,
		"\u2028\u2029":         "\"\u2028\u2029\"",
		"caf\u00e9 \U0001F600": "\"caf\u00e9 \U0001F600\"",
		"bad\xffbyte":          "\"bad\uFFFDbyte\"",
	}
	for in, want := range cases {
		if got := String(in); got != want {
			t.Errorf("String(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestCompactMatchesStringify(t *testing.T) {
	cases := map[string]string{
		`{ "b": 1, "a": [1.0, 2.50, -0, 1e21, 1e-7, 0.000001] }`: `{"b":1,"a":[1,2.5,0,1e+21,1e-7,0.000001]}`,
		`"\u003c\/x\u2028"`:                   "\"</x\u2028\"",
		`{"z":{"y":null,"x":true,"w":false}}`: `{"z":{"y":null,"x":true,"w":false}}`,
		`123456789012345680000`:               `123456789012345680000`,
	}
	for in, want := range cases {
		got, err := Compact([]byte(in))
		if err != nil {
			t.Fatalf("Compact(%s): %v", in, err)
		}
		if string(got) != want {
			t.Errorf("Compact(%s) = %s, want %s", in, got, want)
		}
	}
	for _, bad := range []string{`{"a":}`, `[1,2`, `1 2`, ``} {
		if _, err := Compact([]byte(bad)); err == nil {
			t.Errorf("Compact(%q) accepted invalid JSON", bad)
		}
	}
}

func TestStringArray(t *testing.T) {
	if got := StringArray([]string{"a", `b"c`, "\n"}); got != `["a","b\"c","\n"]` {
		t.Fatalf("StringArray = %s", got)
	}
	if got := StringArray(nil); got != `[]` {
		t.Fatalf("StringArray(nil) = %s", got)
	}
}

// JavaScript strings may hold lone surrogates; JSON.parse keeps an escaped
// one and JSON.stringify writes it back as the same escape. Compact must
// too, whatever whitespace surrounds it (issue #11, defect 11).
func TestCompactKeepsLoneSurrogates(t *testing.T) {
	for in, want := range map[string]string{
		`{"a":"\ud800"}`:                    `{"a":"\ud800"}`,
		"{ \"a\" : \"\\ud800\" }":           `{"a":"\ud800"}`,
		"[ \"x\\udc00y\" , \"\\uD83D\" ]":   `["x\udc00y","\ud83d"]`,
		"{ \"pair\" : \"\\ud83d\\ude00\" }": `{"pair":"😀"}`,
	} {
		got, err := Compact([]byte(in))
		if err != nil || string(got) != want {
			t.Errorf("Compact(%s) = %s, %v; want %s", in, got, err, want)
		}
	}
}
