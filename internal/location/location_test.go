package location

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/sqlitepersist"
	"github.com/dsh-project/dsh/internal/subagent"
	"github.com/dsh-project/dsh/internal/transfer"
)

func TestParseSource(t *testing.T) {
	t.Setenv("DSH_HOME", "/env/home")
	for _, tc := range []struct {
		in   string
		want Spec
		code dsherr.Code
	}{
		{in: "jsonl:/a/b", want: Spec{"jsonl", "/a/b", SourceUse}},
		{in: "jsonl:c:/win", want: Spec{"jsonl", "c:/win", SourceUse}},
		{in: "dsh-sqlite:rel/x.db", want: Spec{"dsh-sqlite", "rel/x.db", SourceUse}},
		{in: "dsh-home:/h", want: Spec{"dsh-home", "/h", SourceUse}},
		{in: "dsh-home:", want: Spec{"dsh-home", "/env/home", SourceUse}},
		{in: "dsh-home", want: Spec{"dsh-home", "/env/home", SourceUse}},
		{in: "dsh:rel/x.db", want: Spec{"dsh", "rel/x.db", SourceUse}},
		{in: "dsh:postgres://u@h/db", want: Spec{"dsh", "postgres://u@h/db", SourceUse}},
		{in: "dsh:host=h dbname=d", want: Spec{"dsh", "host=h dbname=d", SourceUse}},
		{in: "jsonl:", code: dsherr.Usage},
		{in: "dsh:", code: dsherr.Usage},
		{in: "corpus", code: dsherr.Usage},
		// Only the bare name stands for DSH's default home: a longer word
		// starting with it is a mistyped source, not that home.
		{in: "dsh-homeX", code: dsherr.Usage},
		{in: "dsh-home/x", code: dsherr.Usage},
		{in: "sqlite:x.db", code: dsherr.Usage},
	} {
		got, err := ParseSource(tc.in)
		if tc.code != "" {
			if dsherr.CodeOf(err) != tc.code {
				t.Errorf("ParseSource(%q) = %v, %v; want a %s error", tc.in, got, err, tc.code)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseSource(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
}

func TestParseDB(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ in, scheme, arg string }{
		{"postgres://u:secret@h/db", "postgres", "postgres://u:secret@h/db"},
		{"POSTGRESQL://h/db", "postgres", "POSTGRESQL://h/db"},
		{"host=h dbname=d", "postgres-keyword", "host=h dbname=d"},
		{"rel/x.db", "sqlite", filepath.Join(wd, "rel/x.db")},
		{"~/x.db", "sqlite", filepath.Join(home, "x.db")},
		// A file name holding '=' that is no libpq keyword stays a path.
		{"a=b.db", "sqlite", filepath.Join(wd, "a=b.db")},
	} {
		got, err := ParseDB(tc.in)
		if err != nil || got.Scheme != tc.scheme || got.Arg != tc.arg || got.IsSource() {
			t.Errorf("ParseDB(%q) = %+v, %v; want %s %s", tc.in, got, err, tc.scheme, tc.arg)
		}
	}
	if got, _ := ParseDB("postgres://u:secret@h/db"); strings.Contains(got.String(), "secret") {
		t.Errorf("String() shows the password: %s", got)
	}
}

// The usage texts are the registry's: a scheme added there is offered
// everywhere, and one that is not registered is offered nowhere.
func TestUsageTextsFollowTheRegistry(t *testing.T) {
	var names []string
	for _, s := range Schemes(SourceUse) {
		names = append(names, s.Name)
		if s.open == nil || s.importSource == nil || s.parse == nil {
			t.Errorf("source scheme %s: every read command and import must be able to open it", s.Name)
		}
	}
	if want := []string{"jsonl", "dsh-sqlite", "dsh-home", "dsh"}; !reflect.DeepEqual(names, want) {
		t.Errorf("source schemes %v, want %v", names, want)
	}
	for _, s := range Schemes(DBUse) {
		if s.open == nil || s.store == nil || s.match == nil {
			t.Errorf("--db form %s: must open read-only, as a store and be recognised", s.Name)
		}
	}
	if got, want := SourceForms(), "jsonl:PATH, dsh-sqlite:PATH, dsh-home:[PATH] or dsh:PATH_OR_URL"; got != want {
		t.Errorf("SourceForms() = %q, want %q", got, want)
	}
	if got, want := SourceFormsSynopsis(), "jsonl:PATH|dsh-sqlite:PATH|dsh-home:[PATH]|dsh:PATH_OR_URL"; got != want {
		t.Errorf("SourceFormsSynopsis() = %q, want %q", got, want)
	}
	if got, want := CachePrefixes(), "jsonl:, dsh-sqlite: or dsh-home:"; got != want {
		t.Errorf("CachePrefixes() = %q, want %q", got, want)
	}
	for _, s := range Schemes(DBUse) {
		if !strings.Contains(DBHelp(), s.Form()+" ("+s.Help+")") {
			t.Errorf("DBHelp() %q leaves out %s", DBHelp(), s.Name)
		}
	}
	_, err := ParseSource("sqlite:x.db")
	if want := `source "sqlite:x.db": unknown kind "sqlite" (want jsonl, dsh-sqlite, dsh-home or dsh)`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("unknown kind: %v, want %q", err, want)
	}
}

var descriptor = map[string]string{
	"c1": `{"version":2,"mode":"continuable","provider":"spawn","label":"one"}`,
	"c2": `{"version":2,"mode":"one-shot","provider":"spawn","label":"two"}`,
	"g1": `{"version":2,"mode":"continuable","provider":"spawn","label":"grandchild"}`,
}

// corpusForms builds one corpus in every form there is to read: a dsh
// database (as --db and as dsh:), its export as JSONL, the export laid out
// as a DSH home, and DSH's schema-17 store of the same sessions.
func corpusForms(t *testing.T) (db string, sources []string) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	db = filepath.Join(dir, "dsh.db")
	st, err := sqlitepersist.Open(ctx, db, sqlitepersist.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cwd := "/work"
	str := func(s string) *string { return &s }
	depth := func(n int64) *int64 { return &n }
	headers := []session.Header{{ID: "p", CreatedAt: 1, Cwd: &cwd, DelegationDepth: depth(0)}}
	for i, id := range []string{"c1", "c2", "g1"} {
		parent := "p"
		if id == "g1" {
			parent = "c1"
		}
		headers = append(headers, session.Header{ID: id, CreatedAt: int64(2 + i), Cwd: &cwd, ParentSession: str(parent),
			Origin: str(session.OriginSubagent), DelegationDepth: depth(int64(1 + strings.Count(parent, "c")))})
	}
	for _, h := range headers {
		var events []session.Event
		if d, ok := descriptor[h.ID]; ok {
			events = []session.Event{{Type: session.TypeDescriptor, Seq: 0, Time: h.CreatedAt, Data: json.RawMessage(d)}}
		}
		if err := st.CreateSession(ctx, h, events); err != nil {
			t.Fatal(err)
		}
	}
	jsonl, home := filepath.Join(dir, "jsonl"), filepath.Join(dir, "home")
	ids := []string{"p", "c1", "c2", "g1"}
	for _, to := range []string{jsonl, filepath.Join(home, "sessions")} {
		if _, err := transfer.Export(ctx, st, to, ids, transfer.ExportOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	s17 := filepath.Join(dir, "sessions.db")
	writeSchema17(t, s17, headers)
	return db, []string{"jsonl:" + jsonl, "dsh-home:" + home, "dsh-sqlite:" + s17, "dsh:" + db}
}

// writeSchema17 writes DSH's schema-17 store holding the headers, each with
// its descriptor as one scalar row.
func writeSchema17(t *testing.T, path string, headers []session.Header) {
	t.Helper()
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	for _, q := range []string{
		// DSH's DDL as DSH writes it: the reader compares the text.
		"CREATE TABLE persistence_state (\n  singleton INTEGER PRIMARY KEY CHECK (singleton = 1),\n  store_id  TEXT NOT NULL\n) STRICT",
		"CREATE TABLE sessions (\n  id               TEXT PRIMARY KEY,\n  version          INTEGER NOT NULL,\n  created_at       INTEGER NOT NULL,\n  cwd              TEXT,\n  parent_session   TEXT,\n  seed_length      INTEGER,\n  origin           TEXT,\n  delegation_depth INTEGER,\n  agent_preset     TEXT,\n  incarnation      TEXT NOT NULL,\n  revision         INTEGER NOT NULL\n) STRICT",
		"CREATE TABLE events (\n  session_id        TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,\n  seq               INTEGER NOT NULL,\n  type              TEXT NOT NULL,\n  time              INTEGER NOT NULL,\n  data              ANY NOT NULL,\n  source_event_seqs ANY,\n  surface_op        TEXT,\n  ignorable         INTEGER CHECK (ignorable IS NULL OR ignorable IN (0, 1)),\n  PRIMARY KEY (session_id, seq)\n) STRICT",
		"INSERT INTO persistence_state (singleton, store_id) VALUES (1, '6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b')",
		"PRAGMA application_id = 1146308688",
		"PRAGMA user_version = 17",
	} {
		if _, err := raw.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	for _, h := range headers {
		if _, err := raw.Exec(`INSERT INTO sessions VALUES (?, 0, ?, ?, ?, NULL, ?, ?, NULL, '0b6f3a52-1c2d-4e5f-9a8b-7c6d5e4f3a2b', 1)`,
			h.ID, h.CreatedAt, h.Cwd, h.ParentSession, h.Origin, h.DelegationDepth); err != nil {
			t.Fatal(err)
		}
		if d, ok := descriptor[h.ID]; ok {
			if _, err := raw.Exec(`INSERT INTO events VALUES (?, 0, ?, ?, ?, NULL, NULL, NULL)`, h.ID, session.TypeDescriptor, h.CreatedAt, d); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// Every form opens to the same corpus: the same descendants, the same
// header, the same log; and a session it does not hold is NOT_FOUND naming
// the source.
func TestOpenEveryForm(t *testing.T) {
	ctx := context.Background()
	db, sources := corpusForms(t)
	dbSpec, err := ParseDB(db)
	if err != nil {
		t.Fatal(err)
	}
	specs := []Spec{dbSpec}
	for _, s := range sources {
		spec, err := ParseSource(s)
		if err != nil {
			t.Fatal(err)
		}
		specs = append(specs, spec)
	}
	var first []subagent.Row
	for _, spec := range specs {
		var warnings []string
		c, err := Open(ctx, spec, Options{Warn: func(s string) { warnings = append(warnings, s) }})
		if err != nil {
			t.Fatalf("%s: %v", spec, err)
		}
		rows, err := c.Lister(2).ListDescendants(ctx, "p")
		if err != nil {
			t.Fatalf("%s: %v", spec, err)
		}
		if len(rows) != 3 || len(warnings) > 0 || c.Empty {
			t.Errorf("%s: %d rows, warnings %q, empty %v", spec, len(rows), warnings, c.Empty)
		}
		if first == nil {
			first = rows
		} else if !reflect.DeepEqual(rows, first) {
			t.Errorf("%s lists %+v\nthe database lists %+v", spec, rows, first)
		}
		err = c.View(ctx, func(r Reader) error {
			ins, err := r.Inspect(ctx, "c2")
			if err != nil || len(ins.Events) != 1 || string(ins.Events[0].Data) != descriptor["c2"] {
				t.Errorf("%s: inspect c2: %+v, %v", spec, ins, err)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Reader.Header(ctx, "nobody")
		lerr := c.LookupError("nobody", err)
		wantMsg := `no session with id "nobody"`
		if spec.IsSource() {
			wantMsg += " in " + spec.String()
		}
		if dsherr.CodeOf(lerr) != dsherr.NotFound || !strings.Contains(lerr.Error(), wantMsg) || !errors.Is(lerr, backend.ErrNotFound) {
			t.Errorf("%s: lookup error %v, want NOT_FOUND %q", spec, lerr, wantMsg)
		}
		if err := c.Close(); err != nil {
			t.Errorf("%s: close: %v", spec, err)
		}
	}
}

// Every source form is an import source giving the same sessions.
func TestImportSourceEveryForm(t *testing.T) {
	ctx := context.Background()
	_, sources := corpusForms(t)
	for _, s := range sources {
		spec, err := ParseSource(s)
		if err != nil {
			t.Fatal(err)
		}
		src, err := ImportSource(ctx, spec, Options{})
		if err != nil {
			t.Fatalf("%s: %v", spec, err)
		}
		hs, err := src.Headers(ctx)
		var ids []string
		for _, h := range hs {
			ids = append(ids, h.ID)
		}
		if err != nil || strings.Join(ids, " ") != "c1 c2 g1 p" {
			t.Errorf("%s: headers %v, %v", spec, ids, err)
		}
		if err := src.Close(); err != nil {
			t.Errorf("%s: close: %v", spec, err)
		}
	}
}

// A dsh: source is read in place and nothing is written, in the file or
// beside it; a source holding no session is a warning, and with Strict
// NOT_FOUND; --source-cache does not apply to a dsh database.
func TestOpenDSHDatabase(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db := filepath.Join(dir, "empty.db")
	st, err := sqlitepersist.Open(ctx, db, sqlitepersist.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	before := dirState(t, dir)
	spec, err := ParseSource("dsh:" + db)
	if err != nil {
		t.Fatal(err)
	}
	var warnings []string
	c, err := Open(ctx, spec, Options{Warn: func(s string) { warnings = append(warnings, s) }})
	if err != nil {
		t.Fatal(err)
	}
	if !c.Empty || len(warnings) != 1 || warnings[0] != "dsh:"+db+" holds no session" {
		t.Errorf("empty %v, warnings %q", c.Empty, warnings)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(ctx, spec, Options{Strict: true}); dsherr.CodeOf(err) != dsherr.NotFound {
		t.Errorf("strict: %v, want NOT_FOUND", err)
	}
	if _, err := Open(ctx, spec, Options{CacheFile: "x.json"}); dsherr.CodeOf(err) != dsherr.Usage {
		t.Errorf("--source-cache with dsh: %v, want USAGE", err)
	}
	if after := dirState(t, dir); !reflect.DeepEqual(before, after) {
		t.Errorf("a dsh: read changed the directory:\nbefore %v\nafter  %v", before, after)
	}
	missing, _ := ParseSource("dsh:" + filepath.Join(dir, "missing.db"))
	if _, err := Open(ctx, missing, Options{}); !errors.Is(err, backend.ErrNoDatabase) || dsherr.CodeOf(err) != dsherr.StoreUnavailable {
		t.Errorf("missing file: %v, want STORE_UNAVAILABLE wrapping ErrNoDatabase", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "missing.db")); !os.IsNotExist(err) {
		t.Errorf("a read created the missing database: %v", err)
	}
	if _, err := OpenStore(ctx, spec, Options{}); dsherr.CodeOf(err) != dsherr.Usage {
		t.Errorf("OpenStore(dsh:…) = %v, want USAGE: a source is only read", err)
	}
}

// dirState is every file in dir with its size and modification time.
func dirState(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		b, _ := os.ReadFile(p)
		out[p] = fi.ModTime().String() + " " + string(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
