package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-project/dsh/internal/pgstore"
	"github.com/dsh-project/dsh/internal/pgtest"
	"github.com/dsh-project/dsh/internal/sqlitepersist"
)

// importDshCorpus is a JSONL corpus with what a catalog move must keep: an
// interrupted turn, a torn tail, a log failing validation, a log damaged
// inside its committed region, and a header with an absent optional field.
var importDshCorpus = map[string]string{
	"p.jsonl": `{"type":"session","version":0,"id":"p","createdAt":1,"cwd":"/work","delegationDepth":0}
`,
	"c-ok.jsonl": `{"type":"session","version":0,"id":"c-ok","createdAt":2,"cwd":"/work","parentSession":"p","origin":"subagent","delegationDepth":1}
{"type":"subagent/descriptor","seq":0,"time":2,"data":{"version":2,"mode":"continuable","provider":"spawn","label":"fine"}}
`,
	"c-open.jsonl": `{"type":"session","version":0,"id":"c-open","createdAt":4,"cwd":"/work","parentSession":"p","origin":"subagent","delegationDepth":1}
{"type":"subagent/descriptor","seq":0,"time":4,"data":{"version":2,"mode":"continuable","provider":"spawn","label":"open turn"}}
{"type":"turn/start","seq":1,"time":5,"data":{"turn":1}}
`,
	"c-torn.jsonl": `{"type":"session","version":0,"id":"c-torn","createdAt":5,"cwd":"/work","parentSession":"p","origin":"subagent","delegationDepth":1}
{"type":"subagent/descriptor","seq":0,"time":5,"data":{"version":2,"mode":"continuable","provider":"spawn","label":"torn"}}
{"type":"turn/start","seq":1,"ti`,
	"c-invalid.jsonl": `{"type":"session","version":0,"id":"c-invalid","createdAt":6,"cwd":"/work","parentSession":"p","origin":"subagent","delegationDepth":1}
{"type":"subagent/descriptor","seq":0,"time":6,"data":{"version":2,"mode":"continuable","provider":"spawn","label":"invalid"}}
{"type":"no/such-type","seq":1,"time":6,"data":{}}
`,
	"c-damaged.jsonl": `{"type":"session","version":0,"id":"c-damaged","createdAt":7,"cwd":"/work","parentSession":"p","origin":"subagent","delegationDepth":1}
{"type":"subagent/descriptor","seq":0,"time":7,"data":{"version":2,"mode":"continuable","provider":"spawn","label":"damaged"}}
{"type":"turn/start","seq":1,"time":7,"data":{"turn":1}}
not json
{"type":"turn/end","seq":3,"time":8,"data":{"turn":1}}
`,
}

var importDshIDs = []string{"p", "c-ok", "c-open", "c-torn", "c-invalid", "c-damaged"}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// sameCatalog asserts that two dsh databases list, show, read and
// diagnose every session of the corpus identically.
func sameCatalog(t *testing.T, a, b string) {
	t.Helper()
	views := [][]string{{"list", "--parent", "p", "-o", "json"}, {"list", "--parent", "c-ok", "-o", "json"},
		{"diagnose", "--parent", "p", "-o", "json"}}
	for _, id := range importDshIDs {
		views = append(views, []string{"session", "events", id}, []string{"session", "show", id, "-o", "json"})
	}
	for _, v := range views {
		outA, errA, codeA := runDsh(t, append([]string{"--db", a}, v...)...)
		outB, errB, codeB := runDsh(t, append([]string{"--db", b}, v...)...)
		if outA != outB || errA != errB || codeA != codeB {
			t.Errorf("dsh %s differs between the catalogs:\n%s (exit %d, stderr %q)\n%s (exit %d, stderr %q)",
				strings.Join(v, " "), outA, codeA, errA, outB, codeB, errB)
		}
	}
	formatsA, formatsB := sourceFormats(t, a), sourceFormats(t, b)
	for _, id := range importDshIDs {
		if formatsA[id] == "" || formatsA[id] != formatsB[id] {
			t.Errorf("session %s: source format %q, copied as %q", id, formatsA[id], formatsB[id])
		}
	}
}

// sourceFormats reads, read-only, the foreign format each session of the
// corpus was first imported from.
func sourceFormats(t *testing.T, db string) map[string]string {
	t.Helper()
	ctx := context.Background()
	var st interface {
		SourceFormat(ctx context.Context, id string) (string, error)
		Close() error
	}
	var err error
	if pgstore.IsURL(db) {
		st, err = pgstore.OpenReadOnly(ctx, db)
	} else {
		st, err = sqlitepersist.OpenReadOnly(ctx, db, sqlitepersist.Options{})
	}
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	formats := map[string]string{}
	for _, id := range importDshIDs {
		if formats[id], err = st.SourceFormat(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	return formats
}

func importDsh(t *testing.T, db, source string, wantCode int) (stdout, stderr string) {
	t.Helper()
	out, errOut, code := runDsh(t, "--db", db, "import", "--quiet", source)
	if code != wantCode {
		t.Fatalf("dsh --db %s import %s: exit %d, want %d\n%s%s", db, source, code, wantCode, out, errOut)
	}
	return out, errOut
}

// TestImportDshAcrossBackends moves a catalog SQLite → PostgreSQL →
// SQLite: both sides read the same after each move, the source's bytes are
// unchanged, a session that grew in the source is appended, a diverged one
// is a conflict (exit 1, nothing changed), and a second run skips all.
func TestImportDshAcrossBackends(t *testing.T) {
	isolateEnv(t)
	pg := pgtest.NewDatabase(t)
	dir := t.TempDir()
	writeFiles(t, filepath.Join(dir, "corpus"), importDshCorpus)
	src := filepath.Join(dir, "src.db")
	importDsh(t, src, "jsonl:"+filepath.Join(dir, "corpus"), 0)
	before, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	beside := treeFingerprint(t, dir)

	// SQLite → PostgreSQL.
	out, _ := importDsh(t, pg, "dsh:"+src, 0)
	if n := strings.Count(out, "\timported\t"); n != len(importDshIDs) {
		t.Fatalf("SQLite → PostgreSQL imported %d session(s), want %d:\n%s", n, len(importDshIDs), out)
	}
	sameCatalog(t, src, pg)
	if after, err := os.ReadFile(src); err != nil || string(after) != string(before) {
		t.Fatalf("the source SQLite file changed (err %v)", err)
	}
	if after := treeFingerprint(t, dir); after != beside {
		t.Fatalf("reading the source changed its directory:\n%s\nwas\n%s", after, beside)
	}

	// PostgreSQL → SQLite.
	dst := filepath.Join(dir, "dst.db")
	importDsh(t, dst, "dsh:"+pg, 0)
	sameCatalog(t, pg, dst)

	// Again: everything skipped, exit 0, both ways.
	for _, move := range [][2]string{{pg, "dsh:" + src}, {dst, "dsh:" + pg}} {
		out, _ := importDsh(t, move[0], move[1], 0)
		if n := strings.Count(out, "\tskipped\t"); n != len(importDshIDs) {
			t.Errorf("second import of %s skipped %d session(s), want all %d:\n%s", move[1], n, len(importDshIDs), out)
		}
	}

	// c-open grows in PostgreSQL; the SQLite copy gets the new event
	// appended.
	writeFiles(t, filepath.Join(dir, "grown"), map[string]string{"c-open.jsonl": importDshCorpus["c-open.jsonl"] +
		`{"type":"turn/end","seq":2,"time":6,"data":{"turn":1,"reason":{"kind":"completed"}}}` + "\n"})
	out, _ = importDsh(t, pg, "jsonl:"+filepath.Join(dir, "grown", "c-open.jsonl"), 0)
	if !strings.Contains(out, "c-open\tappended\t1\t") {
		t.Fatalf("growing c-open in PostgreSQL: %s", out)
	}
	out, _ = importDsh(t, dst, "dsh:"+pg, 0)
	if !strings.Contains(out, "c-open\tappended\t1\t") {
		t.Fatalf("PostgreSQL → SQLite after c-open grew: want it appended:\n%s", out)
	}
	sameCatalog(t, pg, dst)

	// A source whose c-open diverges from the stored log: conflict, exit
	// 1, nothing changed in PostgreSQL.
	writeFiles(t, filepath.Join(dir, "diverged"), map[string]string{"c-open.jsonl": strings.Replace(importDshCorpus["c-open.jsonl"],
		`"seq":1,"time":5`, `"seq":1,"time":99`, 1)})
	other := filepath.Join(dir, "other.db")
	importDsh(t, other, "jsonl:"+filepath.Join(dir, "diverged"), 0)
	eventsBefore, _, _ := runDsh(t, "--db", pg, "session", "events", "c-open")
	out, _ = importDsh(t, pg, "dsh:"+other, 1)
	if !strings.Contains(out, "c-open\tconflict\t0\tthe database holds session \"c-open\" with another log") {
		t.Fatalf("diverged c-open: want a conflict:\n%s", out)
	}
	if eventsAfter, _, _ := runDsh(t, "--db", pg, "session", "events", "c-open"); eventsAfter != eventsBefore {
		t.Fatalf("a conflicting import changed c-open:\n%s\nwas\n%s", eventsAfter, eventsBefore)
	}
	sameCatalog(t, pg, dst)
}
