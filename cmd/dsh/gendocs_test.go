package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// The reference generator lives in the tests, not in the dsh binary:
// cobra/doc pulls in a Markdown engine whose package initialisation every
// dsh process would otherwise pay for (about 3 ms of CPU per command)
// although only scripts/gendocs ever uses it.
var updateCLIReference = flag.Bool("update-cli-reference", false, "rewrite the command reference in docs/cli (scripts/gendocs)")

// docsDate is the date printed in the man pages' footer. It is fixed so that
// the committed reference only changes when the commands do.
var docsDate = time.Date(2026, time.December, 1, 0, 0, 0, 0, time.UTC)

// genDocs writes the command reference generated from the command tree
// under root: one Markdown file per command into dir and one man page per
// command into dir/man. Files it wrote before for commands that no longer
// exist are removed, so dir holds exactly the current tree.
func genDocs(root *cobra.Command, dir string) error {
	root.InitDefaultCompletionCmd()
	root.InitDefaultHelpCmd()
	var disable func(*cobra.Command)
	disable = func(c *cobra.Command) {
		c.DisableAutoGenTag = true // no generation timestamp in the files
		for _, sub := range c.Commands() {
			disable(sub)
		}
	}
	disable(root)
	manDir := filepath.Join(dir, "man")
	for _, pattern := range []string{filepath.Join(dir, "dsh*.md"), filepath.Join(manDir, "dsh*.1")} {
		old, err := filepath.Glob(pattern)
		if err != nil {
			return err
		}
		for _, f := range old {
			if err := os.Remove(f); err != nil {
				return err
			}
		}
	}
	if err := os.MkdirAll(manDir, 0o755); err != nil {
		return err
	}
	if err := doc.GenMarkdownTree(root, dir); err != nil {
		return fmt.Errorf("markdown reference: %w", err)
	}
	header := &doc.GenManHeader{Title: "DSH", Section: "1", Source: "dsh", Manual: "dsh manual", Date: &docsDate}
	if err := doc.GenManTree(root, header, manDir); err != nil {
		return fmt.Errorf("man pages: %w", err)
	}
	return nil
}

// The committed reference in docs/cli is what scripts/gendocs writes from
// the current command tree: a changed help text or flag without a
// regenerated reference fails here. With -update-cli-reference (what
// scripts/gendocs passes) it rewrites docs/cli instead.
func TestCLIReferenceIsCurrent(t *testing.T) {
	const committed = "../../docs/cli"
	if *updateCLIReference {
		if err := genDocs(docsRoot(), committed); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote the command reference to docs/cli")
	}
	fresh := t.TempDir()
	if err := genDocs(docsRoot(), fresh); err != nil {
		t.Fatal(err)
	}
	want, got := docFiles(t, fresh), docFiles(t, committed)
	for name, w := range want {
		g, ok := got[name]
		switch {
		case !ok:
			t.Errorf("docs/cli/%s is missing: run scripts/gendocs and commit docs/cli", name)
		case !bytes.Equal(g, w):
			t.Errorf("docs/cli/%s is stale: run scripts/gendocs and commit docs/cli", name)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("docs/cli/%s documents no current command: run scripts/gendocs and commit docs/cli", name)
		}
	}
}

// Generating twice, under another home and locale, gives the same bytes:
// nothing machine-dependent leaks into the reference.
func TestCLIReferenceIsReproducible(t *testing.T) {
	a := t.TempDir()
	if err := genDocs(docsRoot(), a); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	t.Setenv("LANG", "C.UTF-8")
	b := t.TempDir()
	if err := genDocs(docsRoot(), b); err != nil {
		t.Fatal(err)
	}
	fa, fb := docFiles(t, a), docFiles(t, b)
	if len(fa) == 0 || len(fa) != len(fb) {
		t.Fatalf("%d files, then %d", len(fa), len(fb))
	}
	for name := range fa {
		if !bytes.Equal(fa[name], fb[name]) {
			t.Errorf("%s differs between two runs", name)
		}
	}
}

// docsRoot is the command tree as dsh builds it for a run.
func docsRoot() *cobra.Command {
	out := &resultWriter{w: io.Discard}
	a := &app{stdout: out, stderr: io.Discard, out: out, now: time.Now}
	return a.newRootCmd()
}

// docFiles reads the generated files of a reference directory by relative
// name.
func docFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	var names []string
	for _, pattern := range []string{"dsh*.md", filepath.Join("man", "dsh*.1")} {
		m, err := filepath.Glob(filepath.Join(dir, pattern))
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, m...)
	}
	sort.Strings(names)
	out := make(map[string][]byte, len(names))
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		rel, err := filepath.Rel(dir, n)
		if err != nil {
			t.Fatal(err)
		}
		out[rel] = b
	}
	return out
}
