package catalog

import (
	"errors"
	"strings"
	"testing"
)

func label(s string) *string { return &s }

func TestParseFactAcceptsEveryVariant(t *testing.T) {
	for _, tt := range []struct {
		data string
		want Fact
	}{
		{`{"version":0,"childId":"c","childCreatedAt":5,"mode":"one-shot"}`, Fact{0, "c", 5, ModeOneShot, nil}},
		{`{"version":0,"childId":"c","childCreatedAt":5,"mode":"one-shot","label":"l"}`, Fact{0, "c", 5, ModeOneShot, label("l")}},
		{`{"version":0,"childId":"c","childCreatedAt":0,"mode":"continuable","label":""}`, Fact{0, "c", 0, ModeContinuable, label("")}},
		{`{"version":1,"childId":"c","childCreatedAt":5,"mode":"unknown"}`, Fact{1, "c", 5, ModeUnknown, nil}},
		{`{"version":1,"childId":"c","childCreatedAt":5,"mode":"unknown","label":"x"}`, Fact{1, "c", 5, ModeUnknown, label("x")}},
		{`{"version":1,"childId":"c","childCreatedAt":5,"mode":"continuable","label":"x"}`, Fact{1, "c", 5, ModeContinuable, label("x")}},
		{`{"version":2,"childId":"e","childCreatedAt":7,"mode":"external"}`, Fact{2, "e", 7, ModeExternal, nil}},
		{`{"version":2,"childId":"e","childCreatedAt":7,"mode":"external","label":"ext"}`, Fact{2, "e", 7, ModeExternal, label("ext")}},
		// The schema sets no minimum length on childId.
		{`{"version":0,"childId":"","childCreatedAt":1,"mode":"one-shot"}`, Fact{0, "", 1, ModeOneShot, nil}},
		// JSON.parse keeps the last of duplicate keys; 1e3 is the integer 1000.
		{`{"version":9,"version":0,"childId":"c","childCreatedAt":1e3,"mode":"one-shot"}`, Fact{0, "c", 1000, ModeOneShot, nil}},
		{`{"mode":"one-shot","childCreatedAt":9007199254740991,"childId":"\u00e9","version":0}`, Fact{0, "é", 9007199254740991, ModeOneShot, nil}},
		// Ill-formed UTF-8 reads as U+FFFD, as DSH's text decoding makes it.
		{"{\"version\":0,\"childId\":\"a\xffb\",\"childCreatedAt\":1,\"mode\":\"one-shot\"}", Fact{0, "a\uFFFDb", 1, ModeOneShot, nil}},
	} {
		got, err := ParseFact([]byte(tt.data))
		if err != nil {
			t.Errorf("ParseFact(%s): %v", tt.data, err)
			continue
		}
		if !sameFact(got, tt.want) {
			t.Errorf("ParseFact(%s) = %+v, want %+v", tt.data, got, tt.want)
		}
		if _, err := AdmitFact([]byte(tt.data)); err != nil {
			t.Errorf("AdmitFact(%s): %v", tt.data, err)
		}
	}
}

func sameFact(a, b Fact) bool {
	return a.Version == b.Version && a.ChildID == b.ChildID && a.ChildCreatedAt == b.ChildCreatedAt && a.Mode == b.Mode && sameLabel(a.Label, b.Label)
}

func TestParseFactRefuses(t *testing.T) {
	for _, tt := range []struct {
		data    string
		problem Problem
		detail  string
		admit   bool // format admission's catalogFact accepts it
	}{
		// DSH's own asserted invalid combinations (§1.1).
		{`{"version":0,"childId":"c","childCreatedAt":1,"mode":"unknown"}`, ProblemMalformed, `mode "unknown" needs version 1`, false},
		{`{"version":9,"childId":"c","childCreatedAt":1,"mode":"one-shot"}`, ProblemUnsupportedVersion, "version 9 is not one DSH reads", false},
		{`{"version":0,"childId":"c","childCreatedAt":1,"mode":"continuable"}`, ProblemMalformed, `mode "continuable" needs a label`, false},
		{`{"version":0,"childId":"c","childCreatedAt":-1,"mode":"one-shot"}`, ProblemMalformed, "childCreatedAt -1 is not a non-negative safe integer", false},
		{`{"version":1,"childId":"c","childCreatedAt":1,"mode":"one-shot","external":true}`, ProblemMalformed, `unexpected key "external"`, true},
		{`{"version":0,"childId":"c","childCreatedAt":1,"mode":"external"}`, ProblemMalformed, `mode "external" needs version 2`, false},
		{`{"version":1,"childId":"c","childCreatedAt":1,"mode":"external"}`, ProblemMalformed, `mode "external" needs version 2`, false},
		{`{"version":2,"childId":"c","childCreatedAt":1,"mode":"one-shot"}`, ProblemMalformed, `mode "one-shot" needs version 0 or 1`, false},
		{`{"version":2,"childId":"c","childCreatedAt":1,"mode":"continuable","label":"l"}`, ProblemMalformed, `mode "continuable" needs version 0 or 1`, false},
		{`{"version":2,"childId":"c","childCreatedAt":1,"mode":"unknown"}`, ProblemMalformed, `mode "unknown" needs version 1`, false},
		// Strictness: an extension key is refused by the projection only.
		{`{"version":0,"childId":"c","childCreatedAt":1,"mode":"one-shot","plugin":"x"}`, ProblemMalformed, `unexpected key "plugin"`, true},
		// Shapes.
		{`[]`, ProblemMalformed, "not a JSON object", false},
		{`"x"`, ProblemMalformed, "not a JSON object", false},
		{`{"version":0,`, ProblemMalformed, "not a JSON object", false},
		{`{}`, ProblemMalformed, "version is missing", false},
		{`{"version":"0","childId":"c","childCreatedAt":1,"mode":"one-shot"}`, ProblemMalformed, `version "0" is not an integer`, false},
		{`{"version":0.5,"childId":"c","childCreatedAt":1,"mode":"one-shot"}`, ProblemMalformed, "version 0.5 is not an integer", false},
		{`{"version":-1,"childId":"c","childCreatedAt":1,"mode":"one-shot"}`, ProblemMalformed, "version -1 is negative", false},
		{`{"version":3,"childId":"c","childCreatedAt":1,"mode":"one-shot"}`, ProblemUnsupportedVersion, "version 3", false},
		{`{"version":0,"childCreatedAt":1,"mode":"one-shot"}`, ProblemMalformed, "childId is missing", false},
		{`{"version":0,"childId":7,"childCreatedAt":1,"mode":"one-shot"}`, ProblemMalformed, "childId 7 is not a string", false},
		{`{"version":0,"childId":"c","mode":"one-shot"}`, ProblemMalformed, "childCreatedAt is missing", false},
		{`{"version":0,"childId":"c","childCreatedAt":1.5,"mode":"one-shot"}`, ProblemMalformed, "childCreatedAt 1.5", false},
		{`{"version":0,"childId":"c","childCreatedAt":9007199254740992,"mode":"one-shot"}`, ProblemMalformed, "childCreatedAt 9007199254740992", false},
		{`{"version":0,"childId":"c","childCreatedAt":"1","mode":"one-shot"}`, ProblemMalformed, `childCreatedAt "1"`, false},
		{`{"version":0,"childId":"c","childCreatedAt":1}`, ProblemMalformed, "mode is missing", false},
		{`{"version":0,"childId":"c","childCreatedAt":1,"mode":1}`, ProblemMalformed, "mode 1 is not a string", false},
		{`{"version":0,"childId":"c","childCreatedAt":1,"mode":"fork"}`, ProblemMalformed, `mode "fork" is not one-shot`, false},
		{`{"version":0,"childId":"c","childCreatedAt":1,"mode":"one-shot","label":null}`, ProblemMalformed, "label null is not a string", false},
	} {
		_, err := ParseFact([]byte(tt.data))
		var ce *Error
		if !errors.As(err, &ce) {
			t.Errorf("ParseFact(%s) = %v, want a catalog error", tt.data, err)
			continue
		}
		if ce.Problem != tt.problem || !strings.Contains(ce.Detail, tt.detail) || ce.Seq != -1 {
			t.Errorf("ParseFact(%s) = %s %q (seq %d), want %s containing %q", tt.data, ce.Problem, ce.Detail, ce.Seq, tt.problem, tt.detail)
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("ParseFact(%s): message spans lines: %q", tt.data, err)
		}
		_, aerr := AdmitFact([]byte(tt.data))
		if (aerr == nil) != tt.admit {
			t.Errorf("AdmitFact(%s) = %v, want accepted %v", tt.data, aerr, tt.admit)
		}
	}
}

func TestEncodeWritesDSHsBytes(t *testing.T) {
	for _, tt := range []struct {
		fact Fact
		want string
	}{
		{Fact{0, "c1", 1789000000000, ModeContinuable, label("first child")}, `{"version":0,"childId":"c1","childCreatedAt":1789000000000,"mode":"continuable","label":"first child"}`},
		{Fact{0, "c2", 0, ModeOneShot, nil}, `{"version":0,"childId":"c2","childCreatedAt":0,"mode":"one-shot"}`},
		// JSON.stringify's escapes: control characters as \u00XX, "\u2028" and non-ASCII as is.
		{Fact{0, "a\x1b\"é", 3, ModeOneShot, label("\u2028\n")}, "{\"version\":0,\"childId\":\"a\\u001b\\\"é\",\"childCreatedAt\":3,\"mode\":\"one-shot\",\"label\":\"\u2028\\n\"}"},
		{Fact{1, "u", 4, ModeUnknown, nil}, `{"version":1,"childId":"u","childCreatedAt":4,"mode":"unknown"}`},
		{Fact{2, "e", 5, ModeExternal, label("x")}, `{"version":2,"childId":"e","childCreatedAt":5,"mode":"external","label":"x"}`},
	} {
		got, err := Encode(tt.fact)
		if err != nil {
			t.Fatalf("Encode(%+v): %v", tt.fact, err)
		}
		if string(got) != tt.want {
			t.Errorf("Encode(%+v) =\n %s\nwant\n %s", tt.fact, got, tt.want)
		}
		back, err := ParseFact(got)
		if err != nil || !sameFact(back, tt.fact) {
			t.Errorf("ParseFact(Encode(%+v)) = %+v, %v", tt.fact, back, err)
		}
	}
	live, err := LiveFact("c9", 12, ModeOneShot, nil)
	if err != nil || string(live) != `{"version":0,"childId":"c9","childCreatedAt":12,"mode":"one-shot"}` {
		t.Errorf("LiveFact = %s, %v", live, err)
	}
	for _, bad := range []Fact{
		{0, "c", 1, ModeContinuable, nil},
		{0, "c", -1, ModeOneShot, nil},
		{0, "c", 1, ModeUnknown, nil},
		{3, "c", 1, ModeOneShot, nil},
	} {
		if b, err := Encode(bad); err == nil {
			t.Errorf("Encode(%+v) = %s, want a refusal", bad, b)
		}
	}
}

func TestErrorNamesSeqAndChild(t *testing.T) {
	e := &Error{Problem: ProblemDuplicate, Seq: 4, ChildID: "x\x1b", Detail: "dup"}
	if got := e.Error(); got != `subagent catalog fact at seq 4 (child "x\x1b"): dup` {
		t.Errorf("Error() = %q", got)
	}
	e = &Error{Problem: ProblemConflict, Seq: -1, ChildID: "c", Detail: "no"}
	if got := e.Error(); got != `subagent catalog (child "c"): no` {
		t.Errorf("Error() = %q", got)
	}
}

// FuzzParseFact: any payload parses or is refused with a coded error, never
// a panic; what the projection accepts, admission accepts, and it encodes
// back to a payload that parses to the same fact.
func FuzzParseFact(f *testing.F) {
	for _, seed := range []string{
		`{"version":0,"childId":"c","childCreatedAt":5,"mode":"one-shot"}`,
		`{"version":1,"childId":"c","childCreatedAt":5,"mode":"unknown","label":"x"}`,
		`{"version":2,"childId":"e","childCreatedAt":7,"mode":"external"}`,
		`{"version":0,"childId":"c","childCreatedAt":-1,"mode":"continuable"}`,
		`{"version":9e999,"childId":"\ud800","childCreatedAt":1e400,"mode":"one-shot","label":"\u0000"}`,
		`{"version":0,"version":1}`, `null`, ``, `{`, `[{"version":0}]`,
		"{\"version\":1,\"childId\":\"\",\"childCreatedAt\":0,\"mode\":\"unknown\",\"label\":\"\x8d\"}",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fact, err := ParseFact(data)
		if err != nil {
			var ce *Error
			if !errors.As(err, &ce) || ce.Problem == "" || ce.Detail == "" {
				t.Fatalf("ParseFact(%q) = %v: not a coded catalog error", data, err)
			}
			return
		}
		if _, err := AdmitFact(data); err != nil {
			t.Fatalf("projection accepts %q, admission refuses: %v", data, err)
		}
		enc, err := Encode(fact)
		if err != nil {
			t.Fatalf("Encode(ParseFact(%q)): %v", data, err)
		}
		back, err := ParseFact(enc)
		if err != nil || !sameFact(back, fact) {
			t.Fatalf("round trip of %q: %s → %+v, %v", data, enc, back, err)
		}
	})
}
