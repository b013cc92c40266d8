package serve

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/dsh-project/dsh/internal/corpus"
	"github.com/dsh-project/dsh/internal/dshcompat"
	"github.com/dsh-project/dsh/internal/gencorpus"
	"github.com/dsh-project/dsh/internal/location"
	"github.com/dsh-project/dsh/internal/render"
	"github.com/dsh-project/dsh/internal/search"
	"github.com/dsh-project/dsh/internal/sqlitepersist"
	"github.com/dsh-project/dsh/internal/subagent"
)

// pageChildren is the benchmark parent's size: the 10,000 children.
const pageChildren = 10_000

// benchServer is a server over a fresh SQLite store holding gen-corpus's
// parent with children children of 8 to 16 events, and the store.
func benchServer(b *testing.B, children int) (*sqlitepersist.Store, *Server) {
	b.Helper()
	ctx := context.Background()
	st, err := sqlitepersist.Open(ctx, filepath.Join(b.TempDir(), "bench.db"), sqlitepersist.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	if _, err := gencorpus.Generate(ctx, st, gencorpus.Spec{Children: children, Sessions: children + 1, MinEvents: 8, MaxEvents: 16}); err != nil {
		b.Fatal(err)
	}
	s, err := New(Corpus{
		Reader:      st,
		Lister:      func() *subagent.Lister { return subagent.NewStoreLister(st, st, 4) },
		View:        func(ctx context.Context, fn func(location.Reader) error) error { return fn(st) },
		LookupError: func(_ string, err error) error { return err },
	}, Config{Profile: dshcompat.Default})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.Close)
	return st, s
}

// BenchmarkDescendantsPage measures the descendants page of a parent with
// 10,000 children (GET /sessions/P?scope=descendants: header, findings,
// last events and the first page of the tree) against what `dsh list
// --scope descendants -o json` does on the same store (the whole listing,
// printed), alternating the two in each iteration so that both see the
// same load; page/list is the ratio of their total times, median-page/list
// the median of the iterations' ratios (goal: at most 2).
func BenchmarkDescendantsPage(b *testing.B) {
	ctx := context.Background()
	st, s := benchServer(b, pageChildren)
	lister := func() *subagent.Lister { return subagent.NewStoreLister(st, st, 4) }
	h := s.Handler()
	var list, page time.Duration
	var ratios []float64
	var out bytes.Buffer
	for b.Loop() {
		t0 := time.Now()
		rows, err := lister().ListDescendants(ctx, gencorpus.DefaultParent)
		if err != nil {
			b.Fatal(err)
		}
		out.Reset()
		if err := render.New(&out, render.Options{Format: render.JSON}).Listing(rows, corpus.ScopeDescendants); err != nil {
			b.Fatal(err)
		}
		if len(rows) < pageChildren {
			b.Fatalf("%d rows", len(rows))
		}
		t1 := time.Now()
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, "/sessions/"+gencorpus.DefaultParent+"?scope=descendants", nil)
		req.Host = "127.0.0.1:7420"
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK || !bytes.Contains(rec.Body.Bytes(), []byte(`rel="next"`)) {
			b.Fatalf("page: %d %.300s", rec.Code, rec.Body.String())
		}
		t2 := time.Now()
		page += t2.Sub(t1)
		list += t1.Sub(t0)
		ratios = append(ratios, float64(t2.Sub(t1))/float64(t1.Sub(t0)))
	}
	slices.Sort(ratios)
	b.ReportMetric(float64(list.Milliseconds())/float64(b.N), "list-ms/op")
	b.ReportMetric(float64(page.Milliseconds())/float64(b.N), "page-ms/op")
	b.ReportMetric(float64(page)/float64(list), "page/list")
	// The median pair is what one iteration's load does not decide.
	b.ReportMetric(ratios[len(ratios)/2], "median-page/list")
}

// BenchmarkSearchAPI measures GET /api/v1/search against what `dsh search
// -o json` does on the same store (search.Run and the printer), the two
// alternating in each iteration: every hit of a common word (n=0), the API
// fetching its pages of 500 one after another (all/cli), and the first
// 20 hits, the default (first/cli, against the CLI's -n 20).
func BenchmarkSearchAPI(b *testing.B) {
	ctx := context.Background()
	st, s := benchServer(b, 2_000)
	h := s.Handler()
	q, err := search.Parse("ladder")
	if err != nil {
		b.Fatal(err)
	}
	cli := func(limit int) int {
		res, err := search.Run(ctx, st, q, search.Options{Limit: limit})
		if err != nil {
			b.Fatal(err)
		}
		var out bytes.Buffer
		if err := render.New(&out, render.Options{Format: render.JSON}).Search(res.Hits); err != nil {
			b.Fatal(err)
		}
		return len(res.Hits)
	}
	api := func(path string) (pages int) {
		for path != "" {
			rec := httptest.NewRecorder()
			req := httptest.NewRequest(http.MethodGet, path, nil)
			req.Host = "127.0.0.1:7420"
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK {
				b.Fatalf("%s: %d %.300s", path, rec.Code, rec.Body.String())
			}
			path = ""
			if c := rec.Header().Get("X-Next-Cursor"); c != "" {
				path = "/api/v1/search?q=ladder&n=0&cursor=" + c
			}
			pages++
		}
		return pages
	}
	var cliAll, apiAll, cliFirst, apiFirst time.Duration
	hits, pages := 0, 0
	for b.Loop() {
		t0 := time.Now()
		hits = cli(0)
		t1 := time.Now()
		pages = api("/api/v1/search?q=ladder&n=0")
		t2 := time.Now()
		cli(20)
		t3 := time.Now()
		api("/api/v1/search?q=ladder")
		t4 := time.Now()
		cliAll += t1.Sub(t0)
		apiAll += t2.Sub(t1)
		cliFirst += t3.Sub(t2)
		apiFirst += t4.Sub(t3)
	}
	if pages < 2 {
		b.Fatalf("%d hits in %d page(s): the benchmark wants several pages", hits, pages)
	}
	b.ReportMetric(float64(hits), "hits")
	b.ReportMetric(float64(pages), "pages")
	b.ReportMetric(float64(cliAll.Milliseconds())/float64(b.N), "cli-all-ms/op")
	b.ReportMetric(float64(apiAll)/float64(cliAll), "all/cli")
	b.ReportMetric(float64(apiFirst)/float64(cliFirst), "first/cli")
}
