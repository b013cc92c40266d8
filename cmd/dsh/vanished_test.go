package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-project/dsh/internal/location"
)

// A session file removed after the source was enumerated and before its
// log is read (issue 23 item 4) is that session's problem alone: list
// shows it unavailable, diagnose reports it and audits the rest, session
// show names it, import reports it unreadable (exit 1) and imports the
// others. On main the whole command failed with STORE_UNAVAILABLE.
func TestVanishedSessionFile(t *testing.T) {
	isolateEnv(t)
	dir := t.TempDir()
	c := &catSession{id: "c", header: catHeaderC, lines: catChildLines()}
	sessions := []*catSession{{id: "p", header: catHeaderP}, c, {id: "s", header: catHeaderS, lines: []string{catDescriptor("sibling")}}}
	corpus := filepath.Join(dir, "corpus")
	cFile := filepath.Join(corpus, "--work--", "c", "session.jsonl")
	src := "jsonl:" + corpus
	run := func(args ...string) (string, string, int) {
		t.Helper()
		writeCatJSONL(t, corpus, sessions)
		testSourceEnumerated = func(location.Spec) {
			if err := os.Remove(cFile); err != nil {
				t.Error(err)
			}
		}
		defer func() { testSourceEnumerated = nil }()
		return runDsh(t, args...)
	}

	out, errOut, code := run("--source", src, "list", "--parent", "p", "-o", "agents")
	if code != 0 || out != "c [diagnostic: unavailable]\ns [ready] — sibling\n" {
		t.Errorf("list (exit %d):\n%s%s", code, out, errOut)
	}
	out, errOut, code = run("--source", src, "diagnose", "--all")
	if code != 1 || !strings.Contains(out, "error LOG_UNREADABLE c: ") || !strings.Contains(out, cFile) ||
		!strings.Contains(errOut, "examined 3 session(s): 1 error") {
		t.Errorf("diagnose (exit %d):\n%s%s", code, out, errOut)
	}
	out, errOut, code = run("--source", src, "session", "show", "c")
	if code != 3 || !strings.Contains(errOut, "STORE_UNAVAILABLE") || !strings.Contains(errOut, cFile) {
		t.Errorf("session show (exit %d):\n%s%s", code, out, errOut)
	}
	db := filepath.Join(dir, "dsh.db")
	out, errOut, code = run("--db", db, "import", src)
	if code != 1 || !strings.Contains(out, "c\tunreadable\t") || !strings.Contains(out, "s\timported\t") || !strings.Contains(out, "p\timported\t") {
		t.Errorf("import (exit %d):\n%s%s", code, out, errOut)
	}
}
