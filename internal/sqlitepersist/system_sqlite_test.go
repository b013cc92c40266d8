package sqlitepersist

import (
	"os/exec"
	"strings"
	"testing"
)

// TestSchemaReadsInTheSystemSQLite: a dsh database stays a SQLite file
// that the sqlite3 shell a distribution ships can open and query. Every
// statement reading sqlite_master parses the whole schema, so one view or
// trigger written in grammar newer than that shell's (an aggregate's own
// ORDER BY needs SQLite 3.44; Debian 12 ships 3.40) makes the file
// "malformed" to it, and to every tool linked against that library.
func TestSchemaReadsInTheSystemSQLite(t *testing.T) {
	shell, err := exec.LookPath("sqlite3")
	if err != nil {
		t.Skip("no sqlite3 shell on PATH: the schema is not checked against a system SQLite")
	}
	s, path := openStore(t)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	version, _ := exec.Command(shell, "-version").Output()
	out, err := exec.Command(shell, "-readonly", path,
		"SELECT count(*) FROM sqlite_master WHERE type = 'view';",
		"SELECT count(*) FROM event_text_of;").CombinedOutput()
	if err != nil {
		t.Fatalf("sqlite3 %s could not read a dsh database's schema: %v\n%s", strings.TrimSpace(string(version)), err, out)
	}
	if lines := strings.Fields(string(out)); len(lines) != 2 || lines[0] == "0" || lines[1] != "0" {
		t.Errorf("sqlite3 answered %q; want the views counted and an empty event_text_of", out)
	}
}
