package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

// The committed reference in docs/cli is what scripts/gendocs writes from
// the current command tree: a changed help text or flag without a
// regenerated reference fails here.
func TestCLIReferenceIsCurrent(t *testing.T) {
	const committed = "../../docs/cli"
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
