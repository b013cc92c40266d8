package main

import (
	"os"
	"path/filepath"
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
