package subagent_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/dsh-project/dsh/internal/corpus"
	"github.com/dsh-project/dsh/internal/dshcompat"
	"github.com/dsh-project/dsh/internal/gencorpus"
	"github.com/dsh-project/dsh/internal/render"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/sqlitepersist"
	"github.com/dsh-project/dsh/internal/subagent"
)

// catalogParent is the generated format-4 parent whose catalog names the
// benchmark parent's children: the same children, listed once by
// enumeration and once by catalog.
const catalogParent = "bench-catalog-parent"

// BenchmarkCatalogListing is a --dsh-compat 0.1.7 listing of a parent
// with benchChildren cataloged children; BenchmarkCatalogListingSeeds
// lists the same children, enumerated, by the default profile on the same
// store (cold, as the catalog listing has no checkpoint to use). The
// ratio of the two is what the catalog costs.
func BenchmarkCatalogListing(b *testing.B) {
	benchCatalog(b, dshcompat.V017, catalogParent)
}

func BenchmarkCatalogListingSeeds(b *testing.B) {
	benchCatalog(b, dshcompat.Seeds, gencorpus.DefaultParent)
}

func benchCatalog(b *testing.B, profile dshcompat.Profile, parent string) {
	st := benchStore(b, gencorpus.Spec{Children: benchChildren, Sessions: benchSessions, NoCheckpoints: true, CatalogParent: catalogParent})
	n := benchChildren
	ctx := context.Background()
	l := subagent.NewStoreLister(st, st, 0)
	l.Profile = profile
	var out bytes.Buffer
	p := render.New(&out, render.Options{Format: render.JSON})
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		rows, err := l.ListChildren(ctx, parent)
		if err != nil {
			b.Fatal(err)
		}
		if len(rows) != n {
			b.Fatalf("%d rows, want %d", len(rows), n)
		}
		out.Reset()
		if err := p.Listing(rows, corpus.ScopeChildren); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/child")
}

// countingCold counts a listing's cold reads: one at a time, and batches.
type countingCold struct {
	subagent.ColdReader
	batch            subagent.BatchColdReader
	singles, batched int
}

func (c *countingCold) ColdRead(ctx context.Context, id string, types []string) (session.Header, []session.Event, error) {
	c.singles++
	return c.ColdReader.ColdRead(ctx, id, types)
}

func (c *countingCold) ColdReadMany(ctx context.Context, ids []string, types []string) (map[string]subagent.ColdLog, error) {
	c.batched += len(ids)
	return c.batch.ColdReadMany(ctx, ids, types)
}

// A 0.1.7 listing of many cataloged children reads the parent once and
// every child in one batch (typed rows through the catalog index), never a
// child's log on its own; the rows are the seeds listing's children.
func TestCatalogListingReadsChildrenInOneBatch(t *testing.T) {
	ctx := context.Background()
	st, err := sqlitepersist.Open(ctx, t.TempDir()+"/c.db", sqlitepersist.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const n = 200
	if _, err := gencorpus.Generate(ctx, st, gencorpus.Spec{Children: n, Sessions: 2 * n, MinEvents: 10, MaxEvents: 20, NoCheckpoints: true, CatalogParent: catalogParent}); err != nil {
		t.Fatal(err)
	}
	l := subagent.NewStoreLister(st, st, 0)
	l.Profile = dshcompat.V017
	counter := &countingCold{ColdReader: l.Cold, batch: l.Cold.(subagent.BatchColdReader)}
	l.Cold = counter
	rows, err := l.ListChildren(ctx, catalogParent)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != n {
		t.Fatalf("%d rows, want %d", len(rows), n)
	}
	seeds, err := subagent.NewStoreLister(st, st, 0).ListChildren(ctx, gencorpus.DefaultParent)
	if err != nil {
		t.Fatal(err)
	}
	// The same children; where the seeds listing finds an identity, the
	// catalog says the same mode and label.
	byID := map[string]subagent.Row{}
	for _, r := range rows {
		byID[r.ID] = r
	}
	for _, s := range seeds {
		r, ok := byID[s.ID]
		switch {
		case !ok:
			t.Errorf("seeds row %s has no 0.1.7 row", s.ID)
		case s.Kind == subagent.KindChild && (r.Kind != subagent.KindChild || r.Mode != s.Mode || labelOf(r) != labelOf(s)):
			t.Errorf("0.1.7 %+v, seeds %+v", r, s)
		}
	}
	// Damaged children come from what the store recorded at import, in
	// the same batch: the only read of its own is the parent's.
	if counter.singles != 1 || counter.batched != n {
		t.Errorf("%d single reads, %d batched for %d children", counter.singles, counter.batched, n)
	}
}

func labelOf(r subagent.Row) string {
	if r.Label == nil {
		return "(none)"
	}
	return *r.Label
}
