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

// A --search run gets its own section (the search cases' ratios and what
// the index costs per event), and no listing table or plot row of its
// corpus; a run without one has no such section.
func TestSearchSection(t *testing.T) {
	dir := t.TempDir()
	results := filepath.Join(dir, "results.tsv")
	head := "children\tevents\tsessions\tcase\truns\tdsh_ms\tfloor_ms\tdsh_rss_kib\tfloor_rss_kib\tratio_min\tratio_median\tratio_max\tdsh_cpu_ms\tfloor_cpu_ms\tcpu_ratio_min\tcpu_ratio_median\tcpu_ratio_max\trows\tsame\tevents\n"
	rows := "20000\t50\t20001\tpg-search\t5\t600.0\t550.0\t100\t100\t1.0\t1.09\t1.2\t500.0\t480.0\t1.0\t1.04\t1.1\t20\tyes\t0\n" +
		"20000\t50\t20001\tsearch\t5\t600.0\t550.0\t100\t100\t1.0\t1.09\t1.2\t500.0\t480.0\t1.0\t1.04\t1.1\t20\tyes\t0\n" +
		"20000\t50\t20001\tsearch-import\t1\t60000.0\t20000.0\t100\t100\t3.0\t3.0\t3.0\t50000.0\t20000.0\t2.5\t2.5\t2.5\t20001\t-\t1000000\n"
	facts := filepath.Join(dir, "search.tsv")
	if err := os.WriteFile(results, []byte(head+rows), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(facts, []byte("store\tevents\tmessages\tindex_bytes\tstore_bytes\textra\n"+
		"SQLite\t1000000\t330000\t64000000\t380000000\tladder\n"+
		"SQLite import\t1000000\t330000\t63000000\t370000000\t310000000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	md, svg := filepath.Join(dir, "b.md"), filepath.Join(dir, "b.svg")
	if err := run(results, "/dev/null", facts, md, svg); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	got := string(b)
	for _, want := range []string{
		"## dsh search (issue 26)",
		"- **pg-search**: ",
		"| 20,000 | 50 | search | 600.0 | 550.0 | 1.09× (1.00–1.20) | 1.04× (1.00–1.10) | yes |",
		"| 20,000 | 50 | search-import | 60000.0 | 20000.0 | 3.00× (3.00–3.00) | 2.50× (2.50–2.50) | – |",
		"| SQLite | 1,000,000 | 330,000 | 64,000,000 | 64 | 194 | 380,000,000 | query `ladder` |",
		"| SQLite import | 1,000,000 | 330,000 | 63,000,000 | 63 | 191 | 370,000,000 | imported without the index: 310,000,000 bytes |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "| 20,000 | 50 | 20,001 | –") {
		t.Errorf("the search corpus has a row in the listing tables:\n%s", got)
	}
	if _, err := os.Stat(svg); err == nil || strings.Contains(got, "## Listing time") {
		t.Errorf("a run without a listing wrote or named a plot")
	}
	if err := run(results, "/dev/null", "", md, svg); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(md); strings.Contains(string(b), "## dsh search") {
		t.Errorf("a report without search sizes has a search section")
	}
}
