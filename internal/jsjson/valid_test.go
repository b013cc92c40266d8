package jsjson

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

// validSeeds are texts at the edges of the grammar, valid and not.
var validSeeds = []string{
	``, ` `, `0`, `-0`, `01`, `-`, `1.`, `.5`, `1.5e`, `1e+`, `1E-7`, `1.0e10`, `-12.50E+003`, `+1`, `0x1`,
	`true`, `tru`, `truex`, `false`, `null`, `nul`, `NaN`, `Infinity`,
	`""`, `"`, `"\"`, `"\\"`, `"\/\b\f\n\r\t"`, `"\u00e9"`, `"\u00G0"`, `"\u12"`, `"\x"`, "\"\x01\"", "\"\x7f\"",
	"\"\xff\xfe\"", "\"\xed\xa0\x80\"", `"\ud800"`, "\"a\tb\"",
	`{}`, `{ }`, `[]`, `[ ]`, `{"a":1}`, `{"a" : [1, {"b":null}] , "c":"d"}`, `{"a":1,}`, `[1,]`, `[,1]`, `{,}`,
	`{"a"}`, `{"a":}`, `{1:2}`, `{"a":1 "b":2}`, `[1 2]`, `[`, `]`, `{`, `}`, `[}`, `{]`, `[[]]`, `[[]`,
	" \t\r\n[1]\n ", "\v1", "\u00a01", `1 2`, `{} {}`, `"a"x`, "[\x00]", `{"a":{"b":{"c":[true,false,null]}}}`,
}

func TestValidAgreesWithEncodingJSON(t *testing.T) {
	check := func(s string) {
		t.Helper()
		if got, want := Valid([]byte(s)), json.Valid([]byte(s)); got != want {
			t.Fatalf("Valid(%q) = %v, encoding/json says %v", s, got, want)
		}
	}
	for _, s := range validSeeds {
		check(s)
	}
	// Nesting: 10,000 levels are valid, 10,001 are not, whatever mixes them.
	for _, depth := range []int{maxJSONDepth - 1, maxJSONDepth, maxJSONDepth + 1} {
		check(strings.Repeat("[", depth) + strings.Repeat("]", depth))
		check(strings.Repeat(`{"a":`, depth) + "1" + strings.Repeat("}", depth))
		check(strings.Repeat(`[{"a":`, depth/2) + strings.Repeat("[", depth%2) + strings.Repeat("]", depth%2) + strings.Repeat("}]", depth/2))
	}
	// Random edits of the seeds, from an alphabet of the bytes that
	// matter to the grammar.
	alphabet := []byte("{}[]:,\"\\/ \t\n\r0123456789-+.eEtrufalsn\x00\x01\x1f\x7f\xc3\xa9\xff")
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200_000 {
		b := []byte(validSeeds[rng.IntN(len(validSeeds))])
		for range 1 + rng.IntN(4) {
			at := 0
			if len(b) > 0 {
				at = rng.IntN(len(b) + 1)
			}
			switch op := rng.IntN(3); {
			case op == 0 || len(b) == 0 || at == len(b):
				b = append(b[:at], append([]byte{alphabet[rng.IntN(len(alphabet))]}, b[at:]...)...)
			case op == 1:
				b = append(b[:at], b[at+1:]...)
			default:
				b[at] = alphabet[rng.IntN(len(alphabet))]
			}
		}
		check(string(b))
	}
}

func FuzzValid(f *testing.F) {
	for _, s := range validSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := Valid(b), json.Valid(b); got != want {
			t.Fatalf("Valid(%q) = %v, encoding/json says %v", b, got, want)
		}
	})
}

func BenchmarkValid(b *testing.B) {
	data := []byte(`{"turn":3,"step":1,"message":{"role":"assistant","content":[{"type":"text","text":"` + strings.Repeat("some words of a reply, ", 40) +
		`"}],"source":{"kind":"model","provider":"deepseek-official","model":"m-big"},"id":"a-1"},"usage":{"inputTokens":1200,"outputTokens":34}}`)
	b.Run("jsjson", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if !Valid(data) {
				b.Fatal("invalid")
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if !json.Valid(data) {
				b.Fatal("invalid")
			}
		}
	})
}
