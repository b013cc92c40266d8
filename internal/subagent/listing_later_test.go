package subagent

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/dsh-project/dsh/internal/dshcompat"
	"github.com/dsh-project/dsh/internal/dshfixtures"
	"github.com/dsh-project/dsh/internal/dshformat"
)

// laterCorpus writes converted later-format snapshots (later-formats §3)
// as children of one V4 parent and returns the corpus directory.
func laterCorpus(t *testing.T) (dir, parent string) {
	t.Helper()
	dir = t.TempDir()
	parent = "session-00000000-0000-4000-8000-000000000001"
	write := func(id, name string, log []byte) {
		p := filepath.Join(dir, "--home-dev-later--", id, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, log, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	fixture := func(rel string) dshfixtures.LaterFixture {
		for _, f := range dshfixtures.LaterFixtures {
			if f.Rel == rel {
				return f
			}
		}
		t.Fatalf("no fixture %s", rel)
		return dshfixtures.LaterFixture{}
	}
	tokens := func(child string) dshfixtures.LaterTokens {
		return dshfixtures.LaterTokens{Sessions: map[int]string{1: parent, 2: child}, Cwd: "/home/dev/later"}
	}
	add := func(child, rel string) []byte {
		f := fixture(rel)
		log := dshfixtures.LaterRawLog(t, f, tokens(child))
		id := child
		if f.Rel == "v4/snapshots/sdk/subagent-fork-in-process/session.v4.jsonl" {
			id = parent
		}
		write(id, dshformat.LogFileName(f.Version, dshformat.CompressionNone), log)
		return log
	}
	add("c-v4-fork", "v4/snapshots/sdk/subagent-fork-in-process/session.v4.jsonl")
	add("c-v4-fork", "v4/snapshots/sdk/subagent-fork-in-process/session.1.v4.jsonl")
	add("c-v4-spawn", "v4/snapshots/sdk/subagent-continuable/session.1.v4.jsonl")
	add("c-v3-fork", "v3/snapshots/sdk/subagent-fork-in-process/session.1.v3.jsonl")
	add("c-v2-fork", "v2/snapshots/sdk/subagent-fork-in-process/session.1.v2.jsonl")
	add("c-v2-spawn", "v2/snapshots/sdk/subagent-continuable/session.1.v2.jsonl")
	// A fork of the spawned child: its whole log is the prefix, so its
	// only descriptor is the ancestor's.
	spawn := dshfixtures.LaterRawLog(t, fixture("v4/snapshots/sdk/subagent-continuable/session.1.v4.jsonl"), tokens("c-ancestor-only"))
	seeded := bytes.Replace(spawn, []byte(`"isSeeded":false`), []byte(`"isSeeded":true`), 1)
	seeded = bytes.Replace(seeded, []byte(`"createdAt":1789000001000`), []byte(`"createdAt":1789000002000`), 1)
	n := bytes.Count(seeded, []byte("\n")) - 1
	seeded = fmt.Appendf(seeded, `{"type":"session/end-seed","seq":%d,"time":1789000002001,"data":{"inherited":true}}`+"\n"+
		`{"type":"turn/start","seq":%d,"time":1789000002002,"data":{"turn":2}}`+"\n", n, n+1)
	write("c-ancestor-only", "session.v4.jsonl", seeded)
	// A format dsh does not read, beside an older generation it would.
	v5 := bytes.Replace(spawn, []byte(`"version":4`), []byte(`"version":5`), 1)
	v5 = bytes.ReplaceAll(v5, []byte("c-ancestor-only"), []byte("c-v5"))
	write("c-v5", "session.v5.jsonl", v5)
	write("c-v5", "session.v4.jsonl", bytes.ReplaceAll(spawn, []byte("c-ancestor-only"), []byte("c-v5")))
	return dir, parent
}

// The later-format snapshots list as later-formats §11 and the issue say:
// fork children with their own v3 descriptor and spawned children are child
// rows; a seeded child whose only descriptor is the ancestor's is corrupt; a
// future format is an unavailable row, never a silent skip.
func TestLaterFormatListing(t *testing.T) {
	ctx := context.Background()
	dir, parent := laterCorpus(t)
	src, err := dshformat.OpenJSONL(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if p := src.Problems(); len(p) != 0 {
		t.Fatalf("problems %v", p)
	}
	c, err := dshformat.NewCorpus(ctx, src, "test corpus")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := NewCorpusLister(c, nil, 0).ListChildren(ctx, parent)
	if err != nil {
		t.Fatal(err)
	}
	got := rowsByID(rows)
	want := map[string]string{
		"c-v4-fork":       "child continuable Recall project codeword inactive ",
		"c-v4-spawn":      "child continuable Reply with CHILD_OK inactive ",
		"c-v3-fork":       "child continuable Recall project codeword inactive ",
		"c-v2-fork":       "child one-shot Recall project codeword inactive ",
		"c-v2-spawn":      "child continuable Reply with CHILD_OK inactive ",
		"c-ancestor-only": "diagnostic    corrupt",
		"c-v5":            "diagnostic    unavailable",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("rows\n%v\nwant\n%v", got, want)
	}
	// DSH 0.1.0-rc.8 reads descriptor version 2 only, and every later
	// child's descriptor is version 3: each is corrupt (the refused format
	// still unavailable).
	l := NewCorpusLister(c, nil, 0)
	l.Profile = dshcompat.RC8
	rows, err = l.ListChildren(ctx, parent)
	if err != nil {
		t.Fatal(err)
	}
	for id := range want {
		want[id] = "diagnostic    corrupt"
	}
	want["c-v5"] = "diagnostic    unavailable"
	if got := rowsByID(rows); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("rc.8 rows\n%v\nwant\n%v", got, want)
	}
	_, err = src.Read(ctx, "c-v5")
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("session.v5.jsonl")) {
		t.Fatalf("c-v5 refusal %v does not name the file", err)
	}
}

// rowsByID renders rows as "kind mode label activity reason" by id.
func rowsByID(rows []Row) map[string]string {
	got := map[string]string{}
	for _, r := range rows {
		label := ""
		if r.Label != nil {
			label = *r.Label
		}
		got[r.ID] = fmt.Sprintf("%s %s %s %s %s", r.Kind, r.Mode, label, r.Activity, r.Reason)
	}
	return got
}
