package subagent_test

import (
	"bytes"
	"context"
	"database/sql"
	"io"
	"path/filepath"
	"testing"

	"github.com/dsh-project/dsh/internal/corpus"
	"github.com/dsh-project/dsh/internal/dshcompat"
	"github.com/dsh-project/dsh/internal/gencorpus"
	"github.com/dsh-project/dsh/internal/render"
	"github.com/dsh-project/dsh/internal/sqlitepersist"
	"github.com/dsh-project/dsh/internal/subagent"
	"github.com/dsh-project/dsh/scripts/benchfloor/floor"
)

// Benchmark corpus: the mix at a size a benchmark run can generate
// (scripts/bench-list measures the full 10,000 children in 200,000 sessions).
const (
	benchChildren = 1000
	benchSessions = 5000
)

// benchStore generates the benchmark corpus into a fresh store, outside the
// timer.
func benchStore(b *testing.B, spec gencorpus.Spec) *sqlitepersist.Store {
	b.Helper()
	ctx := context.Background()
	st, err := sqlitepersist.Open(ctx, filepath.Join(b.TempDir(), "bench.db"), sqlitepersist.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	if _, err := gencorpus.Generate(ctx, st, spec); err != nil {
		b.Fatal(err)
	}
	return st
}

// benchListChildren lists the parent's children and prints them as
// `dsh list -o json` does, the bytes its floors print.
func benchListChildren(b *testing.B, st *sqlitepersist.Store) {
	benchListChildrenAs(b, st, dshcompat.Seeds)
}

// benchListChildrenAs is benchListChildren under a --dsh-compat profile.
func benchListChildrenAs(b *testing.B, st *sqlitepersist.Store, profile dshcompat.Profile) {
	ctx := context.Background()
	l := subagent.NewStoreLister(st, st, 0)
	l.Profile = profile
	var out bytes.Buffer
	p := render.New(&out, render.Options{Format: render.JSON})
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		rows, err := l.ListChildren(ctx, gencorpus.DefaultParent)
		if err != nil {
			b.Fatal(err)
		}
		if len(rows) != benchChildren {
			b.Fatalf("%d rows, want %d", len(rows), benchChildren)
		}
		out.Reset()
		if err := p.Listing(rows, corpus.ScopeChildren); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchChildren, "ns/child")
}

// BenchmarkListChildrenWarm lists a parent whose children have checkpoint
// records: unseeded cold children are served from the cache.
func BenchmarkListChildrenWarm(b *testing.B) {
	st := benchStore(b, gencorpus.Spec{Children: benchChildren, Sessions: benchSessions})
	benchListChildren(b, st)
}

// BenchmarkListChildrenWarmRC8 is BenchmarkListChildrenWarm under
// --dsh-compat 0.1.0-rc.8: seeded children are served from the cache too,
// and the identities served from dsh's folds cost one more query, reading
// the descriptors they name (version 3 is not rc.8's).
func BenchmarkListChildrenWarmRC8(b *testing.B) {
	st := benchStore(b, gencorpus.Spec{Children: benchChildren, Sessions: benchSessions})
	benchListChildrenAs(b, st, dshcompat.RC8)
}

// BenchmarkListChildrenColdRC8 is BenchmarkListChildrenCold under
// --dsh-compat 0.1.0-rc.8.
func BenchmarkListChildrenColdRC8(b *testing.B) {
	st := benchStore(b, gencorpus.Spec{Children: benchChildren, Sessions: benchSessions, NoCheckpoints: true})
	benchListChildrenAs(b, st, dshcompat.RC8)
}

// BenchmarkListChildrenCold lists the same parent with an empty cache: every
// child is read from its log (descriptor rows only, for verified logs).
func BenchmarkListChildrenCold(b *testing.B) {
	st := benchStore(b, gencorpus.Spec{Children: benchChildren, Sessions: benchSessions, NoCheckpoints: true})
	benchListChildren(b, st)
}

// BenchmarkListChildrenUnverified lists the parent when every child's log
// was changed outside dsh: each read validates the whole log.
func BenchmarkListChildrenUnverified(b *testing.B) {
	st := benchStore(b, gencorpus.Spec{Children: benchChildren, Sessions: benchSessions, NoCheckpoints: true, Unverified: true})
	benchListChildren(b, st)
}

// BenchmarkListChildrenWarmFloor is BenchmarkListChildrenWarm's floor
// (scripts/benchfloor's warm listing) on the same corpus: one query joining
// headers with their checkpoints, identities from the stored text, the same
// JSON bytes out. dsh's ns/op over this one's is the in-process ratio.
func BenchmarkListChildrenWarmFloor(b *testing.B) {
	st := benchStore(b, gencorpus.Spec{Children: benchChildren, Sessions: benchSessions})
	benchFloor(b, st, func(ctx context.Context, db *sql.DB, w io.Writer) error {
		return floor.List(ctx, db, gencorpus.DefaultParent, false, w)
	})
}

// BenchmarkListChildrenBareFloor is BenchmarkListChildrenWarm's second
// floor: the same rows read back from a bare indexed table of (id, parent,
// created_at, mode, label) only, filled from dsh's own listing outside the
// timer (scripts/benchfloor bare).
func BenchmarkListChildrenBareFloor(b *testing.B) {
	st := benchStore(b, gencorpus.Spec{Children: benchChildren, Sessions: benchSessions})
	ctx := context.Background()
	rows, err := subagent.NewStoreLister(st, st, 0).ListChildren(ctx, gencorpus.DefaultParent)
	if err != nil {
		b.Fatal(err)
	}
	var listing bytes.Buffer
	if err := render.New(&listing, render.Options{Format: render.JSON}).Listing(rows, corpus.ScopeChildren); err != nil {
		b.Fatal(err)
	}
	db, err := floor.Open(filepath.Join(b.TempDir(), "bare.db"), false)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	if err := floor.BareLoad(ctx, db, gencorpus.DefaultParent, &listing); err != nil {
		b.Fatal(err)
	}
	var out bytes.Buffer
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		out.Reset()
		if err := floor.Bare(ctx, db, gencorpus.DefaultParent, &out); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchChildren, "ns/child")
}

// BenchmarkListChildrenColdFloor is BenchmarkListChildrenCold's floor:
// identities folded from the descriptor events in one query.
func BenchmarkListChildrenColdFloor(b *testing.B) {
	st := benchStore(b, gencorpus.Spec{Children: benchChildren, Sessions: benchSessions, NoCheckpoints: true})
	benchFloor(b, st, func(ctx context.Context, db *sql.DB, w io.Writer) error {
		return floor.Cold(ctx, db, gencorpus.DefaultParent, w)
	})
}

// BenchmarkListDescendants lists the parent's whole tree (forks of forks
// included), cache filled, and prints it as JSON.
func BenchmarkListDescendants(b *testing.B) {
	st := benchStore(b, gencorpus.Spec{Children: benchChildren, Sessions: benchSessions})
	ctx := context.Background()
	l := subagent.NewStoreLister(st, st, 0)
	var out bytes.Buffer
	p := render.New(&out, render.Options{Format: render.JSON})
	b.ReportAllocs()
	for b.Loop() {
		rows, err := l.ListDescendants(ctx, gencorpus.DefaultParent)
		if err != nil {
			b.Fatal(err)
		}
		if len(rows) < benchChildren {
			b.Fatalf("%d rows, want at least %d", len(rows), benchChildren)
		}
		out.Reset()
		if err := p.Listing(rows, corpus.ScopeDescendants); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkListDescendantsFloor is BenchmarkListDescendants's floor: one
// recursive query.
func BenchmarkListDescendantsFloor(b *testing.B) {
	st := benchStore(b, gencorpus.Spec{Children: benchChildren, Sessions: benchSessions})
	benchFloor(b, st, func(ctx context.Context, db *sql.DB, w io.Writer) error {
		return floor.List(ctx, db, gencorpus.DefaultParent, true, w)
	})
}

// benchFloor runs a floor over st's database file through its own
// connection, as the benchfloor process does.
func benchFloor(b *testing.B, st *sqlitepersist.Store, run func(context.Context, *sql.DB, io.Writer) error) {
	db, err := floor.Open(st.Path(), true)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	var out bytes.Buffer
	b.ReportAllocs()
	for b.Loop() {
		out.Reset()
		if err := run(ctx, db, &out); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchChildren, "ns/child")
}
