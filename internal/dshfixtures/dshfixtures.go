// Package dshfixtures is how dsh's tests read the real DSH data in
// ../shared/fixtures: found in place beside the repository (never copied),
// with the test skipped and a clear message when it is absent. It also holds
// the oracle corpora's expected.json shape and the comparisons several
// packages' tests make against DSH's own bytes.
package dshfixtures

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/dsh-project/dsh/internal/corpus"
	"github.com/dsh-project/dsh/internal/session"
)

// Dir returns the path of rel under the shared fixtures, skipping t when the
// fixtures are not there.
func Dir(t testing.TB, rel string) string {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		NoteSkipped(t.Name())
		t.Skipf("DSH fixtures not available: %v", err)
	}
	dir := filepath.Join(root, "..", "shared", "fixtures", rel)
	if _, err := os.Stat(dir); err != nil {
		NoteSkipped(t.Name())
		t.Skipf("DSH fixtures not available at %s: %v", dir, err)
	}
	return dir
}

// skipped names the tests of this test binary skipped for want of the
// fixtures.
var skipped = struct {
	sync.Mutex
	names map[string]bool
}{names: map[string]bool{}}

// NoteSkipped records that the named test (or script) is skipped because
// the fixtures are absent; Dir does it for the tests that call it.
func NoteSkipped(name string) {
	skipped.Lock()
	skipped.names[name] = true
	skipped.Unlock()
	uncacheable()
}

// uncacheable keeps go test from caching this run's result. A cached
// result is replayed without running the test binary, so Report's notice
// would show on the first run only; with the fixtures absent, every run
// must say so. go test does not cache a run that opened a file inside the
// module changed in the last two seconds (it cannot tell the file's next
// change by its modification time), and testdata/uncacheable is a symbolic
// link to /proc/self/stat, which procfs dates at each lookup (the go
// command's own included). Without procfs the link dangles and nothing
// happens: the notice then shows on uncached runs only. It must run while
// tests run: go test records the files a test opens until m.Run returns.
func uncacheable() {
	root, err := moduleRoot()
	if err != nil {
		return
	}
	if f, err := os.Open(filepath.Join(root, "internal", "dshfixtures", "testdata", "uncacheable")); err == nil {
		f.Close()
	}
}

// Main runs a package's tests and then, if some were skipped for want of
// the fixtures, says so in one line (see Report). Packages whose tests use
// Dir call it from their TestMain.
func Main(m *testing.M) {
	os.Exit(Report(m.Run()))
}

// Report prints, when tests were skipped for want of the fixtures, one line
// saying how many and why, and returns code. A skip message alone is only
// shown by go test -v; this line is written where the go command's own
// output goes (its stderr, found through /proc), because go test ./... keeps
// a passing package's output to itself. Run directly, the test binary prints
// it on its stderr.
func Report(code int) int {
	skipped.Lock()
	n := len(skipped.names)
	skipped.Unlock()
	if n == 0 {
		return code
	}
	pkg := "this package"
	if root, err := moduleRoot(); err == nil {
		if wd, err := os.Getwd(); err == nil {
			if rel, err := filepath.Rel(root, wd); err == nil {
				pkg = filepath.ToSlash(rel)
			}
		}
	}
	w := noticeWriter()
	defer w.Close()
	fmt.Fprintf(w, "dsh: %s: %d DSH-conformance test(s) skipped: ../shared/fixtures (DSH's recorded corpora) is not beside the repository\n", pkg, n)
	return code
}

// noticeWriter is the go command's stderr when the test binary runs under
// go test, else the binary's own. Only a terminal or a pipe is shared that
// way: a regular file (go test ./... > log) has its own write offset in the
// go command, which would overwrite the line.
func noticeWriter() io.WriteCloser {
	ppid := os.Getppid()
	comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", ppid))
	if err == nil && strings.TrimSpace(string(comm)) == "go" {
		name := fmt.Sprintf("/proc/%d/fd/2", ppid)
		if fi, err := os.Stat(name); err == nil && fi.Mode()&(os.ModeNamedPipe|os.ModeSocket|os.ModeCharDevice) != 0 {
			if f, err := os.OpenFile(name, os.O_WRONLY, 0); err == nil {
				return f
			}
		}
	}
	return nopCloser{os.Stderr}
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// moduleRoot is the directory holding go.mod, found upwards from the working
// directory (a test runs in its package's directory).
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// OracleCorpora names the corpora under dsh-oracle/, written by DSH
// 0.1.0-rc.8's real runtime.
var OracleCorpora = []string{"a-continuable-and-oneshot", "g-nested-descendants", "j-medium"}

// Oracle is what an oracle corpus's expected.json records.
type Oracle struct {
	// Dir is the corpus directory.
	Dir   string `json:"-"`
	Files struct {
		SQLite          string `json:"sqlite"`
		JSONL           string `json:"jsonl"`
		JSONLPlain      string `json:"jsonlPlain"`
		ProjectionCache string `json:"projectionCache"`
	} `json:"files"`
	// Listings are DSH's own listChildren/listDescendants results.
	Listings map[string]Listing `json:"listings"`
	// Corpus is every header, or {"sessions": N} for the large corpus.
	Corpus json.RawMessage `json:"corpus"`
	// Resume is DSH's cold resume of each child, by id (absent for the
	// large corpus).
	Resume map[string]Resume `json:"resume"`
}

// Resume is what DSH's real runtime did when it resumed one child cold:
// the descriptor it rebuilt the child from, and the outcome of sending it
// a follow-up message.
type Resume struct {
	ResumeDescriptor struct {
		// Descriptor is the first descriptor of the child's own events, as
		// DSH's resume folded it.
		Descriptor json.RawMessage `json:"descriptor"`
	} `json:"resumeDescriptor"`
	Followup struct {
		OK bool `json:"ok"`
		// AppendedEvents counts the events the follow-up turn appended
		// with DSH's scripted model.
		AppendedEvents int `json:"appendedEvents"`
		// LastTurnEnd is the data of the turn/end closing the follow-up.
		LastTurnEnd json.RawMessage `json:"lastTurnEnd"`
		// Error is DSH's refusal: its code and exact message.
		Error *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	} `json:"followup"`
}

// Listing is one of DSH's listings of a corpus.
type Listing struct {
	Op string `json:"op"` // "children" or "descendants"
	ID string `json:"id"`
	// Result is DSH's SubagentListEntry array, as DSH printed it.
	Result     json.RawMessage `json:"result"`
	ListAgents struct {
		Text string `json:"text"`
	} `json:"listAgents"`
	// Inspections counts the cold log reads DSH made, per variant.
	Inspections map[string]int `json:"inspections"`
}

// Scope is the listing's op as dsh's scope; a fixture naming any other op
// fails t.
func (l Listing) Scope(t testing.TB) corpus.Scope {
	t.Helper()
	s, err := corpus.ParseScope(l.Op)
	if err != nil {
		t.Fatalf("fixture listing of %s: op %v", l.ID, err)
	}
	return s
}

// LoadOracle reads the named oracle corpus's expected.json.
func LoadOracle(t testing.TB, name string) Oracle {
	t.Helper()
	dir := Dir(t, filepath.Join("dsh-oracle", name))
	raw, err := os.ReadFile(filepath.Join(dir, "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var o Oracle
	if err := json.Unmarshal(raw, &o); err != nil {
		t.Fatalf("%s/expected.json: %v", name, err)
	}
	if len(o.Listings) == 0 {
		t.Fatalf("%s/expected.json has no listings", name)
	}
	o.Dir = dir
	return o
}

// EncodeEvents is the byte form logs are compared by: each event as
// session.Event.MarshalJSON (DSH's envelope encoder) writes it.
func EncodeEvents(t testing.TB, events []session.Event) [][]byte {
	t.Helper()
	out := make([][]byte, len(events))
	for i, e := range events {
		b, err := e.MarshalJSON()
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		out[i] = b
	}
	return out
}

// AssertSameEvents fails t unless got and want encode to the same bytes,
// event by event.
func AssertSameEvents(t testing.TB, what string, got, want []session.Event) {
	t.Helper()
	g, w := EncodeEvents(t, got), EncodeEvents(t, want)
	if len(g) != len(w) {
		t.Fatalf("%s: %d events, want %d", what, len(g), len(w))
	}
	for i := range g {
		if !bytes.Equal(g[i], w[i]) {
			t.Fatalf("%s: event %d differs:\n got %s\nwant %s", what, i, g[i], w[i])
		}
	}
}

// JSONTokens is a JSON text as its token stream: values, and object keys in
// the order they were written, so two texts compare equal only when their
// structure, values and key order are the same.
func JSONTokens(t testing.TB, text []byte) []any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.UseNumber()
	var toks []any
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return toks
		}
		if err != nil {
			t.Fatalf("decode %s: %v", text, err)
		}
		toks = append(toks, tok)
	}
}
