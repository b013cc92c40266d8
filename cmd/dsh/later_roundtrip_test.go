package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	subcatalog "github.com/dsh-project/dsh/internal/catalog"
	"github.com/dsh-project/dsh/internal/dshfixtures"
	"github.com/dsh-project/dsh/internal/dshformat"
	"github.com/dsh-project/dsh/internal/pgtest"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/subagent"
)

// laterCorpus writes DSH's later-format snapshots as a JSONL corpus under
// one V4 parent: the parent itself (its catalog names its fork child), the
// V4 fork and spawn children, the V2 spawn child and the V3 fork child.
func laterCorpus(t *testing.T, parent string) string {
	t.Helper()
	dir := t.TempDir()
	put := func(child, rel string) {
		f := laterFixture(t, rel)
		raw := dshfixtures.LaterRawLog(t, f, dshfixtures.LaterTokens{Sessions: map[int]string{1: parent, 2: child}, Cwd: "/home/dev/later"})
		id := child
		if strings.HasSuffix(rel, "/session.v4.jsonl") {
			id = parent
		}
		p := filepath.Join(dir, homeProject, id, dshformat.LogFileName(f.Version, dshformat.CompressionNone))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, raw, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	put("c-v4-fork", "v4/snapshots/sdk/subagent-fork-in-process/session.v4.jsonl")
	put("c-v4-fork", "v4/snapshots/sdk/subagent-fork-in-process/session.1.v4.jsonl")
	put("c-v4-spawn", "v4/snapshots/sdk/subagent-continuable/session.1.v4.jsonl")
	put("c-v2-spawn", "v2/snapshots/sdk/subagent-continuable/session.1.v2.jsonl")
	put("c-v3-fork", "v3/snapshots/sdk/subagent-fork-in-process/session.1.v3.jsonl")
	return dir
}

// checkLaterStrictly reads every session of the JSONL corpus dir with
// dsh's reader (each log validated by its format's rules, a torn tail or
// refusal being an error) and holds each later-format log to what DSH's
// later releases require of the logs they read beyond that: a `stream` on
// every assistant/message, version-3 descriptors in the session's own
// events, and own catalog facts that pass both format admission (each
// child named once) and the projection's strict schema. It returns the
// sessions by id.
func checkLaterStrictly(t *testing.T, dir string) map[string]*dshformat.Session {
	t.Helper()
	ctx := context.Background()
	src, err := dshformat.OpenJSONL(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if p := src.Problems(); len(p) > 0 {
		t.Fatalf("reading %s: %+v", dir, p)
	}
	hs, err := src.Headers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dshformat.Session{}
	for _, h := range hs {
		s, err := src.Read(ctx, h.ID)
		if err != nil {
			t.Fatalf("read %s: %v", h.ID, err)
		}
		if s.Torn != nil {
			t.Errorf("%s: torn tail %+v", h.ID, s.Torn)
		}
		if err := session.ValidateLog(s.Header, s.Events); err != nil {
			t.Errorf("%s: %v", h.ID, err)
		}
		out[h.ID] = s
		if !session.IsLaterFormat(s.Header.Version) {
			continue
		}
		cut := s.Header.InheritedCut()
		if err := subcatalog.Admit(s.Events, cut); err != nil {
			t.Errorf("%s: format admission of its catalog: %v", h.ID, err)
		}
		if _, err := subcatalog.Fold(s.Events, cut); err != nil {
			t.Errorf("%s: the catalog projection: %v", h.ID, err)
		}
		for _, e := range s.Events {
			switch {
			case e.Type == session.TypeAssistantMsg:
				var data struct{ Stream []json.RawMessage }
				if err := json.Unmarshal(e.Data, &data); err != nil || data.Stream == nil {
					t.Errorf("%s seq %d: assistant/message without a stream: %s", h.ID, e.Seq, e.Data)
				}
			case e.Type == session.TypeDescriptor && e.Seq >= cut:
				if d, err := subagent.ParseDescriptor(e.Data); err != nil || d == nil || d.Version != subagent.DescriptorVersionLater {
					t.Errorf("%s seq %d: descriptor %s is not a version-3 one (%v)", h.ID, e.Seq, e.Data, err)
				}
			}
		}
	}
	return out
}

// DSH's later-format children imported, resumed by dsh, children started
// beside them, exported: every log reads back under its format's rules and
// the later releases' requirements, diagnose finds only what the corpus
// holds, and the export lists as the store does, under the default profile
// and as DSH 0.1.7 lists it. On SQLite and PostgreSQL.
func TestLaterFormatResumeRoundTrip(t *testing.T) {
	isolateEnv(t)
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "dsh.db")
			if backend == "postgres" {
				db = pgtest.NewDatabase(t)
			}
			const parent = "session-00000000-0000-4000-8000-0000000000aa"
			src := laterCorpus(t, parent)
			dsh := func(args ...string) string {
				t.Helper()
				stdout, stderr, code := runDsh(t, append([]string{"--db", db}, args...)...)
				if code != 0 {
					t.Fatalf("dsh %s: exit %d: %s", strings.Join(args, " "), code, stderr)
				}
				return stdout
			}
			dsh("import", "jsonl:"+src)
			for _, child := range []string{"c-v4-fork", "c-v4-spawn", "c-v2-spawn", "c-v3-fork"} {
				dsh("resume", child, "--parent", parent, "--message", "one more turn, "+child)
			}
			dsh("start", "--parent", parent, "--id", "c-new", "--label", "started by dsh", "--message", "hi")
			dsh("start", "--parent", parent, "--id", "c-once", "--mode", "one-shot", "--fork", "--message", "recall")

			out := filepath.Join(t.TempDir(), "export")
			dsh("export", "--to", out, "--all")
			sessions := checkLaterStrictly(t, out)
			if len(sessions) != 7 {
				t.Fatalf("exported %d sessions, want 7", len(sessions))
			}
			for id, s := range sessions {
				if id != parent && s.Header.Parent() != parent {
					t.Errorf("%s: parent %q", id, s.Header.Parent())
				}
				if s.Header.Version == 0 {
					t.Errorf("%s: exported in format 0", id)
				}
			}
			// The resumed turns are there, in the later shapes.
			for _, child := range []string{"c-v4-fork", "c-v4-spawn", "c-v2-spawn", "c-v3-fork"} {
				if !strings.Contains(string(mustEventsJSON(t, sessions[child])), `"kind":"agent-message","form":"relay","senderSessionId":"`+parent+`"`) {
					t.Errorf("%s: the resumed turn's relay is not in the later shape", child)
				}
			}

			// The three children taken from other recordings are not in
			// the parent's own catalog (DSH 0.1.7 does not list them):
			// the catalog cross-check's warning is all diagnose finds.
			stdout, stderr, code := runDsh(t, "diagnose", "--source", "jsonl:"+out, "--parent", parent, "--scope", "descendants", "-o", "tsv")
			var found []string
			for line := range strings.Lines(stdout) {
				cells := strings.Split(line, "\t")
				found = append(found, cells[0]+" "+cells[1]+" "+cells[2])
			}
			slices.Sort(found)
			want := []string{"warning CATALOG_CHILD_UNCATALOGED c-v2-spawn", "warning CATALOG_CHILD_UNCATALOGED c-v3-fork", "warning CATALOG_CHILD_UNCATALOGED c-v4-spawn"}
			if code != 0 || !slices.Equal(found, want) {
				t.Errorf("diagnose of the export: exit %d\n%s%s", code, stdout, stderr)
			}
			inStore := dsh("list", "--parent", parent, "-o", "json")
			stdout, stderr, code = runDsh(t, "list", "--source", "jsonl:"+out, "--parent", parent, "-o", "json")
			if code != 0 || stdout != inStore {
				t.Errorf("the export lists\n%s(exit %d, %s)\nthe store\n%s", stdout, code, stderr, inStore)
			}

			// As DSH 0.1.7 lists the parent: from its catalog, DSH's own
			// fact for the V4 fork child first, then the facts dsh's starts
			// appended. The resumed V4 child's row is the one the DSH
			// corpus gives in place; the store and the export agree on
			// every scope and output.
			forkRow := `{"kind":"child","id":"c-v4-fork","mode":"continuable","label":"Recall project codeword","activity":"inactive","hasChildren":false}`
			stdout, stderr, code = runDsh(t, "--dsh-compat", "0.1.7", "list", "--source", "jsonl:"+src, "--parent", parent, "-o", "json")
			if code != 0 || stdout != "["+forkRow+"]\n" {
				t.Errorf("0.1.7 listing of DSH's corpus in place: exit %d\n%s%s", code, stdout, stderr)
			}
			want017 := "[" + forkRow +
				`,{"kind":"child","id":"c-new","mode":"continuable","label":"started by dsh","activity":"inactive","hasChildren":false}` +
				`,{"kind":"child","id":"c-once","mode":"one-shot","activity":"inactive","hasChildren":false}]` + "\n"
			for _, args := range [][]string{
				{"-o", "json"},
				{"--scope", "descendants", "-o", "json"},
				{"-o", "agents"},
				{"--scope", "descendants", "-o", "agents"},
			} {
				inStore := dsh(append([]string{"--dsh-compat", "0.1.7", "list", "--parent", parent}, args...)...)
				if args[0] == "-o" && args[1] == "json" && inStore != want017 {
					t.Errorf("0.1.7 listing of the store\n%s\nwant\n%s", inStore, want017)
				}
				stdout, stderr, code = runDsh(t, append([]string{"--dsh-compat", "0.1.7", "list", "--source", "jsonl:" + out, "--parent", parent}, args...)...)
				if code != 0 || stdout != inStore {
					t.Errorf("0.1.7 listing %v of the export\n%s(exit %d, %s)\nthe store\n%s", args, stdout, code, stderr, inStore)
				}
			}
		})
	}
}

func mustEventsJSON(t *testing.T, s *dshformat.Session) []byte {
	t.Helper()
	var b []byte
	for _, e := range s.Events {
		b = append(b, e.Data...)
		b = append(b, '\n')
	}
	return b
}
