package main

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/dsh-project/dsh/internal/location"
	"github.com/dsh-project/dsh/internal/pgtest"
)

// The damage catalogue (issue #11): for every kind of damage, built as a
// JSONL corpus (plain, and zstd as DSH writes by default) and as DSH's
// schema-17 store where the form can hold it, the
// four ways of looking at one corpus agree — `list --source` and `import` +
// `list` print the same rows (children and descendants, JSON and list_agents
// text), `diagnose --source` and `import` + `diagnose` the same rows and
// findings with the same exit status, every damaged session has a finding,
// and whatever import cannot keep (a file without a readable header, a
// refused format) is reported by import with its file (exit 1) and recorded
// by the store, so that diagnose of the database reports it as diagnose
// --source does (issue 23: in place = imported = audited covers what import
// refuses); importing again changes nothing the audit sees.
//
// The corpus: parent p; the damaged child c with a grandchild g below it;
// a healthy sibling s. c's log is a descriptor and two completed turns,
// the first holding a session/title at seq 2 that most kinds damage.

const (
	catHeaderP = `{"type":"session","version":0,"id":"p","createdAt":1,"cwd":"/work","delegationDepth":0}`
	catHeaderC = `{"type":"session","version":0,"id":"c","createdAt":2,"cwd":"/work","parentSession":"p","origin":"subagent","delegationDepth":1}`
	catHeaderG = `{"type":"session","version":0,"id":"g","createdAt":3,"cwd":"/work","parentSession":"c","origin":"subagent","delegationDepth":2}`
	catHeaderS = `{"type":"session","version":0,"id":"s","createdAt":4,"cwd":"/work","parentSession":"p","origin":"subagent","delegationDepth":1}`
)

func catDescriptor(label string) string {
	return `{"type":"subagent/descriptor","seq":0,"time":2,"data":{"version":2,"mode":"continuable","provider":"spawn","label":"` + label + `"}}`
}

// catChildLines is c's healthy log.
func catChildLines() []string {
	return []string{
		catDescriptor("damaged"),
		`{"type":"turn/start","seq":1,"time":3,"data":{"turn":1}}`,
		`{"type":"session/title","seq":2,"time":3,"data":{"title":"t"}}`,
		`{"type":"turn/end","seq":3,"time":3,"data":{"turn":1,"reason":{"kind":"completed"}}}`,
		`{"type":"turn/start","seq":4,"time":4,"data":{"turn":2}}`,
		`{"type":"turn/end","seq":5,"time":4,"data":{"turn":2,"reason":{"kind":"completed"}}}`,
	}
}

// catSession is one session of the logical corpus.
type catSession struct {
	id, header string
	lines      []string
	// tail is appended after the last line as is (a torn record).
	tail string
	// JSONL only: no header line, both compressions, zstd, a cut, a
	// copy in a second project directory, text before the header.
	noHeader, both, zstd, twice bool
	cut                         int // bytes cut off the end of the zstd file
	prefix                      string
	// schema-17 only: no sessions row; rows replacing lines by index.
	noRow bool
	rows  map[int]catRow
	seed  *int64
	// JSONL only (issue 23): the zstd file's bytes as given; what stands
	// in the session file's place instead of a file (see catSpecials);
	// a FIFO loose.jsonl beside the project directories; the file
	// removed once the source is enumerated (see vanishAfterEnumeration);
	// the session directory when it is not the id.
	rawZstd []byte
	special string
	loose   bool
	vanish  bool
	dir     string
}

// catSpecials make what is not a regular file stand at a session file's
// path.
var catSpecials = map[string]func(path string) error{
	"fifo":    func(p string) error { return syscall.Mkfifo(p, 0o600) },
	"zero":    func(p string) error { return os.Symlink("/dev/zero", p) },
	"urandom": func(p string) error { return os.Symlink("/dev/urandom", p) },
	"dir":     func(p string) error { return os.Mkdir(p, 0o700) },
}

// catRawBlocks is a zstd frame of stored (raw) blocks, 1 KiB window, no
// declared size: each block holds the given text, so the damage sits in
// the block a test chooses. cut bytes are taken off the end, tearing the
// last block.
func catRawBlocks(blocks []string, cut int) []byte {
	out := []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x00}
	for i, b := range blocks {
		h := uint32(len(b)) << 3
		if i == len(blocks)-1 {
			h |= 1
		}
		out = append(out, byte(h), byte(h>>8), byte(h>>16))
		out = append(out, b...)
	}
	return out[:len(out)-cut]
}

// catRow is a schema-17 events row with free column values.
type catRow struct {
	seq       int64
	typ       string
	data      any
	ignorable any
}

// catKind is one damage kind: it damages c (or its files) for a form and
// reports false when the form cannot hold the damage.
type catKind struct {
	name   string
	damage func(c *catSession, sqlite bool) bool
}

var zstdEnc = func() *zstd.Encoder {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderCRC(true))
	if err != nil {
		panic(err)
	}
	return enc
}()

var catKinds = []catKind{
	{"torn tail", func(c *catSession, sqlite bool) bool {
		if sqlite {
			c.rows = map[int]catRow{6: {seq: 6, typ: "turn/start", data: `{"turn":`}}
			return true
		}
		c.tail = `{"type":"turn/start","seq":6,"ti`
		return true
	}},
	{"unparsable line mid-log", func(c *catSession, sqlite bool) bool {
		if sqlite {
			c.rows = map[int]catRow{2: {seq: 2, typ: "session/title", data: `{not json`}}
			return true
		}
		c.lines[2] = `{not json}`
		return true
	}},
	{"seq gap", func(c *catSession, _ bool) bool {
		c.lines = slices.Delete(c.lines, 2, 3)
		return true
	}},
	{"duplicate seq", func(c *catSession, sqlite bool) bool {
		c.lines = slices.Insert(c.lines, 2, c.lines[1])
		return !sqlite // the primary key (session_id, seq) cannot hold it
	}},
	{"header line missing", func(c *catSession, sqlite bool) bool {
		c.noHeader, c.noRow = true, true
		return true
	}},
	{"header not JSON", func(c *catSession, sqlite bool) bool {
		c.header = `{"type":"session","version":0,"id":"c"`
		return !sqlite // a sessions row has typed columns, not JSON
	}},
	{"header of the wrong session", func(c *catSession, sqlite bool) bool {
		c.header = strings.Replace(c.header, `"id":"c"`, `"id":"s"`, 1)
		return !sqlite // a sessions row is its id
	}},
	{"unknown event type", func(c *catSession, _ bool) bool {
		c.lines[2] = `{"type":"no/such-type","seq":2,"time":3,"data":{}}`
		return true
	}},
	{"missing surfaceOp", func(c *catSession, _ bool) bool {
		c.lines[2] = `{"type":"user/message","seq":2,"time":3,"data":{"content":[{"type":"text","text":"hi"}],"source":{"kind":"user"},"role":"user","id":"m1"}}`
		return true
	}},
	{"invalid compaction range", func(c *catSession, _ bool) bool {
		c.lines[2] = `{"type":"user/message","seq":2,"time":3,"data":{"content":[{"type":"text","text":"hi"}],"source":{"kind":"user"},"role":"user","id":"m1"},"surfaceOp":{"op":"replace","start":5,"end":2}}`
		return true
	}},
	{"truncated zstd frame", func(c *catSession, sqlite bool) bool {
		if sqlite {
			frame := zstdEnc.EncodeAll([]byte(`{"title":"`+strings.Repeat("t", 5000)+`"}`), nil)
			c.rows = map[int]catRow{2: {seq: 2, typ: "session/title", data: frame[:len(frame)-5]}}
			return true
		}
		c.zstd, c.cut = true, 5
		return true
	}},
	{"zstd file and plain file for one id", func(c *catSession, sqlite bool) bool {
		c.both = true
		return !sqlite
	}},
	{"packed row with a bad length", func(c *catSession, sqlite bool) bool {
		bad := `{"turn":1,"step":1,"index":0,"dt":[0],"texts":["a","b","c"]}`
		if sqlite {
			c.rows = map[int]catRow{2: {seq: 2, typ: "text-chunks", data: bad, ignorable: int64(0)}}
			return true
		}
		c.lines[2] = `{"type":"text-chunks","seq0":2,"time0":3,"data":` + bad + `}`
		return true
	}},
	{"events.data not JSON", func(c *catSession, sqlite bool) bool {
		if sqlite {
			c.rows = map[int]catRow{2: {seq: 2, typ: "session/title", data: `{broken`}}
			return true
		}
		c.lines[2] = `{"type":"session/title","seq":2,"time":3,"data":{broken}`
		return true
	}},
	{"descriptor malformed", func(c *catSession, _ bool) bool {
		c.lines[0] = `{"type":"subagent/descriptor","seq":0,"time":2,"data":{"version":2,"mode":"bogus","provider":"spawn"}}`
		return true
	}},
	// What import refuses to store (issue 23): the store records each
	// refusal, so that the database audits and lists as the source does.
	{"later format version", func(c *catSession, _ bool) bool {
		c.header = strings.Replace(c.header, `"version":0`, `"version":5`, 1)
		return true
	}},
	{"byte order mark before the header", func(c *catSession, sqlite bool) bool {
		c.prefix = "\ufeff"
		return !sqlite
	}},
	{"empty id", func(c *catSession, sqlite bool) bool {
		c.header = strings.Replace(c.header, `"id":"c"`, `"id":""`, 1)
		return !sqlite // a sessions row is its id
	}},
	{"id in two projects", func(c *catSession, sqlite bool) bool {
		c.twice = true
		return !sqlite
	}},
	// Issue 23 item 1: the final frame is torn, and the complete block
	// read from it holds an unparsable line before a committed turn/end.
	{"damaged zstd", func(c *catSession, sqlite bool) bool {
		lines := c.lines
		c.rawZstd = append(zstdEnc.EncodeAll([]byte(c.header+"\n"), nil), catRawBlocks([]string{
			strings.Join([]string{lines[0], lines[1], `{not json}`, lines[3]}, "\n") + "\n",
			strings.Join(lines[4:], "\n") + "\n",
		}, 10)...)
		return !sqlite
	}},
	// Issue 23 item 3: what stands in place of c's log is not a file.
	{"non-regular file: FIFO", func(c *catSession, sqlite bool) bool {
		c.special = "fifo"
		return !sqlite
	}},
	{"non-regular file: link to /dev/zero", func(c *catSession, sqlite bool) bool {
		c.special = "zero"
		return !sqlite
	}},
	{"non-regular file: link to /dev/urandom", func(c *catSession, sqlite bool) bool {
		c.special = "urandom"
		return !sqlite
	}},
	{"non-regular file: directory", func(c *catSession, sqlite bool) bool {
		c.special = "dir"
		return !sqlite
	}},
	{"non-regular file: loose FIFO", func(c *catSession, sqlite bool) bool {
		c.loose = true
		return !sqlite
	}},
	// Issue 23 item 5: DSH verifies path identity.
	{"id mismatch", func(c *catSession, sqlite bool) bool {
		c.dir = "c-moved"
		return !sqlite
	}},
	// Issue 23 item 4: c's log is gone by the time it is read.
	{"vanished file", func(c *catSession, sqlite bool) bool {
		c.vanish = true
		return !sqlite
	}},
	{"id mismatch: duplicate id key", func(c *catSession, sqlite bool) bool {
		// JSON readers keep the last: c2, in c's directory.
		c.header = strings.Replace(c.header, `"cwd"`, `"id":"c2","cwd"`, 1)
		return !sqlite
	}},
	// Bytes that are not UTF-8 inside event data read as U+FFFD (as DSH
	// reads them), with an EVENT_TEXT_REPLACED finding in place and after
	// import (issue 23 item 12).
	{catInvalidUTF8, func(c *catSession, sqlite bool) bool {
		if sqlite {
			c.rows = map[int]catRow{2: {seq: 2, typ: "session/title", data: "{\"title\":\"t\xff\"}"}}
			return true
		}
		c.lines[2] = "{\"type\":\"session/title\",\"seq\":2,\"time\":3,\"data\":{\"title\":\"t\xff\"}}"
		return true
	}},
	{"descriptor only in the seed", func(c *catSession, _ bool) bool {
		one := int64(1)
		c.seed = &one
		c.header = strings.Replace(c.header, `"origin"`, `"seedLength":1,"origin"`, 1)
		return true
	}},
}

const catInvalidUTF8 = "invalid UTF-8 in event data"

// TestDamageCatalogueTextReplaced holds the catalogue's rule for bytes that
// are not UTF-8 in event data on both backends, the finding named: the
// session imports, import says the text was replaced, and diagnose of
// either database reports EVENT_TEXT_REPLACED at seq 2 as diagnose
// --source does.
func TestDamageCatalogueTextReplaced(t *testing.T) {
	isolateEnv(t)
	i := slices.IndexFunc(catKinds, func(k catKind) bool { return k.name == catInvalidUTF8 })
	for _, form := range []string{"jsonl", "jsonl-zstd", "dsh-sqlite"} {
		t.Run(form, func(t *testing.T) {
			var pg string
			if pgtest.Required() {
				pg = pgtest.NewDatabase(t)
			}
			diag := checkCatalogue(t, catCorpus(catKinds[i], form == "dsh-sqlite"), form, pg, [][]string{nil}, "c", "EVENT_TEXT_REPLACED")
			if !strings.Contains(diag[0]["c"], "EVENT_TEXT_REPLACED/warning@2") {
				t.Errorf("c: %s, want EVENT_TEXT_REPLACED/warning@2", diag[0]["c"])
			}
			if strings.Contains(diag[0]["s"]+diag[0]["g"]+diag[0]["p"], "EVENT_TEXT_REPLACED") {
				t.Errorf("a clean session reports replaced text: %v", diag[0])
			}
		})
	}
}

// catCorpus is the logical corpus with c damaged by kind for the form, or
// nil when the form cannot hold the damage.
func catCorpus(kind catKind, sqlite bool) []*catSession {
	c := &catSession{id: "c", header: catHeaderC, lines: catChildLines()}
	if !kind.damage(c, sqlite) {
		return nil
	}
	return []*catSession{
		{id: "p", header: catHeaderP},
		c,
		{id: "g", header: catHeaderG, lines: []string{catDescriptor("grandchild")}},
		{id: "s", header: catHeaderS, lines: []string{catDescriptor("sibling")}},
	}
}

// laterVersion finds a later format's version in a header: its log is
// session.vN.jsonl.
var laterVersion = regexp.MustCompile(`^\{"type":"session","version":([2-9])`)

// writeCatJSONL lays the corpus out as DSH's JSONL store does.
func writeCatJSONL(t *testing.T, dir string, sessions []*catSession) {
	t.Helper()
	for _, s := range sessions {
		text := []byte(s.prefix)
		if !s.noHeader {
			text = append(text, s.header+"\n"...)
		}
		header := len(text)
		for _, l := range s.lines {
			text = append(text, l+"\n"...)
		}
		text = append(text, s.tail...)
		dirName := s.id
		if s.dir != "" {
			dirName = s.dir
		}
		dirs := []string{filepath.Join(dir, "--work--", dirName)}
		if s.twice {
			dirs = append(dirs, filepath.Join(dir, "--other--", dirName))
		}
		write := func(name string, b []byte) {
			for _, sdir := range dirs {
				if err := os.MkdirAll(sdir, 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(sdir, name), b, 0o600); err != nil {
					t.Fatal(err)
				}
			}
		}
		if s.loose {
			if err := syscall.Mkfifo(filepath.Join(dir, "loose.jsonl"), 0o600); err != nil && !os.IsExist(err) {
				t.Fatal(err)
			}
		}
		name := "session.jsonl"
		if v := laterVersion.FindStringSubmatch(s.header); v != nil {
			name = "session.v" + v[1] + ".jsonl"
		}
		switch {
		case s.special != "":
			if err := os.MkdirAll(dirs[0], 0o700); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(dirs[0], name)
			if _, err := os.Lstat(p); err == nil {
				continue
			}
			if err := catSpecials[s.special](p); err != nil {
				t.Fatal(err)
			}
			continue
		case s.rawZstd != nil:
			write(name+".zstd", s.rawZstd)
			continue
		}
		if s.zstd || s.both {
			frames := zstdEnc.EncodeAll(text[:header], nil)
			frames = zstdEnc.EncodeAll(text[header:], frames)
			write(name+".zstd", frames[:len(frames)-s.cut])
		}
		if !s.zstd || s.both {
			write(name, text)
		}
	}
}

// writeCatSQLite lays the corpus out as DSH's schema-17 store: one scalar
// row per line, s.rows replacing or adding rows.
func writeCatSQLite(t *testing.T, path string, sessions []*catSession) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := db.Exec(q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	for _, ddl := range []string{
		"CREATE TABLE persistence_state (\n  singleton INTEGER PRIMARY KEY CHECK (singleton = 1),\n  store_id  TEXT NOT NULL\n) STRICT",
		"CREATE TABLE sessions (\n  id               TEXT PRIMARY KEY,\n  version          INTEGER NOT NULL,\n  created_at       INTEGER NOT NULL,\n  cwd              TEXT,\n  parent_session   TEXT,\n  seed_length      INTEGER,\n  origin           TEXT,\n  delegation_depth INTEGER,\n  agent_preset     TEXT,\n  incarnation      TEXT NOT NULL,\n  revision         INTEGER NOT NULL\n) STRICT",
		"CREATE TABLE events (\n  session_id        TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,\n  seq               INTEGER NOT NULL,\n  type              TEXT NOT NULL,\n  time              INTEGER NOT NULL,\n  data              ANY NOT NULL,\n  source_event_seqs ANY,\n  surface_op        TEXT,\n  ignorable         INTEGER CHECK (ignorable IS NULL OR ignorable IN (0, 1)),\n  PRIMARY KEY (session_id, seq)\n) STRICT",
		"INSERT INTO persistence_state (singleton, store_id) VALUES (1, '6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b')",
		"PRAGMA application_id = 1146308688",
		"PRAGMA user_version = 17",
	} {
		exec(ddl)
	}
	for _, s := range sessions {
		var h struct {
			ID              string  `json:"id"`
			Version         int64   `json:"version"`
			CreatedAt       int64   `json:"createdAt"`
			Cwd             *string `json:"cwd"`
			ParentSession   *string `json:"parentSession"`
			SeedLength      *int64  `json:"seedLength"`
			Origin          *string `json:"origin"`
			DelegationDepth *int64  `json:"delegationDepth"`
		}
		if err := json.Unmarshal([]byte(s.header), &h); err != nil {
			t.Fatalf("%s header: %v", s.id, err)
		}
		if !s.noRow {
			exec(`INSERT INTO sessions VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL, '0b6f3a52-1c2d-4e5f-9a8b-7c6d5e4f3a2b', 1)`,
				h.ID, h.Version, h.CreatedAt, h.Cwd, h.ParentSession, h.SeedLength, h.Origin, h.DelegationDepth)
		}
		rows := map[int]catRow{}
		for i, l := range s.lines {
			var e struct {
				Type      string          `json:"type"`
				Seq       int64           `json:"seq"`
				Time      int64           `json:"time"`
				Data      json.RawMessage `json:"data"`
				SurfaceOp json.RawMessage `json:"surfaceOp"`
			}
			if err := json.Unmarshal([]byte(l), &e); err != nil {
				t.Fatalf("%s line %d: %v", s.id, i, err)
			}
			r := catRow{seq: e.Seq, typ: e.Type, data: string(e.Data)}
			rows[i] = r
			if e.SurfaceOp != nil {
				exec(`INSERT INTO events VALUES (?, ?, ?, ?, ?, NULL, ?, NULL)`, s.id, r.seq, r.typ, e.Time, r.data, string(e.SurfaceOp))
				delete(rows, i)
			}
		}
		for i, r := range s.rows {
			rows[i] = r
		}
		for _, r := range rows {
			exec(`INSERT INTO events VALUES (?, ?, ?, 3, ?, NULL, NULL, ?)`, s.id, r.seq, r.typ, r.data, r.ignorable)
		}
	}
}

// catDiagnosis is a diagnose -o json document reduced to what must agree:
// each session's row and findings (code, severity, seq), details aside
// (they name the file or database the data was read from).
type catDiagnosis struct {
	Summary struct {
		BySeverity map[string]int `json:"bySeverity"`
	} `json:"summary"`
	Sessions []struct {
		ID       *string         `json:"id"`
		Row      json.RawMessage `json:"row"`
		RowKind  string          `json:"rowKind"`
		Findings []struct {
			Code     string `json:"code"`
			Severity string `json:"severity"`
			Seq      *int64 `json:"seq"`
			Path     string `json:"path"`
		} `json:"findings"`
	} `json:"sessions"`
}

func (d catDiagnosis) bySession() map[string]string {
	out := map[string]string{}
	for _, s := range d.Sessions {
		id := "<no id>"
		if s.ID != nil {
			id = *s.ID
		}
		var codes []string
		for _, f := range s.Findings {
			seq := "-"
			if f.Seq != nil {
				seq = fmt.Sprint(*f.Seq)
			}
			codes = append(codes, f.Code+"/"+f.Severity+"@"+seq)
		}
		sort.Strings(codes)
		out[id] += fmt.Sprintf("%s %s [%s]; ", s.RowKind, s.Row, strings.Join(codes, " "))
	}
	return out
}

func TestDamageCatalogue(t *testing.T) {
	isolateEnv(t)
	forms := []string{"jsonl", "jsonl-zstd", "dsh-sqlite"}
	if testing.Short() {
		forms = forms[:1] // -short: every kind in one form (all three take about 10 s)
	}
	for _, kind := range catKinds {
		for _, form := range forms {
			sessions := catCorpus(kind, form == "dsh-sqlite")
			if sessions == nil {
				continue
			}
			t.Run(kind.name+"/"+form, func(t *testing.T) {
				// The damaged session is c, by the id its header names
				// as JSON readers take it (the last "id").
				var damaged struct{ ID string }
				if err := json.Unmarshal([]byte(sessions[1].header), &damaged); err != nil {
					damaged.ID = "c"
				}
				if sessions[1].vanish {
					vanishAfterEnumeration(t, "c")
				}
				checkCatalogue(t, sessions, form, "", [][]string{nil}, damaged.ID, "")
			})
		}
	}
}

// writeCatForm lays sessions out in dir as form and returns the --source
// value that reads them.
func writeCatForm(t *testing.T, dir string, sessions []*catSession, form string) string {
	t.Helper()
	switch form {
	case "jsonl-zstd":
		// DSH's default encoding: every log zstd-framed.
		for _, s := range sessions {
			s.zstd = true
		}
		writeCatJSONL(t, filepath.Join(dir, "corpus"), sessions)
		return "jsonl:" + filepath.Join(dir, "corpus")
	case "jsonl":
		writeCatJSONL(t, filepath.Join(dir, "corpus"), sessions)
		return "jsonl:" + filepath.Join(dir, "corpus")
	case "dsh-home":
		// A DSH home as 0.2.x keeps it: zstd logs under sessions/.
		for _, s := range sessions {
			s.zstd = true
		}
		writeCatJSONL(t, filepath.Join(dir, "home", "sessions"), sessions)
		return "dsh-home:" + filepath.Join(dir, "home")
	default:
		writeCatSQLite(t, filepath.Join(dir, "corpus"), sessions)
		return "dsh-sqlite:" + filepath.Join(dir, "corpus")
	}
}

// checkCatalogue checks the catalogue's rule on one corpus in one form,
// imported into a SQLite database (and into the PostgreSQL database pg, when
// given), under each set of global flags in profiles (a --dsh-compat
// profile, or none): `list` in place and after import agree (output and
// exit status), `diagnose` in place and after import report the same rows
// and findings with the same exit status (exit 1 exactly when an error is
// found), and the damaged session has a finding (wantCode, when given,
// among them). It returns the in-place diagnosis by session, per profile.
func checkCatalogue(t *testing.T, sessions []*catSession, form, pg string, profiles [][]string, damaged, wantCode string) []map[string]string {
	t.Helper()
	dir := t.TempDir()
	src := writeCatForm(t, dir, sessions, form)
	dbs := []string{filepath.Join(dir, "dsh.db")}
	if pg != "" {
		dbs = append(dbs, pg)
	}
	unreadable := map[string]bool{}
	importCodes := map[string]int{}
	for _, db := range dbs {
		importOut, importErr, importCode := runDsh(t, "--db", db, "import", src, "-o", "json")
		importCodes[db] = importCode
		var imported struct {
			Sessions []struct {
				ID       *string `json:"id"`
				Location string  `json:"location"`
				Outcome  string  `json:"outcome"`
			} `json:"sessions"`
		}
		if err := json.Unmarshal([]byte(importOut), &imported); err != nil {
			t.Fatalf("import (exit %d): %v\n%s%s", importCode, err, importOut, importErr)
		}
		for _, r := range imported.Sessions {
			switch r.Outcome {
			case "imported":
			case "unreadable":
				if r.Location == "" {
					t.Errorf("import: unreadable session %v reported without its file", r.ID)
				}
				unreadable[r.Location] = true
			default:
				t.Errorf("import: outcome %s for %v", r.Outcome, r.ID)
			}
		}
		if wantCode := map[bool]int{false: 0, true: 1}[len(unreadable) > 0]; importCode != wantCode {
			t.Errorf("import exit %d, want %d\n%s", importCode, wantCode, importErr)
		}
	}
	var diagnoses []map[string]string
	for _, global := range profiles {
		for _, db := range dbs {
			checkCatalogueIn(t, src, db, global, unreadable)
		}
		diagnoses = append(diagnoses, checkCatalogueAudit(t, src, dbs, global, unreadable, damaged, wantCode))
	}
	// Importing again replaces what the first import recorded: the
	// databases still audit as the source does.
	for _, db := range dbs {
		if out, errOut, code := runDsh(t, "--db", db, "import", src); code != importCodes[db] {
			t.Errorf("import again: exit %d, want %d\n%s%s", code, importCodes[db], out, errOut)
		}
	}
	checkCatalogueAudit(t, src, dbs, profiles[0], unreadable, damaged, wantCode)
	return diagnoses
}

// checkCatalogueIn checks that a listing in place and in db agree. A
// listing may fail (DSH 0.1.7 cannot read a parent whose catalog is
// damaged), but it fails the same way in place and after import; without
// a profile it never fails.
func checkCatalogueIn(t *testing.T, src, db string, global []string, unreadable map[string]bool) {
	t.Helper()
	for _, scope := range []string{"children", "descendants"} {
		for _, format := range []string{"json", "agents"} {
			args := append(slices.Clone(global), "list", "--parent", "p", "--scope", scope, "-o", format)
			inPlace, errIn, codeIn := runDsh(t, append([]string{"--source", src}, args...)...)
			after, errAfter, codeAfter := runDsh(t, append([]string{"--db", db}, args...)...)
			if (len(global) == 0 && (codeIn != 0 || codeAfter != 0)) || codeIn != codeAfter || inPlace != after {
				t.Errorf("%v list %s -o %s: in place (exit %d)\n%s%s\nafter import (exit %d)\n%s%s",
					global, scope, format, codeIn, inPlace, errIn, codeAfter, after, errAfter)
			}
		}
	}
}

// checkCatalogueAudit checks that diagnose in place and in each of dbs
// agree, and returns the diagnosis in place.
func checkCatalogueAudit(t *testing.T, src string, dbs, global []string, unreadable map[string]bool, damaged, wantCode string) map[string]string {
	t.Helper()
	diagnose := func(where ...string) (catDiagnosis, int, string) {
		out, errOut, code := runDsh(t, append(append(where, global...), "diagnose", "--all", "-o", "json", "--quiet")...)
		var d catDiagnosis
		if err := json.Unmarshal([]byte(out), &d); err != nil {
			t.Fatalf("diagnose %v %v (exit %d): %v\n%s%s", where, global, code, err, out, errOut)
		}
		return d, code, errOut
	}
	inPlace, codeIn, errIn := diagnose("--source", src)
	in := inPlace.bySession()
	for _, db := range dbs {
		after, codeAfter, errAfter := diagnose("--db", db)
		out := after.bySession()
		for id, got := range out {
			if in[id] != got {
				t.Errorf("diagnose %v %s: in place %s\nafter import %s", global, id, in[id], got)
			}
		}
		// What import could not keep is recorded by the store and
		// reported alike.
		for id, got := range in {
			if _, ok := out[id]; !ok {
				t.Errorf("diagnose %v %s only in place: %s (import reported %v)", global, id, got, unreadable)
			}
		}
		if codeIn != codeAfter {
			t.Errorf("diagnose %v exit %d in place, %d after import\n%s\n%s", global, codeIn, codeAfter, errIn, errAfter)
		}
		if len(unreadable) > 0 && after.Summary.BySeverity["error"] == 0 {
			t.Errorf("import reported %v unreadable, diagnose of the database has no finding for it: %v", unreadable, out)
		}
	}
	// Exit 1 exactly when an error-level finding is reported
	// (a torn tail alone is a warning).
	if wantCode := map[bool]int{false: 0, true: 1}[inPlace.Summary.BySeverity["error"] > 0]; codeIn != wantCode {
		t.Errorf("diagnose in place exit %d, want %d\n%s", codeIn, wantCode, errIn)
	}
	// Every damaged session has a finding: the damaged one, or the file
	// that should have been it, which only the source can show.
	switch {
	case len(unreadable) == 0 && !strings.Contains(in[damaged], "@"):
		t.Errorf("damaged session %s has no finding: %q", damaged, in[damaged])
	case wantCode != "" && !strings.Contains(in[damaged], wantCode+"/"):
		t.Errorf("%v: damaged session %s has no %s finding: %q", global, damaged, wantCode, in[damaged])
	}
	if strings.HasPrefix(wantCode, "CATALOG_") {
		checkCatalogueScopes(t, src, dbs, global, damaged, wantCode)
	}
	return in
}

// checkCatalogueScopes checks that catalog damage is reported by the
// audits that do not examine every session: the default one (subagent
// sessions) and --parent p in both scopes. A parent's unreadable catalog
// hides all its children from DSH 0.1.7+, so none of these may audit
// clean, in place or after import.
func checkCatalogueScopes(t *testing.T, src string, dbs, global []string, damaged, wantCode string) {
	t.Helper()
	for _, sel := range [][]string{nil, {"--parent", "p"}, {"--parent", "p", "--scope", "descendants"}} {
		diagnose := func(where ...string) (map[string]string, int) {
			args := append(append(append(where, global...), "diagnose", "-o", "json", "--quiet"), sel...)
			out, errOut, code := runDsh(t, args...)
			var d catDiagnosis
			if err := json.Unmarshal([]byte(out), &d); err != nil {
				t.Fatalf("%v (exit %d): %v\n%s%s", args, code, err, out, errOut)
			}
			return d.bySession(), code
		}
		in, codeIn := diagnose("--source", src)
		if !strings.Contains(in[damaged], wantCode+"/") {
			t.Errorf("%v diagnose %v: damaged session %s has no %s finding: %q", global, sel, damaged, wantCode, in)
		}
		// An error-level catalog finding fails the run (so does any
		// other error finding, such as rc.8's unread descriptors).
		anyError := slices.ContainsFunc(slices.Collect(maps.Values(in)), func(s string) bool { return strings.Contains(s, "/error@") })
		if wantExit := map[bool]int{false: 0, true: 1}[anyError]; codeIn != wantExit {
			t.Errorf("%v diagnose %v: exit %d, want %d: %q", global, sel, codeIn, wantExit, in)
		}
		for _, db := range dbs {
			after, codeAfter := diagnose("--db", db)
			if !maps.Equal(in, after) || codeIn != codeAfter {
				t.Errorf("%v diagnose %v: in place (exit %d) %q\nafter import (exit %d) %q", global, sel, codeIn, in, codeAfter, after)
			}
		}
	}
}

// vanishAfterEnumeration makes the files of session directory dir vanish
// from every source once a command has enumerated it and before any log
// is read, and lays them out again before the next command.
func vanishAfterEnumeration(t *testing.T, dir string) {
	removed := map[string][]byte{}
	testSourceEnumerated = func(loc location.Spec) {
		filepath.WalkDir(loc.Arg, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() && filepath.Base(filepath.Dir(p)) == dir {
				b, err := os.ReadFile(p)
				if err != nil {
					t.Error(err)
				}
				removed[p] = b
				os.Remove(p)
			}
			return nil
		})
	}
	testBeforeRun = func() {
		for p, b := range removed {
			if err := os.WriteFile(p, b, 0o600); err != nil {
				t.Error(err)
			}
		}
	}
	t.Cleanup(func() { testSourceEnumerated, testBeforeRun = nil, nil })
}
