package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-project/dsh/internal/pgtest"
)

// Import reports the events a source's reader read from text that is not
// UTF-8, the store records it with the log, and an import that appends to
// the log from a clean source (the same text, U+FFFD stored as such, and a
// later turn) clears the record: diagnose of the database then reports
// nothing, as diagnose --source of the clean source does. A copy of the
// database made by importing it keeps the record. On both backends.
func TestImportTextReplacedRecordedAndCleared(t *testing.T) {
	isolateEnv(t)
	dir := t.TempDir()
	dbs := []string{filepath.Join(dir, "dsh.db")}
	if pgtest.Required() {
		dbs = append(dbs, pgtest.NewDatabase(t))
	}
	dirty := &catSession{id: "c", header: catHeaderC, lines: catChildLines()}
	dirty.lines[2] = "{\"type\":\"session/title\",\"seq\":2,\"time\":3,\"data\":{\"title\":\"t\xff\xfe\"}}"
	dirty.lines[4] = "{\"type\":\"turn/start\",\"seq\":4,\"time\":4,\"data\":{\"turn\":2,\"x\":\"\xc3\"}}"
	writeCatJSONL(t, filepath.Join(dir, "dirty"), []*catSession{{id: "p", header: catHeaderP}, dirty})
	clean := &catSession{id: "c", header: catHeaderC, lines: catChildLines()}
	clean.lines[2] = `{"type":"session/title","seq":2,"time":3,"data":{"title":"t` + "\uFFFD\uFFFD" + `"}}`
	clean.lines[4] = `{"type":"turn/start","seq":4,"time":4,"data":{"turn":2,"x":"` + "\uFFFD" + `"}}`
	clean.lines = append(clean.lines,
		`{"type":"turn/start","seq":6,"time":5,"data":{"turn":3}}`,
		`{"type":"turn/end","seq":7,"time":5,"data":{"turn":3,"reason":{"kind":"completed"}}}`)
	writeCatJSONL(t, filepath.Join(dir, "clean"), []*catSession{{id: "p", header: catHeaderP}, clean})

	findings := func(where ...string) string {
		t.Helper()
		out, errOut, _ := runDsh(t, append(where, "diagnose", "c", "-o", "json", "--quiet")...)
		var d catDiagnosis
		if err := json.Unmarshal([]byte(out), &d); err != nil {
			t.Fatalf("diagnose %v: %v\n%s%s", where, err, out, errOut)
		}
		return d.bySession()["c"]
	}
	const want = "EVENT_TEXT_REPLACED/warning@2"
	if got := findings("--source", "jsonl:"+filepath.Join(dir, "dirty")); !strings.Contains(got, want) {
		t.Fatalf("diagnose --source of the dirty corpus: %s, want %s", got, want)
	}
	if got := findings("--source", "jsonl:"+filepath.Join(dir, "clean")); strings.Contains(got, "EVENT_TEXT_REPLACED") {
		t.Fatalf("diagnose --source of the clean corpus: %s", got)
	}
	for _, db := range dbs {
		out, errOut, code := runDsh(t, "--db", db, "import", "jsonl:"+filepath.Join(dir, "dirty"), "-o", "json")
		var imported struct {
			Sessions []struct {
				ID           *string `json:"id"`
				Outcome      string  `json:"outcome"`
				TextReplaced *struct {
					FirstSeq int64 `json:"firstSeq"`
					Events   int   `json:"events"`
				} `json:"textReplaced"`
			} `json:"sessions"`
		}
		if err := json.Unmarshal([]byte(out), &imported); err != nil || code != 0 {
			t.Fatalf("import (exit %d): %v\n%s%s", code, err, out, errOut)
		}
		for _, s := range imported.Sessions {
			switch {
			case *s.ID == "c" && (s.Outcome != "imported" || s.TextReplaced == nil || s.TextReplaced.FirstSeq != 2 || s.TextReplaced.Events != 2):
				t.Errorf("import of c: %s, text replaced %+v; want imported, 2 events from seq 2", s.Outcome, s.TextReplaced)
			case *s.ID != "c" && s.TextReplaced != nil:
				t.Errorf("import of %s reports replaced text %+v", *s.ID, s.TextReplaced)
			}
		}
		if out, _, _ := runDsh(t, "--db", db, "import", "jsonl:"+filepath.Join(dir, "dirty")); !strings.Contains(out, "skipped") {
			t.Errorf("import again: %s", out)
		}
		if got := findings("--db", db); !strings.Contains(got, want) {
			t.Errorf("%s: diagnose after import: %s, want %s", db, got, want)
		}
		// Moved to another database, the log keeps its record.
		copyDB := filepath.Join(t.TempDir(), "copy.db")
		if out, errOut, code := runDsh(t, "--db", copyDB, "import", "dsh:"+db); code != 0 || !strings.Contains(out, "EVENT_TEXT_REPLACED") {
			t.Errorf("import dsh:%s (exit %d):\n%s%s", db, code, out, errOut)
		}
		if got := findings("--db", copyDB); !strings.Contains(got, want) {
			t.Errorf("diagnose of a copy of %s: %s, want %s", db, got, want)
		}
		out, errOut, code = runDsh(t, "--db", db, "import", "jsonl:"+filepath.Join(dir, "clean"))
		if code != 0 || !strings.Contains(out, "appended") {
			t.Fatalf("import of the clean corpus (exit %d):\n%s%s", code, out, errOut)
		}
		if got := findings("--db", db); strings.Contains(got, "EVENT_TEXT_REPLACED") {
			t.Errorf("%s: diagnose after the clean import: %s", db, got)
		}
	}
}
