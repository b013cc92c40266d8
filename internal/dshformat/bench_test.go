package dshformat

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-project/dsh/internal/dshfixtures"
)

// The read benchmarks read the whole j-medium oracle corpus (45 sessions,
// ~12,000 events with packed rows and zstd BLOBs) per iteration: open,
// discover, read every session. MB/s is measured on the logical JSONL text
// (the decompressed files), the same for every variant.

type benchCorpus struct {
	zstdDir, plainDir, sqlitePath string
	textBytes                     int64
	events                        int
}

func loadBenchCorpus(b *testing.B) benchCorpus {
	b.Helper()
	dir := dshfixtures.Dir(b, "dsh-oracle/j-medium")
	c := benchCorpus{zstdDir: filepath.Join(dir, "jsonl"), sqlitePath: filepath.Join(dir, "sessions.db"), plainDir: b.TempDir()}
	dec, err := logDecoder()
	if err != nil {
		b.Fatal(err)
	}
	// j-medium ships no plain variant: decompress DSH's zstd files into
	// the same layout, byte for byte.
	err = filepath.WalkDir(c.zstdDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		text, err := dec.DecodeAll(data, nil)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(c.zstdDir, p)
		writeFile(b, c.plainDir, strings.TrimSuffix(rel, ".zstd"), text)
		c.textBytes += int64(len(text))
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	for _, s := range readAll(b, openJSONL(b, c.plainDir)) {
		c.events += len(s.Events)
	}
	return c
}

func benchmarkRead(b *testing.B, c benchCorpus, open func(context.Context) (Source, error)) {
	ctx := context.Background()
	b.SetBytes(c.textBytes)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		src, err := open(ctx)
		if err != nil {
			b.Fatal(err)
		}
		hs, err := src.Headers(ctx)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for _, h := range hs {
			s, err := src.Read(ctx, h.ID)
			if err != nil {
				b.Fatal(err)
			}
			n += len(s.Events)
		}
		src.Close()
		if n != c.events {
			b.Fatalf("read %d events, want %d", n, c.events)
		}
	}
	b.ReportMetric(float64(c.events)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

func BenchmarkReadJSONLPlain(b *testing.B) {
	c := loadBenchCorpus(b)
	benchmarkRead(b, c, func(ctx context.Context) (Source, error) { return OpenJSONL(ctx, c.plainDir) })
}

func BenchmarkReadJSONLZstd(b *testing.B) {
	c := loadBenchCorpus(b)
	benchmarkRead(b, c, func(ctx context.Context) (Source, error) { return OpenJSONL(ctx, c.zstdDir) })
}

func BenchmarkReadSQLite17(b *testing.B) {
	c := loadBenchCorpus(b)
	benchmarkRead(b, c, func(ctx context.Context) (Source, error) { return OpenDSHSQLite(ctx, c.sqlitePath) })
}
