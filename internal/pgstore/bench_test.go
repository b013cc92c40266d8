package pgstore

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/dsh-project/dsh/internal/dshformat"
	"github.com/dsh-project/dsh/internal/gencorpus"
	"github.com/dsh-project/dsh/internal/pgtest"
	"github.com/dsh-project/dsh/internal/sqlitepersist"
	"github.com/dsh-project/dsh/internal/subagent"
	"github.com/dsh-project/dsh/internal/transfer"
)

// The backend benchmarks run the same work on SQLite and PostgreSQL in one
// run, so their ratio is measured, not assumed: a warm and a cold listing
// of one parent's children (1,000 and 5,000 of them) and an import of the
// parent's exported subtree. docs/benchmarks.md reports the ratios.
//
//	go test ./internal/pgstore -run '^$' -bench Backends -benchtime 5x

var benchSizes = []int{1000, 5000}

// benchBackend opens a fresh, empty store of one kind.
type benchBackend struct {
	name string
	open func(b *testing.B) transferTarget
}

// transferTarget is what the benchmarks write and read.
type transferTarget interface {
	transfer.Destination
	subagent.ListingStore
	Close() error
}

func benchBackends() []benchBackend {
	return []benchBackend{
		{"sqlite", func(b *testing.B) transferTarget {
			st, err := sqlitepersist.Open(context.Background(), filepath.Join(b.TempDir(), "dsh.db"), sqlitepersist.Options{})
			if err != nil {
				b.Fatal(err)
			}
			return st
		}},
		{"postgres", func(b *testing.B) transferTarget {
			url := pgtest.NewDatabase(b)
			st, err := Open(context.Background(), url)
			if err != nil {
				b.Fatal(err)
			}
			return st
		}},
	}
}

func benchSpec(children int, warm bool) gencorpus.Spec {
	return gencorpus.Spec{Children: children, Sessions: children + 1, MinEvents: 20, MaxEvents: 60, Seed: 11, NoCheckpoints: !warm}
}

func BenchmarkBackends(b *testing.B) {
	ctx := context.Background()
	for _, n := range benchSizes {
		for _, warm := range []bool{true, false} {
			mode := map[bool]string{true: "warm", false: "cold"}[warm]
			for _, be := range benchBackends() {
				b.Run(fmt.Sprintf("list-%s/%d/%s", mode, n, be.name), func(b *testing.B) {
					st := be.open(b)
					defer st.Close()
					if _, err := gencorpus.Generate(ctx, st, benchSpec(n, warm)); err != nil {
						b.Fatal(err)
					}
					l := subagent.NewStoreLister(st, st, 0)
					for b.Loop() {
						rows, err := l.ListChildren(ctx, gencorpus.DefaultParent)
						if err != nil || len(rows) != n {
							b.Fatalf("list: %d rows, %v", len(rows), err)
						}
					}
				})
			}
		}
		dir := exportCorpus(b, n)
		for _, be := range benchBackends() {
			b.Run(fmt.Sprintf("import/%d/%s", n, be.name), func(b *testing.B) {
				events := 0
				var elapsed time.Duration
				for b.Loop() {
					b.StopTimer()
					st := be.open(b)
					src, err := dshformat.OpenJSONL(ctx, dir)
					if err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
					start := time.Now()
					sum, err := transfer.Import(ctx, st, src, transfer.ImportOptions{})
					elapsed += time.Since(start)
					b.StopTimer()
					if err != nil || sum.Failed() {
						b.Fatalf("import: %+v, %v", sum, err)
					}
					events += sum.Events
					src.Close()
					st.Close()
					b.StartTimer()
				}
				b.ReportMetric(float64(events)/elapsed.Seconds(), "events/s")
			})
		}
	}
}

// exportCorpus writes the parent with n children as plain DSH JSONL.
func exportCorpus(b *testing.B, n int) string {
	ctx := context.Background()
	tmp := b.TempDir()
	gen, err := sqlitepersist.Open(ctx, filepath.Join(tmp, "gen.db"), sqlitepersist.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer gen.Close()
	if _, err := gencorpus.Generate(ctx, gen, benchSpec(n, false)); err != nil {
		b.Fatal(err)
	}
	ids, err := transfer.All(ctx, gen)
	if err != nil {
		b.Fatal(err)
	}
	dir := filepath.Join(tmp, "jsonl")
	if _, err := transfer.Export(ctx, gen, dir, ids, transfer.ExportOptions{Compression: dshformat.CompressionNone}); err != nil {
		b.Fatal(err)
	}
	return dir
}
