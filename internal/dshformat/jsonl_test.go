package dshformat

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const testHeaderLine = `{"type":"session","version":0,"id":"s","createdAt":1,"cwd":"/w","delegationDepth":0}`

func turnStart(seq int) string {
	return fmt.Sprintf(`{"type":"turn/start","seq":%d,"time":5,"data":{"turn":1}}`, seq)
}

func turnEnd(seq int) string {
	return fmt.Sprintf(`{"type":"turn/end","seq":%d,"time":5,"data":{"turn":1,"reason":{"kind":"completed"}}}`, seq)
}

func title(seq int) string {
	return fmt.Sprintf(`{"type":"session/title","seq":%d,"time":5,"data":{"title":"t"}}`, seq)
}

func textRow(seq0, n int) string {
	texts := strings.TrimSuffix(strings.Repeat(`"x",`, n), ",")
	dt := strings.TrimSuffix(strings.Repeat("1,", n-1), ",")
	return fmt.Sprintf(`{"type":"text-chunks","seq0":%d,"time0":9,"data":{"turn":1,"step":1,"index":0,"dt":[%s],"texts":[%s]}}`, seq0, dt, texts)
}

// plainLog joins a header and lines, each terminated by "\n"; tail is
// appended as is.
func plainLog(lines []string, tail string) []byte {
	var b bytes.Buffer
	b.WriteString(testHeaderLine + "\n")
	for _, l := range lines {
		b.WriteString(l + "\n")
	}
	b.WriteString(tail)
	return b.Bytes()
}

func readPlain(t *testing.T, content []byte) (*Session, error) {
	t.Helper()
	path := writeFile(t, t.TempDir(), "s/session.jsonl", content)
	return readJSONLFile(context.Background(), path, false)
}

// DSH's scanner rules (storage-formats §2.5): damage is a torn tail unless
// a later line holds a turn/end; packed rows are atomic.
func TestJSONLScannerTornVersusCommitted(t *testing.T) {
	bomb := strings.Repeat("[", 100000)
	for _, c := range []struct {
		name    string
		lines   []string
		tail    string
		events  int
		torn    string // substring of Torn.Reason; "" = no torn tail
		err     string // substring of the error; "" = no error
		errLine int64
	}{
		{name: "clean", lines: []string{turnStart(0), turnEnd(1)}, events: 2},
		{name: "header only", events: 0},
		{name: "unterminated fragment", lines: []string{turnStart(0), turnEnd(1)}, tail: `{"type":"assistant/chunk","seq":8,"ti`, events: 2, torn: "unterminated final record"},
		{name: "unparsable tail", lines: []string{turnStart(0), turnEnd(1), "garbage", title(3)}, events: 2, torn: "unparsable committed event at line 3"},
		{name: "unparsable committed", lines: []string{turnStart(0), "garbage", turnEnd(2)}, err: "unparsable committed event at line 2", errLine: 2},
		{name: "blank line", lines: []string{turnStart(0), ""}, events: 1, torn: "unparsable committed event at line 2"},
		{name: "null line", lines: []string{turnStart(0), "null"}, events: 1, torn: "unparsable committed event at line 2"},
		{name: "array line", lines: []string{turnStart(0), "[1]"}, events: 1, torn: "unparsable"},
		{name: "seq gap tail", lines: []string{turnStart(0), title(5)}, events: 1, torn: "seq gap in committed region at line 2 (expected 1, got 5)"},
		{name: "seq gap on a turn/end", lines: []string{turnStart(0), turnEnd(5)}, err: "seq gap in committed region at line 2 (expected 1, got 5)", errLine: 2},
		{name: "seq gap before a turn/end", lines: []string{turnStart(0), title(5), turnEnd(2)}, err: "line 3 holds a later turn/end", errLine: 2},
		{name: "missing seq", lines: []string{turnStart(0), `{"type":"x","time":1,"data":{}}`}, events: 1, torn: "got undefined"},
		{name: "string seq", lines: []string{turnStart(0), `{"type":"x","seq":"1","time":1,"data":{}}`}, events: 1, torn: "got 1)"},
		{name: "row with leading gap dropped whole", lines: []string{turnStart(0), textRow(2, 3)}, events: 1, torn: "expected 1, got 2"},
		{name: "row advances by its run", lines: []string{turnStart(0), textRow(1, 4), turnEnd(5)}, events: 6},
		{name: "one-member row", lines: []string{textRow(0, 1)}, events: 1},
		{name: "malformed row committed", lines: []string{turnStart(0), strings.Replace(textRow(1, 3), `"dt":[1,1]`, `"dt":[1]`, 1), turnEnd(1)}, err: "unparsable committed event at line 2", errLine: 2},
		{name: "nesting bomb tail", lines: []string{turnStart(0), bomb}, events: 1, torn: "unparsable"},
		{name: "nesting bomb committed", lines: []string{turnStart(0), `{"type":"x","seq":1,"time":1,"data":` + bomb, turnEnd(1)}, err: "unparsable committed event at line 2", errLine: 2},
		{name: "fractional time", lines: []string{turnStart(0), `{"type":"x","seq":1,"time":1.5,"data":{}}`}, err: `"time" is not a safe integer`, errLine: 2},
		{name: "ignorable false", lines: []string{`{"type":"x","seq":0,"time":1,"data":{},"ignorable":false}`}, err: "not true", errLine: 1},
		{name: "no data", lines: []string{`{"type":"x","seq":0,"time":1}`}, err: `has no "data"`, errLine: 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			content := plainLog(c.lines, c.tail)
			s, err := readPlain(t, content)
			if c.err != "" {
				ce := asCorrupt(t, err)
				if !strings.Contains(err.Error(), c.err) || ce.Line != c.errLine || ce.Offset < int64(len(testHeaderLine)+1) {
					t.Fatalf("error %v (line %d, offset %d); want %q at line %d", err, ce.Line, ce.Offset, c.err, c.errLine)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(s.Events) != c.events {
				t.Fatalf("%d events, want %d", len(s.Events), c.events)
			}
			for i, e := range s.Events {
				if e.Seq != int64(i) {
					t.Fatalf("event %d has seq %d", i, e.Seq)
				}
			}
			if c.torn == "" {
				if s.Torn != nil {
					t.Fatalf("unexpected torn tail %+v", s.Torn)
				}
				return
			}
			if s.Torn == nil || !strings.Contains(s.Torn.Reason, c.torn) {
				t.Fatalf("torn %+v, want reason containing %q", s.Torn, c.torn)
			}
			if s.Torn.FromSeq != int64(c.events) || !bytes.Equal(content[s.Torn.Marker:], s.Torn.Raw) || len(s.Torn.Raw) == 0 {
				t.Fatalf("torn marker %d / from %d / raw %q inconsistent", s.Torn.Marker, s.Torn.FromSeq, s.Torn.Raw)
			}
			// In these cases every accepted line holds one event.
			if committed := plainLog(c.lines[:c.events], ""); s.Torn.Marker != int64(len(committed)) {
				t.Fatalf("torn marker %d, want %d", s.Torn.Marker, len(committed))
			}
		})
	}
}

// Stored text is read as JSON.parse + JSON.stringify would see it: invalid
// UTF-8 becomes U+FFFD (Node decodes JSONL leniently), non-canonical JSON
// is normalised, lone surrogates survive, 1.0 is the integer 1, unknown
// envelope keys are recorded.
func TestJSONLEventValues(t *testing.T) {
	lines := []string{
		`{"type":"x","seq":0,"time":1,"data":{"s":"a` + "\xff\xe2\x82" + `b"}}`,
		`{ "type" : "x", "seq" : 1.0, "time" : 1e3, "data" : { "a" : "\u0041\/\n\u001f", "b" : 1.50, "c": [ 1 , 2 ] } }`,
		`{"type":"x","seq":2,"time":-4,"data":{"a":"\ud800","b":"\uD83D\uDE00"},"extra":1,"surfaceOp":{"op":"replace","start":5,"end":5}}`,
	}
	s, err := readPlain(t, plainLog(lines, ""))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`{"type":"x","seq":0,"time":1,"data":{"s":"a` + "\uFFFD\uFFFD" + `b"}}`,
		`{"type":"x","seq":1,"time":1000,"data":{"a":"A/\n\u001f","b":1.5,"c":[1,2]}}`,
		`{"type":"x","seq":2,"time":-4,"data":{"a":"\ud800","b":"😀"},"surfaceOp":{"op":"replace","start":5,"end":5}}`,
	}
	for i, w := range want {
		got, err := s.Events[i].MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != w {
			t.Fatalf("event %d:\n got %s\nwant %s", i, got, w)
		}
	}
	if len(s.Events[2].UnknownKeys) != 1 || s.Events[2].UnknownKeys[0] != "extra" {
		t.Fatalf("unknown keys %v", s.Events[2].UnknownKeys)
	}
}

// Header rules (§2.2) and later formats: what lists, what is refused and
// how, what is a problem.
func TestJSONLHeadersAndRefusals(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	body := turnStart(0) + "\n"
	files := map[string]string{
		"p/ok/session.jsonl":        testHeaderLine + "\n" + body,
		"p/nodepth/session.jsonl":   `{"type":"session","version":0,"id":"nodepth","createdAt":2}` + "\n",
		"p/seeded/session.jsonl":    `{"type":"session","version":0,"id":"seeded","createdAt":2,"parentSession":"s","seedLength":0,"origin":"subagent","delegationDepth":1}` + "\n",
		"p/newer/session.jsonl":     `{"type":"session","version":42,"id":"newer","createdAt":3,"delegationDepth":0}` + "\n" + body,
		"p/older/session.jsonl":     `{"type":"session","version":-1,"id":"older","createdAt":3,"delegationDepth":0}` + "\n",
		"p/future/session.jsonl":    `{"version":7,"id":123,"isSeeded":true}` + "\n",
		"p/scalar/session.jsonl":    "42\n",
		"p/retired/session.jsonl":   `{"type":"session","version":0,"id":"retired","createdAt":1,"delegationDepth":0,"sandboxMode":"x"}` + "\n",
		"p/negzero/session.jsonl":   `{"type":"session","version":0,"id":"negzero","createdAt":-0,"delegationDepth":0}` + "\n",
		"p/frac/session.jsonl":      `{"type":"session","version":0,"id":"frac","createdAt":1.5,"delegationDepth":0}` + "\n",
		"p/strdepth/session.jsonl":  `{"type":"session","version":0,"id":"strdepth","createdAt":1,"delegationDepth":"1"}` + "\n",
		"p/preset/session.jsonl":    `{"type":"session","version":0,"id":"preset","createdAt":1,"delegationDepth":0,"agentPreset":5}` + "\n",
		"p/v2/session.v2.jsonl":     `{"type":"session","version":2,"id":"v2","createdAt":1,"isSeeded":true,"delegationDepth":0}` + "\n",
		"p/v5/session.v5.jsonl":     `{"type":"session","version":5,"id":"v5","createdAt":1,"isSeeded":false,"delegationDepth":0}` + "\n",
		"p/v1/session.v1.jsonl":     `{"type":"session","version":1,"id":"v1","createdAt":1,"delegationDepth":0}` + "\n",
		"p/v03/session.v03.jsonl":   `{"type":"session","version":3,"id":"v03","createdAt":1,"isSeeded":false,"delegationDepth":0}` + "\n",
		"p/long/session.jsonl":      `{"type":"session","version":0,"id":"long","createdAt":1,"delegationDepth":0,"pad":"` + strings.Repeat("p", 9000) + `"}` + "\n",
		"p/dup1/session.jsonl":      `{"type":"session","version":0,"id":"dup","createdAt":1,"delegationDepth":0}` + "\n",
		"q/dup2/session.jsonl":      `{"type":"session","version":0,"id":"dup","createdAt":1,"delegationDepth":0}` + "\n",
		"p/partial/session.jsonl":   `{"type":"session","version":0,"id":"partial"`,
		"p/notes.txt":               "not a session",
		"p/ok/session.jsonl.tmpxyz": "ignored",
	}
	for rel, content := range files {
		writeFile(t, dir, rel, []byte(content))
	}
	src := openJSONL(t, dir)
	hs, _ := src.Headers(ctx)
	var ids []string
	for _, h := range hs {
		ids = append(ids, h.ID)
	}
	// Later formats are listed; a version dsh does not read (v1, v5) is
	// listed too and refused by Read; a non-canonical name is no log.
	if got := strings.Join(ids, ","); got != "long,newer,nodepth,older,s,seeded,v1,v2,v5" {
		t.Fatalf("headers %s", got)
	}
	problems := map[string]string{}
	for _, p := range src.Problems() {
		rel, _ := filepath.Rel(dir, p.Path)
		problems[filepath.Dir(rel)] = p.Err.Error()
	}
	for dirName, want := range map[string]string{
		"p/future":   `session "123": unsupported DSH session format version 7`,
		"p/scalar":   "first line is not a session header",
		"p/retired":  "retired policy baseline fields",
		"p/negzero":  `"createdAt" is not a non-negative safe integer`,
		"p/frac":     `"createdAt" is not a non-negative safe integer`,
		"p/strdepth": `"delegationDepth" is not a non-negative safe integer`,
		"p/preset":   `"agentPreset" is not a string`,
		"p/dup1":     "session id appears in 2 files",
		"q/dup2":     "session id appears in 2 files",
		"p/partial":  "no complete header line",
	} {
		if !strings.Contains(problems[dirName], want) {
			t.Errorf("%s: problem %q, want %q", dirName, problems[dirName], want)
		}
	}
	if len(problems) != 10 {
		t.Errorf("problems: %v", problems)
	}
	if _, err := src.Read(ctx, "newer"); asRefusal(t, err).Version != "42" {
		t.Fatalf("newer: %v", err)
	}
	if _, err := src.Read(ctx, "older"); asRefusal(t, err).Version != "-1" {
		t.Fatalf("older: %v", err)
	}
	// A seeded v2 header without events reads; its missing tagged marker
	// is for validation to report.
	if s, err := src.Read(ctx, "v2"); err != nil || s.Header.Version != 2 || !s.Header.IsSeeded() || s.Header.InheritedCut() != 0 {
		t.Fatalf("v2: %+v %v", s, err)
	}
	if _, err := src.Read(ctx, "v5"); asRefusal(t, err).Version != "5" || !strings.Contains(err.Error(), "session.v5.jsonl") {
		t.Fatalf("v5: %v", err)
	}
	if _, err := src.Read(ctx, "v1"); asRefusal(t, err).Version != "1" {
		t.Fatalf("v1: %v", err)
	}
	if _, err := src.Read(ctx, "dup"); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("dup: %v", err)
	}
	if _, err := src.Read(ctx, "absent"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("absent: %v", err)
	}
	s, err := src.Read(ctx, "nodepth")
	if err != nil || s.Header.DelegationDepth != nil {
		t.Fatalf("nodepth: %+v %v", s, err)
	}
	// Later format-0 writers mark a seeded child with an empty inherited
	// prefix by seedLength 0: seeded, cut 0.
	if s, err := src.Read(ctx, "seeded"); err != nil || !s.Header.IsSeeded() || s.Header.InheritedCut() != 0 {
		t.Fatalf("seeded: %+v %v", s, err)
	}
	if s, err := src.Read(ctx, "s"); err != nil || len(s.Events) != 1 || *s.Header.Cwd != "/w" {
		t.Fatalf("s: %+v %v", s, err)
	}
}

// A single file can be opened directly; anything but a JSONL file cannot.
func TestOpenJSONLSingleFile(t *testing.T) {
	ctx := context.Background()
	path := writeFile(t, t.TempDir(), "loose.jsonl", plainLog([]string{turnStart(0)}, ""))
	s := readAll(t, openJSONL(t, path))
	if len(s) != 1 || len(s["s"].Events) != 1 {
		t.Fatalf("read %+v", s)
	}
	other := writeFile(t, t.TempDir(), "x.json", []byte("{}"))
	if _, err := OpenJSONL(ctx, other); err == nil {
		t.Fatal("opened a .json file")
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := openJSONL(t, path).Read(cancelled, "s"); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled read: %v", err)
	}
}

// A corpus reached through a symbolic link is searched like any other.
func TestOpenJSONLThroughSymlink(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "real/--w--/s/session.jsonl", plainLog([]string{turnStart(0)}, ""))
	link := filepath.Join(dir, "link")
	if err := os.Symlink(filepath.Join(dir, "real"), link); err != nil {
		t.Skipf("symlinks unavailable: %v", err)
	}
	if s := readAll(t, openJSONL(t, link)); len(s) != 1 {
		t.Fatalf("read %d sessions through the link", len(s))
	}
}

// A small row that would expand into gigabytes (every member repeats the
// call id) is refused as too large, not read and not taken for a torn tail.
func TestJSONLRowExpansionBomb(t *testing.T) {
	n := 20000
	row := fmt.Sprintf(`{"type":"tool-call-chunks","seq0":0,"time0":1,"data":{"turn":1,"step":1,"index":0,"dt":[%s],"id":"%s","args":[%s]}}`,
		strings.TrimSuffix(strings.Repeat("0,", n-1), ","), strings.Repeat("i", 100000), strings.TrimSuffix(strings.Repeat(`"",`, n), ","))
	_, err := readPlain(t, plainLog([]string{row}, ""))
	if ce := asCorrupt(t, err); !errors.Is(err, errTooLarge) || ce.Line != 1 {
		t.Fatalf("error %v", err)
	}
	// The same budget applies to SQLite rows.
	d := decodeRow(physicalRow{seq: 0, typ: "text-chunks", data: `{"turn":1,"step":1,"index":0,"dt":[0,0],"texts":["a","b","c"]}`,
		ignorable: sql.NullInt64{Valid: true}}, 100)
	if !errors.Is(d.err, errTooLarge) {
		t.Fatalf("SQLite row over budget: %v", d.err)
	}
}
