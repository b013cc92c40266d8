package floor_test

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/corpus"
	"github.com/dsh-project/dsh/internal/gencorpus"
	"github.com/dsh-project/dsh/internal/pgstore"
	"github.com/dsh-project/dsh/internal/pgtest"
	"github.com/dsh-project/dsh/internal/render"
	"github.com/dsh-project/dsh/internal/search"
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

// The PostgreSQL floors print what dsh prints from the same corpus in a
// PostgreSQL store, and count the same events per child as the SQLite
// diagnose floor.
func TestPGFloorsPrintDSHBytes(t *testing.T) {
	ctx := context.Background()
	dbURL := pgtest.NewDatabase(t)
	st, err := pgstore.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	spec := gencorpus.Spec{Children: 200, Sessions: 400, MinEvents: 10, MaxEvents: 30, Seed: 3}
	if _, err := gencorpus.Generate(ctx, st, spec); err != nil {
		t.Fatal(err)
	}
	conn, err := floor.OpenPG(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, scope := range []corpus.Scope{corpus.ScopeChildren, corpus.ScopeDescendants} {
		l := subagent.NewStoreLister(st, st, 0)
		var rows []subagent.Row
		if scope == corpus.ScopeDescendants {
			rows, err = l.ListDescendants(ctx, gencorpus.DefaultParent)
		} else {
			rows, err = l.ListChildren(ctx, gencorpus.DefaultParent)
		}
		if err != nil {
			t.Fatal(err)
		}
		var want, got bytes.Buffer
		if err := render.New(&want, render.Options{Format: render.JSON}).Listing(rows, scope); err != nil {
			t.Fatal(err)
		}
		if err := floor.PGList(ctx, conn, gencorpus.DefaultParent, scope == corpus.ScopeDescendants, &got); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Errorf("%s: the PostgreSQL floor prints %d bytes that differ from dsh's %d", scope, got.Len(), want.Len())
		}
		if scope == corpus.ScopeChildren {
			var cold bytes.Buffer
			if err := floor.PGCold(ctx, conn, gencorpus.DefaultParent, &cold); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(cold.Bytes(), want.Bytes()) {
				t.Errorf("the PostgreSQL cold floor prints %d bytes that differ from dsh's %d", cold.Len(), want.Len())
			}
		}
	}

	lite, err := sqlitepersist.Open(ctx, filepath.Join(t.TempDir(), "floor.db"), sqlitepersist.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gencorpus.Generate(ctx, lite, spec); err != nil {
		t.Fatal(err)
	}
	path := lite.Path()
	lite.Close()
	db, err := floor.Open(path, true)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var liteCounts, pgCounts bytes.Buffer
	if err := floor.Diagnose(ctx, db, gencorpus.DefaultParent, &liteCounts); err != nil {
		t.Fatal(err)
	}
	if err := floor.PGDiagnose(ctx, conn, gencorpus.DefaultParent, &pgCounts); err != nil {
		t.Fatal(err)
	}
	sorted := func(b bytes.Buffer) string {
		lines := strings.Split(strings.TrimSpace(b.String()), "\n")
		slices.Sort(lines)
		return strings.Join(lines, "\n")
	}
	if l, p := sorted(liteCounts), sorted(pgCounts); l != p || strings.Count(l, "\n") != spec.Children-1 {
		t.Errorf("diagnose floors count differently:\nSQLite:\n%s\nPostgreSQL:\n%s", l, p)
	}
}

// The search floor finds dsh search's hits, in dsh's order, on SQLite and
// PostgreSQL (forks' inherited prefixes, which the index holds, cut off by
// both).
func TestSearchFloorFindsDSHHits(t *testing.T) {
	ctx := context.Background()
	spec := gencorpus.Spec{Children: 200, Sessions: 201, MinEvents: 10, MaxEvents: 30, Seed: 3}
	lite, err := sqlitepersist.Open(ctx, filepath.Join(t.TempDir(), "floor.db"), sqlitepersist.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer lite.Close()
	if _, err := gencorpus.Generate(ctx, lite, spec); err != nil {
		t.Fatal(err)
	}
	db, err := floor.Open(lite.Path(), true)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	dbURL := pgtest.NewDatabase(t)
	pg, err := pgstore.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	if _, err := gencorpus.Generate(ctx, pg, spec); err != nil {
		t.Fatal(err)
	}
	conn, err := floor.OpenPG(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, query := range []string{`ladder OR "cache turn"`, `"fork seed"`, "rung*"} {
		for _, limit := range []int{20, 100000} {
			q, err := search.Parse(query)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				name  string
				st    backend.Reader
				floor func(*bytes.Buffer) error
			}{
				{"SQLite", lite, func(b *bytes.Buffer) error { return floor.Search(ctx, db, query, limit, b) }},
				{"PostgreSQL", pg, func(b *bytes.Buffer) error { return floor.PGSearch(ctx, conn, query, limit, b) }},
			} {
				res, err := search.Run(ctx, c.st, q, search.Options{Limit: limit})
				if err != nil {
					t.Fatal(err)
				}
				var want []string
				for _, h := range res.Hits {
					want = append(want, fmt.Sprintf("%s\t%d", h.SessionID, h.Seq))
				}
				var out bytes.Buffer
				if err := c.floor(&out); err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, line := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
					if f := strings.SplitN(line, "\t", 3); len(f) == 3 {
						got = append(got, f[0]+"\t"+f[1])
					}
				}
				if len(want) == 0 || !slices.Equal(got, want) {
					t.Errorf("%s %q -n %d: the floor finds %d hits, dsh %d (or their order differs)", c.name, query, limit, len(got), len(want))
				}
			}
		}
	}
}
