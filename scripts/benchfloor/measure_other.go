//go:build !unix

package main

import (
	"fmt"
	"os"
)

// measure needs rusage, which only Unix systems report.
func measure([]string) int {
	fmt.Fprintln(os.Stderr, "benchfloor measure: CPU time and peak RSS need a Unix system")
	return 2
}
