package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The README's speed note quotes the CPU-time ratios of the last
// scripts/bench run at 10,000 children; they must be the ones
// docs/benchmarks.md reports, so regenerating the report without the
// README (or the other way round) fails here.
func TestReadmeSpeedNoteQuotesTheReport(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	report, err := os.ReadFile(filepath.Join("..", "..", "docs", "benchmarks.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, cpu, found := strings.Cut(string(report), "## dsh / floor, CPU time")
	if !found {
		t.Fatal("docs/benchmarks.md has no CPU-time table")
	}
	small, large := reportMedians(t, cpu, "| 10,000 | 50 | 10,000 |"), reportMedians(t, cpu, "| 10,000 | 50 | 200,000 |")
	// The report's columns: warm, bare table, cold, descendants, diagnose, import.
	pair := func(col int) string { return small[col] + " / " + large[col] }
	want := "warm `list -o json` " + pair(0) + ", cold `list` " + pair(2) +
		", `--scope descendants` " + pair(3) + ", `diagnose` " + pair(4) + ", `import` " + pair(5) +
		"; against a bare indexed table of only (id, parent, createdAt, mode, label) the warm listing is " + pair(1) + "."
	if prose := strings.Join(strings.Fields(string(readme)), " "); !strings.Contains(prose, want) {
		t.Errorf("README's speed note does not quote docs/benchmarks.md; want it to say:\n%s", want)
	}
}

var medianRatio = regexp.MustCompile(`([0-9]+\.[0-9]+×) \(`)

// reportMedians returns the median ratios of the table row starting with
// prefix.
func reportMedians(t *testing.T, table, prefix string) []string {
	t.Helper()
	for _, line := range strings.Split(table, "\n") {
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		var out []string
		for _, m := range medianRatio.FindAllStringSubmatch(line, -1) {
			out = append(out, m[1])
		}
		if len(out) != 6 {
			t.Fatalf("row %q: %d ratios, want 6", line, len(out))
		}
		return out
	}
	t.Fatalf("docs/benchmarks.md has no row %q", prefix)
	return nil
}
