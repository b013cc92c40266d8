package main

import (
	"github.com/dsh-project/dsh/internal/dshfixtures"

	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// treeFingerprint is every file under dir with its size, mode and content
// hash (and any file a SQLite reader might have left, -wal or -shm).
func treeFingerprint(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %v %d", p, info.Mode(), info.Size())
		if info.Mode().IsRegular() {
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			h := sha256.New()
			_, err = io.Copy(h, f)
			f.Close()
			if err != nil {
				return err
			}
			b.WriteString(" " + hex.EncodeToString(h.Sum(nil)))
		}
		b.WriteByte('\n')
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// The acceptance: for every listing DSH recorded for its oracle
// corpora, `dsh list -o json` over each form of the corpus read in place
// (zstd JSONL, plain JSONL, schema-17 SQLite, with and without DSH's
// projection cache file) and from the database after `dsh import` of each
// prints exactly DSH's result — the same values in the same key order —
// and `-o agents` DSH's list_agents text — under --dsh-compat seeds and
// 0.1.0-rc.8 alike. The fixtures are left exactly as they were, with no
// SQLite side files.
func TestOracleListingsInPlaceAndImported(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: every oracle corpus in place and imported (about 7 s); internal/transfer's import tests stand for it, go test ./... runs it")
	}
	isolateEnv(t)
	oracleRoot := dshfixtures.Dir(t, "dsh-oracle")
	before := treeFingerprint(t, oracleRoot)
	for _, name := range dshfixtures.OracleCorpora {
		o := dshfixtures.LoadOracle(t, name)
		dir := o.Dir
		sources := map[string]string{
			"sqlite": "dsh-sqlite:" + filepath.Join(dir, o.Files.SQLite),
			"jsonl":  "jsonl:" + filepath.Join(dir, o.Files.JSONL),
		}
		if o.Files.JSONLPlain != "" {
			sources["jsonl-plain"] = "jsonl:" + filepath.Join(dir, o.Files.JSONLPlain)
		}
		cache := filepath.Join(dir, o.Files.ProjectionCache)
		variants := map[string][]string{}
		for v, src := range sources {
			variants[v] = []string{"--source", src}
			db := filepath.Join(t.TempDir(), "dsh.db")
			if out, errOut, code := runDsh(t, "--db", db, "import", src, "--quiet"); code != 0 {
				t.Fatalf("%s: import %s: exit %d\n%s%s", name, src, code, out, errOut)
			}
			variants["import "+v] = []string{"--db", db}
		}
		variants["jsonl+cache"] = []string{"--source", sources["jsonl"], "--source-cache", cache}
		variants["sqlite+cache"] = []string{"--source", sources["sqlite"], "--source-cache", cache}
		for v, args := range variants {
			for key, l := range o.Listings {
				for _, profile := range []string{"seeds", "0.1.0-rc.8"} {
					v := profile + " " + v
					base := append(slices.Clone(args), "--dsh-compat", profile, "list", "--parent", l.ID, "--scope", l.Op)
					out, errOut, code := runDsh(t, append(base, "-o", "json")...)
					if code != 0 || errOut != "" {
						t.Fatalf("%s %s %s: exit %d, stderr %s", name, v, key, code, errOut)
					}
					if !slices.Equal(dshfixtures.JSONTokens(t, []byte(out)), dshfixtures.JSONTokens(t, l.Result)) {
						t.Errorf("%s %s %s:\n got %s\nwant %s", name, v, key, out, l.Result)
					}
					out, _, code = runDsh(t, append(base, "-o", "agents")...)
					if code != 0 || out != l.ListAgents.Text+"\n" {
						t.Errorf("%s %s %s agents (exit %d):\n%s\nwant\n%s", name, v, key, code, out, l.ListAgents.Text)
					}
				}
			}
		}
	}
	if after := treeFingerprint(t, oracleRoot); after != before {
		t.Fatalf("the oracle fixtures changed:\nbefore\n%s\nafter\n%s", before, after)
	}
}

// DSH's own snapshot: the continuable child of subagent-list-agents, read
// as a JSONL source, renders as DSH's list_agents renders it. The fixture
// holds DSH's snapshot placeholder {{cwd}} where DSH wrote an absolute path;
// read exactly as stored, DSH's header validation refuses it (the child is
// unavailable), so the files are read again with the placeholder replaced,
// as the fixtures' README prescribes.
func TestListAgentsSnapshotAsSource(t *testing.T) {
	isolateEnv(t)
	dir := dshfixtures.Dir(t, "dsh-snapshots/acp-agent/subagent-list-agents")
	args := []string{"list", "--parent", "11111111-1111-4111-8111-111111111111", "-o", "agents"}

	out, errOut, code := runDsh(t, append([]string{"--source", "jsonl:" + dir}, args...)...)
	if code != 0 || errOut != "" || out != "33333333-3333-4333-8333-333333333333 [diagnostic: unavailable]\n" {
		t.Fatalf("as stored: exit %d, stdout %q, stderr %q", code, out, errOut)
	}

	work := t.TempDir()
	files, err := filepath.Glob(filepath.Join(dir, "session*.jsonl"))
	if err != nil || len(files) != 2 {
		t.Fatalf("snapshot files %v, %v", files, err)
	}
	for _, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		text = bytes.ReplaceAll(text, []byte("{{cwd}}"), []byte(work))
		if err := os.WriteFile(filepath.Join(work, filepath.Base(f)), text, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	out, errOut, code = runDsh(t, append([]string{"--source", "jsonl:" + work}, args...)...)
	if code != 0 || errOut != "" || out != "33333333-3333-4333-8333-333333333333 [ready] — Reply with CHILD_OK\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}
