package subagent

import (
	"github.com/dsh-project/dsh/internal/corpus"
	"github.com/dsh-project/dsh/internal/dshcompat"
	"github.com/dsh-project/dsh/internal/dshfixtures"

	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-project/dsh/internal/dshformat"
	"github.com/dsh-project/dsh/internal/session"
)

// foreignCorpus is a DSH JSONL corpus written in a test directory.
type foreignCorpus struct {
	t   *testing.T
	dir string
}

func newForeignCorpus(t *testing.T) *foreignCorpus {
	fc := &foreignCorpus{t: t, dir: t.TempDir()}
	fc.write(session.Header{ID: "parent", CreatedAt: 1, Cwd: strp("/work")})
	return fc
}

// write stores a session as DSH's JSONL persistence writes it and returns
// the file.
func (fc *foreignCorpus) write(h session.Header, events ...session.Event) string {
	fc.t.Helper()
	path, err := dshformat.WriteJSONL(context.Background(), fc.dir, h, events, dshformat.WriteOptions{Compression: dshformat.CompressionNone})
	if err != nil {
		fc.t.Fatal(err)
	}
	return path
}

// child writes a subagent child of parent whose log is one continuable
// descriptor with label, and returns its file.
func (fc *foreignCorpus) child(id string, createdAt int64, label string, opts ...headerOpt) string {
	fc.t.Helper()
	h := childHeader(id, "parent", createdAt)
	for _, o := range opts {
		o(&h)
	}
	return fc.write(h, descriptorEvent(0, fmt.Sprintf(`{"version":2,"mode":"continuable","provider":"spawn","label":%q}`, label)))
}

// lister opens the corpus and returns a foreign lister whose cold reads
// are counted, with cache (a projection cache file) as rung 2.
func (fc *foreignCorpus) lister(cache *dshformat.CacheFile) (*Lister, *observedReader) {
	fc.t.Helper()
	src, err := dshformat.OpenJSONL(context.Background(), fc.dir)
	if err != nil {
		fc.t.Fatal(err)
	}
	fc.t.Cleanup(func() { src.Close() })
	c, err := dshformat.NewCorpus(context.Background(), src, "jsonl:"+fc.dir)
	if err != nil {
		fc.t.Fatal(err)
	}
	l := NewCorpusLister(c, cache, 1)
	reads := &observedReader{ColdReader: l.Cold, counts: map[string]int{}}
	l.Cold = reads
	return l, reads
}

// dshCacheFile writes DSH's projection cache file with the given records
// (session id → record JSON) and reads it back.
func dshCacheFile(t *testing.T, records map[string]string) *dshformat.CacheFile {
	t.Helper()
	var sessions []string
	for id, rec := range records {
		sessions = append(sessions, fmt.Sprintf("%q: %s", id, rec))
	}
	doc := `{"unit": {"name": "session_projcache", "version": 3}, "global": null, "tables": {"sessions": {` + strings.Join(sessions, ",") + `}}}` + "\n"
	path := filepath.Join(t.TempDir(), "session_projcache.json")
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := dshformat.ReadCacheFile(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// cachedRecord is a record whose subagent row says the child is
// continuable with label "from cache".
func cachedRecord(identity string, ver int) string {
	return fmt.Sprintf(`{"identity": %s, "rows": {"subagent": {"ver": %d, "seq": 0, "val": {"identity": {"mode": "continuable", "label": "from cache", "seq": 0}}}}}`, identity, ver)
}

// DSH's projection cache file serves rung 2 only under DSH's rules: a record
// whose identity (createdAt, cwd) matches the header and whose subagent row
// has the unit's state version and a valid view, for an unseeded child. Any
// other record is a miss — the child's log is read — never a verdict.
func TestForeignListerDSHCacheRung2(t *testing.T) {
	fc := newForeignCorpus(t)
	fc.child("a-hit", 2, "from log")
	fc.child("b-created", 3, "from log")
	fc.child("c-cwd", 4, "from log")
	fc.child("d-version", 5, "from log")
	fc.child("e-seeded", 6, "from log", seeded(0))
	fc.child("f-bad-view", 7, "from log")
	fc.child("g-no-identity", 8, "from log")
	fc.child("h-other-cwd", 9, "from log")
	cache := dshCacheFile(t, map[string]string{
		"a-hit":     cachedRecord(`{"createdAt": 2, "cwd": "/work"}`, UnitStateVersion),
		"b-created": cachedRecord(`{"createdAt": 99, "cwd": "/work"}`, UnitStateVersion),
		"c-cwd":     cachedRecord(`{"createdAt": 4}`, UnitStateVersion),
		"d-version": cachedRecord(`{"createdAt": 5, "cwd": "/work"}`, UnitStateVersion-1),
		"e-seeded":  cachedRecord(`{"createdAt": 6, "cwd": "/work"}`, UnitStateVersion),
		"f-bad-view": `{"identity": {"createdAt": 7, "cwd": "/work"}, "rows": {"subagent": {"ver": 2, "seq": 0,
			"val": {"identity": {"mode": "sideways", "seq": 0}}}}}`,
		"g-no-identity": `{"identity": {"createdAt": 8, "cwd": "/work"}, "rows": {"subagent": {"ver": 2, "seq": 0, "val": {}}}}`,
		"h-other-cwd":   cachedRecord(`{"createdAt": 9, "cwd": "/elsewhere"}`, UnitStateVersion),
	})
	l, reads := fc.lister(cache)
	rows, err := l.ListChildren(context.Background(), "parent")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 8 {
		t.Fatalf("rows %+v", rows)
	}
	for _, r := range rows {
		wantLabel, wantReads := "from log", 1
		if r.ID == "a-hit" {
			wantLabel, wantReads = "from cache", 0
		}
		if r.Kind != KindChild || r.Label == nil || *r.Label != wantLabel || r.Activity != ActivityInactive {
			t.Errorf("%s: row %+v, want a child labelled %q", r.ID, r, wantLabel)
		}
		if got := reads.count(r.ID); got != wantReads {
			t.Errorf("%s: %d log reads, want %d", r.ID, got, wantReads)
		}
	}
}

// A foreign cold read fails exactly when DSH's inspect would: a log that
// fails validation, a later format version and committed damage make the
// row unavailable; a torn tail is cut off and the child lists.
func TestForeignColdReadVerdicts(t *testing.T) {
	ctx := context.Background()
	fc := newForeignCorpus(t)
	fc.child("a-ok", 2, "fine")
	appendTo(t, fc.child("b-torn", 3, "torn"), `{"type":"turn/start","seq":1,"time":1,"da`)
	invalid := childHeader("c-invalid", "parent", 4)
	fc.write(invalid, descriptorEvent(0, `{"version":2,"mode":"continuable","provider":"spawn","label":"x"}`),
		session.Event{Type: "no/such-type", Seq: 1, Time: 1, Data: json.RawMessage(`{}`)})
	later := filepath.Join(fc.dir, "later", "session.jsonl")
	if err := os.MkdirAll(filepath.Dir(later), 0o700); err != nil {
		t.Fatal(err)
	}
	line := strings.Replace(string(childHeader("d-later", "parent", 5).MarshalJSONL()), `"version":0`, `"version":3`, 1)
	if err := os.WriteFile(later, []byte(line+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	l, _ := fc.lister(nil)
	rows, err := l.ListChildren(ctx, "parent")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range rows {
		got[r.ID] = string(r.Kind) + ":" + string(r.Reason)
	}
	want := map[string]string{"a-ok": "child:", "b-torn": "child:", "c-invalid": "diagnostic:unavailable", "d-later": "diagnostic:unavailable"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("rows %v, want %v", got, want)
	}

	_, _, err = l.Cold.ColdRead(ctx, "c-invalid", nil)
	var ve *session.ValidationError
	if !errors.As(err, &ve) || ve.Seq != 1 {
		t.Errorf("c-invalid: %v, want a validation error at seq 1", err)
	}
	_, _, err = l.Cold.ColdRead(ctx, "d-later", nil)
	var refusal *dshformat.UnsupportedVersionError
	if !errors.As(err, &refusal) || !strings.Contains(err.Error(), "unsupported DSH session format version 3") {
		t.Errorf("d-later: %v, want DSH's format refusal", err)
	}
	h, events, err := l.Cold.ColdRead(ctx, "b-torn", []string{session.TypeDescriptor})
	if err != nil || h.ID != "b-torn" || len(events) != 1 || events[0].Type != session.TypeDescriptor {
		t.Errorf("b-torn: %v %v %v", h, events, err)
	}
}

func appendTo(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}

// Over DSH's own corpora read in place, the rows are DSH's, and the logs
// read are the ones DSH read: every cold child without the cache file, and
// with it only those whose record cannot serve — under 0.1.0-rc.8, and
// under seeds too: these corpora have no seeded child (j-medium's fork
// children were forked before the parent's first turn ended), the only
// children the later revision reads where rc.8 served the cache.
func TestForeignListerOracleReads(t *testing.T) {
	for _, profile := range []dshcompat.Profile{dshcompat.Seeds, dshcompat.RC8} {
		for _, name := range dshfixtures.OracleCorpora {
			t.Run(string(profile)+"/"+name, func(t *testing.T) { checkForeignOracleReads(t, profile, name) })
		}
	}
}

func checkForeignOracleReads(t *testing.T, profile dshcompat.Profile, name string) {
	ctx := context.Background()
	exp := dshfixtures.LoadOracle(t, name)
	dir := exp.Dir
	cache, err := dshformat.ReadCacheFile(ctx, filepath.Join(dir, exp.Files.ProjectionCache))
	if err != nil {
		t.Fatal(err)
	}
	for variant, file := range map[string]*dshformat.CacheFile{"jsonl": nil, "jsonl+cache": cache} {
		for key, want := range exp.Listings {
			fc := &foreignCorpus{t: t, dir: filepath.Join(dir, exp.Files.JSONL)}
			l, reads := fc.lister(file)
			l.Profile = profile
			var rows []Row
			if want.Scope(t) == corpus.ScopeDescendants {
				rows, err = l.ListDescendants(ctx, want.ID)
			} else {
				rows, err = l.ListChildren(ctx, want.ID)
			}
			if err != nil {
				t.Fatal(err)
			}
			var dshRows []struct {
				Kind  string  `json:"kind"`
				ID    string  `json:"id"`
				Label *string `json:"label"`
			}
			if err := json.Unmarshal(want.Result, &dshRows); err != nil {
				t.Fatal(err)
			}
			if len(rows) != len(dshRows) {
				t.Fatalf("%s %s: %d rows, want %d", variant, key, len(rows), len(dshRows))
			}
			for i, r := range rows {
				w := dshRows[i]
				if string(r.Kind) != w.Kind || r.ID != w.ID || fmt.Sprint(deref(r.Label)) != fmt.Sprint(deref(w.Label)) {
					t.Errorf("%s %s row %d: %+v, want %+v", variant, key, i, r, w)
				}
			}
			total := 0
			for _, r := range rows {
				total += reads.count(r.ID)
			}
			if total != want.Inspections[variant] {
				t.Errorf("%s %s: %d log reads, DSH made %d", variant, key, total, want.Inspections[variant])
			}
		}
	}
}

func deref(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}
