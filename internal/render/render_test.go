package render

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestEscape(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"plain ASCII unchanged", "child-1 [ready]", "child-1 [ready]"},
		{"non-ASCII text unchanged", "résumé 日本語 🙂", "résumé 日本語 🙂"},
		{"backslash kept", `C:\dir`, `C:\dir`},
		{"newline tab carriage return", "a\nb\tc\rd", `a\nb\tc\rd`},
		{"ESC sequence", "\x1b[31mred\x1b[0m", `\x1b[31mred\x1b[0m`},
		{"NUL and BEL", "\x00\x07", `\x00\x07`},
		{"DEL", "a\x7fb", `a\x7fb`},
		{"C1 CSI as a rune", "a\u009bb", `a\u009bb`},
		{"C1 NEL", "\u0085", `\u0085`},
		{"bidi override", "abc\u202edcba", `abc\u202edcba`},
		{"bidi isolate", "\u2066x\u2069", `\u2066x\u2069`},
		{"invalid UTF-8 byte", "a\x9bb", `a\x9bb`},
		{"truncated UTF-8", "\xe6\x97", `\xe6\x97`},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Escape(tt.in); got != tt.want {
				t.Errorf("Escape(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// Whatever the input, escaped text holds no byte a terminal would act on.
func FuzzEscapeLeavesNoControls(f *testing.F) {
	f.Add("\x1b]0;title\x07")
	f.Add("a\u009b\xff\u202e")
	f.Fuzz(func(t *testing.T, s string) {
		out := Escape(s)
		if !utf8.ValidString(out) {
			t.Fatalf("Escape(%q) = %q: not valid UTF-8", s, out)
		}
		for i, r := range out {
			if r < 0x20 || r == 0x7f || isC1(r) || isBidiControl(r) {
				t.Fatalf("Escape(%q) = %q: raw %U at byte %d", s, out, r, i)
			}
		}
	})
}

func TestParseFormat(t *testing.T) {
	if f, err := ParseFormat("json", Table, JSON); err != nil || f != JSON {
		t.Fatalf("ParseFormat(json) = %q, %v", f, err)
	}
	_, err := ParseFormat("jsonl", Table, JSON)
	if err == nil || !strings.Contains(err.Error(), `"jsonl"`) || !strings.Contains(err.Error(), "table, json") {
		t.Fatalf("ParseFormat(jsonl) error = %v, want it to name the value and the allowed formats", err)
	}
}

type item struct {
	ID    string `json:"id"`
	Label string `json:"label,omitempty"`
	N     int    `json:"n"`
}

var itemCols = []Column[item]{
	{Header: "ID", Value: func(i item) string { return i.ID }},
	{Header: "LABEL", Value: func(i item) string { return i.Label }},
}

func printList(t *testing.T, opts Options, items ...item) string {
	t.Helper()
	var buf bytes.Buffer
	l := NewList(New(&buf, opts), itemCols)
	for _, it := range items {
		if err := l.Add(it); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func TestListFormats(t *testing.T) {
	items := []item{{ID: "a", Label: "x\x1b[2Jy", N: 1}, {ID: "bbbbbb", N: 2}}
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{"json array, compact, field order", Options{Format: JSON},
			`[{"id":"a","label":"x\u001b[2Jy","n":1},{"id":"bbbbbb","n":2}]` + "\n"},
		{"jsonl one per line", Options{Format: JSONL},
			`{"id":"a","label":"x\u001b[2Jy","n":1}` + "\n" + `{"id":"bbbbbb","n":2}` + "\n"},
		{"table off a terminal is TSV without header", Options{Format: Table},
			"a\tx\\x1b[2Jy\nbbbbbb\t\n"},
		{"tsv on a terminal stays TSV", Options{Format: TSV, TTY: true},
			"a\tx\\x1b[2Jy\nbbbbbb\t\n"},
		{"aligned table on a terminal", Options{Format: Table, TTY: true},
			"ID      LABEL\na       x\\x1b[2Jy\nbbbbbb\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := printList(t, tt.opts, items...); got != tt.want {
				t.Errorf("got\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

func TestEmptyList(t *testing.T) {
	for _, f := range []Format{Table, TSV, JSONL} {
		if got := printList(t, Options{Format: f, TTY: true}); got != "" {
			t.Errorf("%s: empty list printed %q, want nothing", f, got)
		}
	}
	if got := printList(t, Options{Format: JSON}); got != "[]\n" {
		t.Errorf("json: empty list printed %q, want []", got)
	}
}

func TestTabInCellCannotShiftColumns(t *testing.T) {
	got := printList(t, Options{Format: TSV}, item{ID: "a\tb", Label: "c"})
	if got != "a\\tb\tc\n" {
		t.Errorf("got %q", got)
	}
}

func TestColorOnlyWhenAllowedOnTerminal(t *testing.T) {
	rows := []item{{ID: "a"}}
	if got := printList(t, Options{Format: Table, TTY: true, Color: true}, rows...); !strings.Contains(got, "\x1b[1m") {
		t.Errorf("colour allowed on a terminal: header not bold in %q", got)
	}
	for _, opts := range []Options{
		{Format: Table, TTY: true, Color: false},
		{Format: Table, TTY: false, Color: true},
	} {
		if got := printList(t, opts, rows...); strings.Contains(got, "\x1b") {
			t.Errorf("%+v: output has an escape sequence: %q", opts, got)
		}
	}
}

func TestAlignedTableHasNoTrailingPadding(t *testing.T) {
	for _, color := range []bool{false, true} {
		got := printList(t, Options{Format: Table, TTY: true, Color: color}, item{ID: "a", Label: "long label"}, item{ID: "bbbbbb"})
		for line := range strings.Lines(got) {
			line = strings.TrimSuffix(line, "\n")
			if strings.HasSuffix(strings.TrimSuffix(line, "\x1b[0m"), " ") {
				t.Errorf("colour %v: line %q ends in padding", color, line)
			}
			if color && strings.Count(line, "\x1b[1m") > strings.Count(line, "\x1b[0m") {
				t.Errorf("line %q leaves bold switched on", line)
			}
		}
	}
}

func TestRecord(t *testing.T) {
	v := struct {
		ID  string `json:"id"`
		Cwd string `json:"cwd"`
	}{"s1", "/a\nb"}
	fields := []Field{{"id", "s1"}, {"cwd", "/a\nb"}}
	tests := []struct {
		opts Options
		want string
	}{
		{Options{Format: JSON}, `{"id":"s1","cwd":"/a\nb"}` + "\n"},
		{Options{Format: JSONL}, `{"id":"s1","cwd":"/a\nb"}` + "\n"},
		{Options{Format: Table}, "id\ts1\ncwd\t/a\\nb\n"},
		{Options{Format: Table, TTY: true}, "id   s1\ncwd  /a\\nb\n"},
	}
	for _, tt := range tests {
		var buf bytes.Buffer
		if err := New(&buf, tt.opts).Record(v, fields); err != nil {
			t.Fatal(err)
		}
		if buf.String() != tt.want {
			t.Errorf("%+v: got %q, want %q", tt.opts, buf.String(), tt.want)
		}
	}
}

// DSH events carry their own JSON bytes; the printer must hand them on
// unchanged (no HTML escaping, no re-encoding of U+2028).
func TestJSONKeepsMarshalerBytes(t *testing.T) {
	raw := json.RawMessage(`{"z":1,"a":"<b>&\u2028"}`)
	var buf bytes.Buffer
	if err := New(&buf, Options{Format: JSONL}).JSON(raw); err != nil {
		t.Fatal(err)
	}
	if want := string(raw) + "\n"; buf.String() != want {
		t.Errorf("got %q, want %q", buf.String(), want)
	}
}

// A single value is escaped for a terminal and passed unchanged into a
// pipe, where a script captures it (an id with a bidi control included).
func TestLine(t *testing.T) {
	for _, c := range []struct {
		tty  bool
		want string
	}{{true, "id\\x1b[H\\u202e\n"}, {false, "id\x1b[H\u202e\n"}} {
		var buf bytes.Buffer
		if err := New(&buf, Options{TTY: c.tty}).Line("id\x1b[H\u202e"); err != nil {
			t.Fatal(err)
		}
		if buf.String() != c.want {
			t.Errorf("tty %v: got %q, want %q", c.tty, buf.String(), c.want)
		}
	}
}
