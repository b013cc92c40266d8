package main

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/dsh-project/dsh/internal/location"
)

// sourceReads is every invocation of a read command the forms test runs:
// each command that takes --source, keyed by its path, with the outputs
// that must agree across forms.
var sourceReads = map[string][][]string{
	"dsh list": {
		{"list", "--parent", "p", "-o", "json"},
		{"list", "--parent", "p", "--scope", "descendants", "-o", "jsonl"},
		{"list", "--parent", "p", "-o", "agents"},
		{"list", "--parent", "p", "--scope", "descendants", "-o", "tree"},
		{"--dsh-compat", "0.1.7", "list", "--parent", "p", "-o", "json"},
	},
	"dsh diagnose": {
		{"diagnose", "--all", "-o", "json"},
		{"diagnose", "--parent", "p", "--scope", "descendants", "-o", "json"},
	},
	"dsh session show": {
		{"session", "show", "c", "-o", "json"},
		{"session", "show", "o", "-o", "json"},
		{"session", "show", "nobody"},
	},
	"dsh usage": {
		{"usage", "--parent", "p", "-o", "json"},
		{"usage", "--parent", "p", "--scope", "children", "-o", "tree"},
		{"usage", "c", "o", "--by", "model"},
		{"--dsh-compat", "0.1.7", "usage", "--parent", "p", "-o", "jsonl"},
		{"usage", "nobody"},
	},
	"dsh search": {
		{"search", "hi OR sibling", "-o", "json"},
		{"search", "x*", "--parent", "p", "--scope", "children", "-o", "json"},
		{"search", "x", "--parent", "nobody"},
	},
	"dsh session events": {
		{"session", "events", "c"},
		{"session", "events", "c", "--type", "turn/end"},
		{"session", "events", "o"},
	},
}

// commandsTakingSource walks the command tree for every command with a
// --source flag.
func commandsTakingSource(t *testing.T) []string {
	t.Helper()
	a := &app{stdout: io.Discard, stderr: io.Discard, now: time.Now}
	var out []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Flags().Lookup("source") != nil {
			out = append(out, c.CommandPath())
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(a.newRootCmd())
	slices.Sort(out)
	return out
}

// Every read command takes every --source form the registry offers, on
// the same corpus laid out in each form (DSH's JSONL files, a DSH home,
// DSH's schema-17 store, and a dsh database imported from them, read as
// dsh:), and answers the same: the same rows, headers, events, findings
// and exit statuses; a dsh: source answers as --db does, byte for byte.
func TestEveryReadCommandTakesEverySourceForm(t *testing.T) {
	home := isolateEnv(t)
	t.Setenv("DSH_DB", filepath.Join(home, "unused", "dsh.db"))
	var covered []string
	for path := range sourceReads {
		covered = append(covered, path)
	}
	// dsh serve runs until stopped: TestServeTakesEverySourceForm serves
	// each form and compares its API with these commands' answers.
	covered = append(covered, "dsh serve")
	slices.Sort(covered)
	if got := commandsTakingSource(t); !slices.Equal(got, covered) {
		t.Fatalf("commands taking --source %v, the test runs %v: cover the new one", got, covered)
	}

	// Every event at time 3: writeCatSQLite writes each row's time as 3.
	at3 := func(lines ...string) []string {
		out := make([]string, len(lines))
		for i, l := range lines {
			out[i] = timeField.ReplaceAllString(l, `"time":3,`)
		}
		return out
	}
	sessions := []*catSession{
		{id: "p", header: catHeaderP},
		{id: "c", header: catHeaderC, lines: at3(catChildLines()...)},
		{id: "g", header: catHeaderG, lines: at3(catDescriptor("grandchild"))},
		{id: "s", header: catHeaderS, lines: at3(catDescriptor("sibling"))},
		// An interrupted turn: an info finding, and a log summary with an
		// open turn.
		{id: "o", header: strings.ReplaceAll(catHeaderS, `"id":"s","createdAt":4`, `"id":"o","createdAt":5`),
			lines: at3(catDescriptor("open"), `{"type":"turn/start","seq":1,"time":5,"data":{"turn":1}}`)},
	}
	dir := t.TempDir()
	sources := map[string]string{}
	for _, form := range []string{"jsonl", "dsh-home", "dsh-sqlite"} {
		fresh := make([]*catSession, len(sessions))
		for i, s := range sessions {
			copied := *s
			fresh[i] = &copied
		}
		formDir := filepath.Join(dir, form)
		if err := os.Mkdir(formDir, 0o755); err != nil {
			t.Fatal(err)
		}
		sources[form] = writeCatForm(t, formDir, fresh, form)
	}
	db := filepath.Join(dir, "dsh.db")
	if _, stderr, code := runDsh(t, "--db", db, "import", sources["jsonl"], "--quiet"); code != 0 {
		t.Fatalf("import: exit %d: %s", code, stderr)
	}
	sources["dsh"] = "dsh:" + db
	var names []string
	for _, s := range location.Schemes(location.SourceUse) {
		names = append(names, s.Name)
		if sources[s.Name] == "" {
			t.Fatalf("the registry offers %s:, which this test does not lay out", s.Name)
		}
	}

	answers := map[string]string{}
	for path, invocations := range sourceReads {
		for _, args := range invocations {
			type answer struct {
				raw, out, errOut string
				code             int
			}
			results := map[string]answer{}
			for _, name := range names {
				src := sources[name]
				withSource := append(slices.Clone(args), "--source", src)
				out, errOut, code := runDsh(t, withSource...)
				results[name] = answer{out, sourceNeutral(t, path, out, src), errOut, code}
			}
			out, errOut, code := runDsh(t, append([]string{"--db", db}, args...)...)
			if got := results["dsh"]; got.raw != out || got.code != code {
				t.Errorf("%v: --source dsh: (exit %d)\n%s\n--db (exit %d)\n%s", args, got.code, got.raw, code, out)
			}
			if code > 1 && errOut == "" {
				t.Errorf("%v: exit %d with nothing on stderr", args, code)
			}
			want := results[names[0]]
			for _, name := range names[1:] {
				if got := results[name]; got.out != want.out || got.code != want.code {
					t.Errorf("%v: --source %s: (exit %d)\n%s\n--source %s: (exit %d)\n%s\n%s",
						args, name, got.code, got.out, names[0], want.code, want.out, got.errOut)
				}
			}
			if want.code > 1 && !strings.Contains(strings.Join(args, " "), "nobody") {
				t.Errorf("%v: exit %d: %s", args, want.code, want.errOut)
			}
			if want.code == 0 && want.out == "" {
				t.Errorf("%v: printed nothing", args)
			}
			answers[strings.Join(args, " ")] = want.out
		}
	}
	// The forms agree on what the corpus holds, not on nothing.
	for args, want := range map[string]string{
		"list --parent p -o agents":        "c [ready] — damaged\ns [ready] — sibling\no [ready] — open\n",
		"diagnose --all -o json":           "TURN_INTERRUPTED/info@1",
		"session events c --type turn/end": `"seq":5`,
	} {
		if !strings.Contains(answers[args], want) {
			t.Errorf("%s: %q, want %q in it", args, answers[args], want)
		}
	}
}

var timeField = regexp.MustCompile(`"time":[0-9]+,`)

// sourceNeutral is a read's output with what names its source left out:
// diagnose's details name the file or database a finding was read from,
// and session show the format a session was read (or imported) from.
func sourceNeutral(t *testing.T, path, out, src string) string {
	t.Helper()
	switch path {
	case "dsh session show":
		var v map[string]json.RawMessage
		if json.Unmarshal([]byte(out), &v) != nil {
			return out // the table or an error
		}
		delete(v, "sourceFormat")
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	case "dsh diagnose":
	default:
		return out
	}
	var d catDiagnosis
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatalf("diagnose --source %s: %v: %s", src, err, out)
	}
	b, err := json.Marshal(d.bySession())
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
