package diagnose

import (
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/dsh-project/dsh/internal/dshcompat"
	"github.com/dsh-project/dsh/internal/gencorpus"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/sqlitepersist"
	"github.com/dsh-project/dsh/scripts/benchfloor/floor"
)

var (
	benchChildren = flag.Int("bench.children", 1000, "children of the benchmark parent (50-500 events each)")
	benchSessions = flag.Int("bench.sessions", 5000, "sessions in the benchmark store")
)

// benchStore generates the benchmark corpus (gencorpus: one parent with
// mixed children, unrelated sessions around it, checkpoints written) in a
// fresh database.
func benchStore(b *testing.B) *sqlitepersist.Store {
	b.Helper()
	ctx := context.Background()
	st, err := sqlitepersist.Open(ctx, filepath.Join(b.TempDir(), "bench.db"), sqlitepersist.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	if _, err := gencorpus.Generate(ctx, st, gencorpus.Spec{Children: *benchChildren, Sessions: *benchSessions}); err != nil {
		b.Fatal(err)
	}
	return st
}

// heapPeak samples the heap in use while an audit runs: every 64 reports
// and at the end.
type heapPeak struct {
	n    int
	peak uint64
}

func (h *heapPeak) sample() {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	h.peak = max(h.peak, m.HeapInuse)
}

func (h *heapPeak) observe(Report) error {
	if h.n++; h.n%64 == 0 {
		h.sample()
	}
	return nil
}

// benchAudit runs an audit b.N times and reports sessions per second and
// the peak heap in use (bounded: one log in memory at a time).
func benchAudit(b *testing.B, st *sqlitepersist.Store, opts Options) {
	b.Helper()
	ctx := context.Background()
	runtime.GC()
	var peak heapPeak
	examined := 0
	b.ResetTimer()
	for range b.N {
		sum, err := Run(ctx, st, opts, peak.observe)
		if err != nil {
			b.Fatal(err)
		}
		examined += sum.Examined
	}
	b.StopTimer()
	peak.sample()
	b.ReportMetric(float64(examined)/b.Elapsed().Seconds(), "sessions/s")
	b.ReportMetric(float64(peak.peak)/(1<<20), "peak-heap-MiB")
}

// BenchmarkDiagnoseChildren audits the benchmark parent's children
// (-bench.children, transcripts of 50-500 events).
func BenchmarkDiagnoseChildren(b *testing.B) {
	st := benchStore(b)
	benchAudit(b, st, Options{Strict: true, Select: Selection{Parent: gencorpus.DefaultParent, HasParent: true}})
}

// BenchmarkDiagnoseAll audits every session of the benchmark store.
func BenchmarkDiagnoseAll(b *testing.B) {
	st := benchStore(b)
	benchAudit(b, st, Options{Strict: true, Select: Selection{All: true}})
}

// BenchmarkDiagnoseChildrenFloor is BenchmarkDiagnoseChildren's floor
// (scripts/benchfloor's): every event of every child streamed in one query
// and JSON-parsed.
func BenchmarkDiagnoseChildrenFloor(b *testing.B) {
	st := benchStore(b)
	db, err := floor.Open(st.Path(), true)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	for b.Loop() {
		if err := floor.Diagnose(ctx, db, gencorpus.DefaultParent, io.Discard); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(*benchChildren)*float64(b.N)/b.Elapsed().Seconds(), "sessions/s")
}

// BenchmarkDiagnoseCatalogChildren audits the -bench.children children of
// a format-V4 parent, each named by the parent's catalog (the catalog
// cross-check on every child), under the seeds profile (rows from the
// ladder) and 0.1.7 (rows from DSH 0.1.7's listing).
func BenchmarkDiagnoseCatalogChildren(b *testing.B) {
	s := newStore(b)
	facts := make([]session.Event, 0, *benchChildren)
	for i := range *benchChildren {
		h := s.laterHeader(4, fmt.Sprintf("c%05d", i), "p")
		s.importLog(h, []session.Event{laterDescriptor(0, "continuable", "task")})
		facts = append(facts, factOf(int64(i), h, "continuable", "task"))
	}
	s.importLog(s.laterHeader(4, "p", ""), facts)
	for _, profile := range []dshcompat.Profile{dshcompat.Seeds, dshcompat.V017} {
		b.Run(string(profile), func(b *testing.B) {
			benchAudit(b, s.st, Options{Profile: profile, Strict: true, Select: Selection{Parent: "p", HasParent: true}})
		})
	}
}
