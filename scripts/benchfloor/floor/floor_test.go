package floor_test

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/dsh-project/dsh/internal/corpus"
	"github.com/dsh-project/dsh/internal/gencorpus"
	"github.com/dsh-project/dsh/internal/render"
	"github.com/dsh-project/dsh/internal/sqlitepersist"
	"github.com/dsh-project/dsh/internal/subagent"
	"github.com/dsh-project/dsh/scripts/benchfloor/floor"
)

// A floor is only a floor if it produces what dsh produces: the listing
// floors must print dsh's bytes on a gencorpus store (every kind of child,
// forks of forks included), or the ratios compare different work.
func TestListingFloorsPrintDSHBytes(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "floor.db")
	st, err := sqlitepersist.Open(ctx, path, sqlitepersist.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	spec := gencorpus.Spec{Children: 300, Sessions: 600, MinEvents: 10, MaxEvents: 30, Seed: 3}
	if _, err := gencorpus.Generate(ctx, st, spec); err != nil {
		t.Fatal(err)
	}
	db, err := floor.Open(path, true)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	dsh := func(scope corpus.Scope) []byte {
		l := subagent.NewStoreLister(st, st, 0)
		var rows []subagent.Row
		var err error
		if scope == corpus.ScopeDescendants {
			rows, err = l.ListDescendants(ctx, gencorpus.DefaultParent)
		} else {
			rows, err = l.ListChildren(ctx, gencorpus.DefaultParent)
		}
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := render.New(&out, render.Options{Format: render.JSON}).Listing(rows, scope); err != nil {
			t.Fatal(err)
		}
		return out.Bytes()
	}
	check := func(name string, want []byte, run func(*bytes.Buffer) error) {
		t.Helper()
		var got bytes.Buffer
		if err := run(&got); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !bytes.Equal(got.Bytes(), want) {
			t.Errorf("%s floor prints %d bytes that differ from dsh's %d", name, got.Len(), len(want))
		}
	}
	children, descendants := dsh(corpus.ScopeChildren), dsh(corpus.ScopeDescendants)
	if bytes.Count(children, []byte(`"kind":"diagnostic"`)) == 0 || bytes.Count(children, []byte(`"kind":"child"`)) == 0 {
		t.Fatalf("the corpus lacks children or diagnostics: %s", children)
	}
	check("warm", children, func(w *bytes.Buffer) error { return floor.List(ctx, db, gencorpus.DefaultParent, false, w) })
	check("descendants", descendants, func(w *bytes.Buffer) error { return floor.List(ctx, db, gencorpus.DefaultParent, true, w) })
	check("cold", children, func(w *bytes.Buffer) error { return floor.Cold(ctx, db, gencorpus.DefaultParent, w) })

	bare, err := floor.Open(filepath.Join(t.TempDir(), "bare.db"), false)
	if err != nil {
		t.Fatal(err)
	}
	defer bare.Close()
	if err := floor.BareLoad(ctx, bare, gencorpus.DefaultParent, bytes.NewReader(children)); err != nil {
		t.Fatal(err)
	}
	check("bare", children, func(w *bytes.Buffer) error { return floor.Bare(ctx, bare, gencorpus.DefaultParent, w) })
}
