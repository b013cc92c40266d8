package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A rerun of the report keeps the hand-measured part of the old one, from
// its heading to the end, and nothing else of it.
func TestHandMeasuredIsKept(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "benchmarks.md")
	if got, err := handMeasured(path); err != nil || got != "" {
		t.Fatalf("handMeasured of a missing report = %q, %v; want empty", got, err)
	}
	generated := "# dsh benchmarks\n\n| elapsed | 335 s |\n"
	hand := "\n" + handMeasuredHeading + "\n\n| case | before | after |\n"
	if err := os.WriteFile(path, []byte(generated+hand), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := handMeasured(path); err != nil || got != hand {
		t.Fatalf("handMeasured = %q, %v; want %q", got, err, hand)
	}
	if err := os.WriteFile(path, []byte(generated), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := handMeasured(path); err != nil || got != "" {
		t.Fatalf("handMeasured of a report without the section = %q, %v; want empty", got, err)
	}
}

// PostgreSQL cases get ratio tables of their own and a table beside
// SQLite's times; a run without them prints neither.
func TestPostgresTables(t *testing.T) {
	dir := t.TempDir()
	results := filepath.Join(dir, "results.tsv")
	head := "children\tevents\tsessions\tcase\truns\tdsh_ms\tfloor_ms\tdsh_rss_kib\tfloor_rss_kib\tratio_min\tratio_median\tratio_max\tdsh_cpu_ms\tfloor_cpu_ms\tcpu_ratio_min\tcpu_ratio_median\tcpu_ratio_max\trows\tsame\tevents\n"
	lite := "1000\t50\t10000\timport\t3\t1000.0\t800.0\t100\t100\t1.2\t1.25\t1.3\t1200.0\t800.0\t1.4\t1.5\t1.6\t1001\t-\t50000\n"
	pg := "1000\t50\t10000\tpg-import\t3\t2000.0\t1000.0\t100\t100\t1.9\t2.0\t2.1\t900.0\t450.0\t1.9\t2.0\t2.1\t1001\t-\t50000\n"
	report := func(tsv string) string {
		t.Helper()
		if err := os.WriteFile(results, []byte(tsv), 0o644); err != nil {
			t.Fatal(err)
		}
		res, err := readResults(results)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		if err := writeMarkdown(&b, res, nil, "plot.svg"); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	with := report(head + lite + pg)
	for _, want := range []string{
		"## PostgreSQL: dsh / floor, wall time",
		"| 1,000 | 50 | 10,000 | – | – | – | – | 2.00× (1.90–2.10) |",
		"| 1,000 | 50 | 10,000 | import | 1000.0 | 2000.0 | 2.00× | 50,000 | 25,000 |",
	} {
		if !strings.Contains(with, want) {
			t.Errorf("report lacks %q:\n%s", want, with)
		}
	}
	if without := report(head + lite); strings.Contains(without, "## PostgreSQL") || strings.Contains(without, "pg-") {
		t.Errorf("a SQLite-only report mentions PostgreSQL:\n%s", without)
	}
}
