package diagnose

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-project/dsh/internal/catalog"
	"github.com/dsh-project/dsh/internal/dshformat"
	"github.com/dsh-project/dsh/internal/projcache"
)

// inPlace is a DSH corpus read in place, as `--source` reads one.
type inPlace struct {
	*dshformat.Corpus
	*projcache.MemoryRecords
}

// fuzzParentLog is parent p's log in format version with two valid facts
// (for c and s) and, at position pos among them, the line
// {"type":"subagent/catalog","seq":…,"time":…,"data":<payload>} (with
// "ignorable":true when ignorable).
func fuzzParentLog(version, pos int, payload []byte, ignorable bool) []byte {
	var b bytes.Buffer
	if version == 0 {
		b.WriteString(`{"type":"session","version":0,"id":"p","createdAt":1,"cwd":"/work","delegationDepth":0}` + "\n")
	} else {
		fmt.Fprintf(&b, `{"type":"session","version":%d,"id":"p","createdAt":1,"cwd":"/work","isSeeded":false,"delegationDepth":0}`+"\n", version)
	}
	facts := []string{
		`{"version":0,"childId":"c","childCreatedAt":2,"mode":"continuable","label":"c"}`,
		`{"version":0,"childId":"s","childCreatedAt":3,"mode":"one-shot"}`,
	}
	pos %= len(facts) + 1
	for seq := range len(facts) + 1 {
		fmt.Fprintf(&b, `{"type":"subagent/catalog","seq":%d,"time":%d,"data":`, seq, 10+seq)
		switch {
		case seq == pos:
			b.Write(payload)
		case seq > pos:
			b.WriteString(facts[seq-1])
		default:
			b.WriteString(facts[seq])
		}
		if seq == pos && ignorable {
			b.WriteString(`,"ignorable":true`)
		}
		b.WriteString("}\n")
	}
	return b.Bytes()
}

// cleanCatalog reports whether the parent log's catalog lines are exactly
// what no finding should be reported for: every line is a JSON object, the
// format carries catalog events (V2+), and every catalog event's data is a
// valid fact naming a distinct child that has a session.
func cleanCatalog(version int, log []byte) bool {
	if version == 0 {
		return false
	}
	seen := map[string]bool{}
	for i, line := range bytes.Split(bytes.TrimSuffix(log, []byte("\n")), []byte("\n")) {
		var e struct {
			Type string          `json:"type"`
			Data json.RawMessage `json:"data"`
		}
		if !json.Valid(line) || json.Unmarshal(line, &e) != nil {
			return false
		}
		if i == 0 || e.Type != "subagent/catalog" {
			continue
		}
		f, err := catalog.ParseFact(e.Data)
		// A missing child is a finding, except an external entry (DSH
		// 0.2.x), a leaf without a session.
		named := f.ChildID == "c" || f.ChildID == "s" || f.ChildID == "p" || f.Mode == catalog.ModeExternal
		if err != nil || seen[f.ChildID] || !named {
			return false
		}
		seen[f.ChildID] = true
	}
	return true
}

// A catalog fact of any shape, at any position, in a parent log of any
// format, read in place, gives a coded finding on the parent (or on the
// child it names) — never a panic, an error, or silence.
func FuzzCatalogFactFinding(f *testing.F) {
	for _, seed := range []string{
		`{"version":0,"childId":"x","childCreatedAt":-1,"mode":"continuable","label":"x"}`,
		`{"version":9,"childId":"x","childCreatedAt":1,"mode":"one-shot"}`,
		`{"version":1,"childId":"c","childCreatedAt":2,"mode":"unknown"}`,
		`{"version":2,"childId":"e","childCreatedAt":2,"mode":"external"}`,
		`{"version":0,"childId":"c","childCreatedAt":2,"mode":"continuable","label":"c","plugin":1}`,
		`"x"`, `null`, `[]`, `{}`, `{"version":"0"}`, `{broken`, `1,"surfaceOp":"append"`,
		`{"version":0,"childId":"m","childCreatedAt":9007199254740993,"mode":"one-shot"}`,
	} {
		for _, version := range []uint8{0, 2, 3, 4} {
			f.Add(version, uint8(1), []byte(seed), false)
		}
	}
	f.Add(uint8(0), uint8(0), []byte(`{"version":0,"childId":"m","childCreatedAt":1,"mode":"one-shot"}`), true)
	// A third valid fact, for a child that exists: a clean catalog.
	f.Add(uint8(3), uint8(2), []byte(`{"version":0,"childId":"p","childCreatedAt":1,"mode":"one-shot"}`), false)
	f.Fuzz(func(t *testing.T, v, pos uint8, payload []byte, ignorable bool) {
		version := []int{0, 2, 3, 4}[v%4]
		dir := t.TempDir()
		log := fuzzParentLog(version, int(pos), payload, ignorable)
		name := "p.jsonl"
		if version > 0 {
			name = fmt.Sprintf("p.v%d.jsonl", version)
		}
		files := map[string][]byte{
			name: log,
			"c.v4.jsonl": []byte(`{"type":"session","version":4,"id":"c","createdAt":2,"cwd":"/work","parentSession":"p","isSeeded":false,"origin":"subagent","delegationDepth":1}
{"type":"subagent/descriptor","seq":0,"time":2,"data":{"version":3,"mode":"continuable","provider":"spawn","label":"c"}}
`),
			"s.v4.jsonl": []byte(`{"type":"session","version":4,"id":"s","createdAt":3,"cwd":"/work","parentSession":"p","isSeeded":false,"origin":"subagent","delegationDepth":1}
{"type":"subagent/descriptor","seq":0,"time":3,"data":{"version":3,"mode":"one-shot","provider":"spawn"}}
`),
		}
		for name, b := range files {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		ctx := context.Background()
		src, err := dshformat.OpenJSONL(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		defer src.Close()
		c, err := dshformat.NewCorpus(ctx, src, dir)
		if err != nil {
			t.Fatal(err)
		}
		var reports []Report
		_, err = Run(ctx, inPlace{c, projcache.NewMemoryRecords()}, Options{Strict: true, Select: Selection{All: true}}, func(r Report) error {
			reports = append(reports, r)
			return nil
		})
		if err != nil {
			t.Fatalf("audit: %v\n%s", err, log)
		}
		var onParent []string
		for _, r := range reports {
			for _, f := range r.Findings {
				if f.Code.Severity() != f.Severity || f.Detail == "" {
					t.Errorf("malformed finding %+v", f)
				}
				if r.ID == "p" || strings.HasPrefix(string(f.Code), "CATALOG_") {
					onParent = append(onParent, string(f.Code))
				}
			}
		}
		// Exactly: a clean catalog gives no finding at all (so the
		// parent's log was read), any other one at least one.
		if clean := cleanCatalog(version, log); clean != (len(onParent) == 0) {
			t.Errorf("clean catalog %v, findings %v\n%s", clean, onParent, log)
		}
	})
}
