package transfer

import (
	"github.com/dsh-project/dsh/internal/dshfixtures"

	"context"
	"io/fs"
	"path/filepath"
	"testing"
	"time"

	"github.com/dsh-project/dsh/internal/dshformat"
	"github.com/dsh-project/dsh/internal/gencorpus"
	"github.com/dsh-project/dsh/internal/sqlitepersist"
	"github.com/dsh-project/dsh/internal/subagent"
	"github.com/dsh-project/dsh/scripts/benchfloor/floor"
)

// diskSize is the bytes a source occupies: a file, or every file under a
// directory.
func diskSize(b *testing.B, path string) int64 {
	b.Helper()
	var n int64
	err := filepath.WalkDir(path, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		n += info.Size()
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// benchmarkImport opens loc and imports it into a new database per
// iteration and reports events/s; MB/s is the source's size on disk per
// second.
func benchmarkImport(b *testing.B, loc corpusAt) {
	ctx := context.Background()
	b.SetBytes(diskSize(b, loc.path))
	events := 0
	var elapsed time.Duration
	for b.Loop() {
		b.StopTimer()
		st, err := sqlitepersist.Open(ctx, filepath.Join(b.TempDir(), "dsh.db"), sqlitepersist.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		// Opening the source (a JSONL corpus reads every header) is part
		// of an import, as the floor's directory walk is part of its.
		start := time.Now()
		src, err := loc.open(ctx, loc.path)
		if err != nil {
			b.Fatal(err)
		}
		sum, err := Import(ctx, st, src, ImportOptions{})
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
}

// Import throughput of the j-medium oracle corpus (45 sessions, 12,022
// events, long streamed replies) from DSH's zstd JSONL and its schema-17
// SQLite store.
func BenchmarkImport(b *testing.B) {
	dir := dshfixtures.Dir(b, "dsh-oracle/j-medium")
	b.Run("jsonl-zstd", func(b *testing.B) { benchmarkImport(b, corpusAt{dshformat.OpenJSONL, filepath.Join(dir, "jsonl")}) })
	b.Run("dsh-sqlite", func(b *testing.B) {
		benchmarkImport(b, corpusAt{dshformat.OpenDSHSQLite, filepath.Join(dir, "sessions.db")})
	})
}

// benchChildren is the size of the listing benchmark's corpus.
const benchChildren = 2000

// BenchmarkList2000 lists the children of one parent with 2,000 subagent
// children of every kind (gencorpus's mix, 50–150 events each), written as
// DSH zstd JSONL files by Export: directly with --source jsonl:DIR (every
// header read to enumerate, every child's log read and validated), and from
// a dsh database after importing the files (children served from the
// checkpoints the import wrote). Each iteration opens its source, as a dsh
// list process does.
func BenchmarkList2000(b *testing.B) {
	ctx := context.Background()
	tmp := b.TempDir()
	gen, err := sqlitepersist.Open(ctx, filepath.Join(tmp, "gen.db"), sqlitepersist.Options{})
	if err != nil {
		b.Fatal(err)
	}
	spec := gencorpus.Spec{Children: benchChildren, Sessions: benchChildren + 1, MinEvents: 50, MaxEvents: 150, Seed: 7}
	if _, err := gencorpus.Generate(ctx, gen, spec); err != nil {
		b.Fatal(err)
	}
	ids, err := All(ctx, gen)
	if err != nil {
		b.Fatal(err)
	}
	corpus := filepath.Join(tmp, "jsonl")
	exported, err := Export(ctx, gen, corpus, ids, ExportOptions{})
	if err != nil {
		b.Fatal(err)
	}
	gen.Close()
	for _, e := range exported {
		if e.Err != nil {
			b.Fatalf("export %s: %v", e.ID, e.Err)
		}
	}
	dbPath := filepath.Join(tmp, "imported.db")
	st, err := sqlitepersist.Open(ctx, dbPath, sqlitepersist.Options{})
	if err != nil {
		b.Fatal(err)
	}
	src, err := dshformat.OpenJSONL(ctx, corpus)
	if err != nil {
		b.Fatal(err)
	}
	if sum, err := Import(ctx, st, src, ImportOptions{}); err != nil || sum.Imported != benchChildren+1 {
		b.Fatalf("import: %+v, %v", sum, err)
	}
	st.Close()
	src.Close()

	check := func(b *testing.B, rows []subagent.Row, err error) {
		if err != nil {
			b.Fatal(err)
		}
		if len(rows) != benchChildren {
			b.Fatalf("%d rows, want %d", len(rows), benchChildren)
		}
	}
	b.Run("source-jsonl", func(b *testing.B) {
		for b.Loop() {
			src, err := dshformat.OpenJSONL(ctx, corpus)
			if err != nil {
				b.Fatal(err)
			}
			c, err := dshformat.NewCorpus(ctx, src, corpus)
			if err != nil {
				b.Fatal(err)
			}
			rows, err := subagent.NewCorpusLister(c, nil, 0).ListChildren(ctx, gencorpus.DefaultParent)
			check(b, rows, err)
			src.Close()
		}
	})
	b.Run("imported", func(b *testing.B) {
		for b.Loop() {
			st, err := sqlitepersist.OpenReadOnly(ctx, dbPath, sqlitepersist.Options{})
			if err != nil {
				b.Fatal(err)
			}
			rows, err := subagent.NewStoreLister(st, nil, 0).ListChildren(ctx, gencorpus.DefaultParent)
			check(b, rows, err)
			st.Close()
		}
	})
}

// importChildren is the size of the import benchmark's corpus.
const importChildren = 1000

// genExport writes gencorpus's parent with importChildren children (50
// events each) and exports it as plain DSH JSONL, outside the timer.
func genExport(b *testing.B) string {
	b.Helper()
	ctx := context.Background()
	tmp := b.TempDir()
	gen, err := sqlitepersist.Open(ctx, filepath.Join(tmp, "gen.db"), sqlitepersist.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer gen.Close()
	spec := gencorpus.Spec{Children: importChildren, Sessions: importChildren + 1, MinEvents: 50, MaxEvents: 50, Seed: 7}
	if _, err := gencorpus.Generate(ctx, gen, spec); err != nil {
		b.Fatal(err)
	}
	ids, err := All(ctx, gen)
	if err != nil {
		b.Fatal(err)
	}
	dir := filepath.Join(tmp, "jsonl")
	if _, err := Export(ctx, gen, dir, ids, ExportOptions{Compression: dshformat.CompressionNone}); err != nil {
		b.Fatal(err)
	}
	return dir
}

// BenchmarkImportGenCorpus imports gencorpus's 1,000-child subtree from
// plain JSONL into a fresh store per iteration.
func BenchmarkImportGenCorpus(b *testing.B) {
	benchmarkImport(b, corpusAt{dshformat.OpenJSONL, genExport(b)})
}

// BenchmarkImportGenCorpusFloor is BenchmarkImportGenCorpus's floor
// (scripts/benchfloor's): every line parsed, the same rows inserted into a
// fresh store in large transactions with one prepared statement per table.
func BenchmarkImportGenCorpusFloor(b *testing.B) {
	ctx := context.Background()
	dir := genExport(b)
	for b.Loop() {
		b.StopTimer()
		path := filepath.Join(b.TempDir(), "dsh.db")
		st, err := sqlitepersist.Open(ctx, path, sqlitepersist.Options{})
		if err != nil {
			b.Fatal(err)
		}
		st.Close()
		db, err := floor.Open(path, false)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if err := floor.Import(ctx, db, dir); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		db.Close()
		b.StartTimer()
	}
}
