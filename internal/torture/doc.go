// Package torture holds dsh's opt-in reliability tests: SIGKILL crashes of
// a writer with a ledger of acknowledged appends, concurrent start, resume,
// list and diagnose processes on one parent, and (in scripts/torture) the
// fuzz targets. The tests skip unless DSH_TORTURE is set, so `go test ./...`
// stays fast; scripts/torture runs them with larger counts.
package torture
