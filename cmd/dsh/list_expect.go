package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/rogpeppe/go-internal/diff"
	"github.com/spf13/cobra"

	"github.com/dsh-project/dsh/internal/boundedfile"
	"github.com/dsh-project/dsh/internal/corpus"
	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/jsjson"
	"github.com/dsh-project/dsh/internal/render"
	"github.com/dsh-project/dsh/internal/subagent"
)

// listExpectations are dsh list's CI assertions: the listing is printed as
// usual, then checked, and a failed check exits 1 (a readable diff of the
// rows on stderr for --expect).
type listExpectations struct {
	file          string
	count         int
	countGiven    bool
	noDiagnostics bool
	// want is the --expect file's rows, one compact JSON object each.
	want [][]byte
}

func (e *listExpectations) addFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&e.file, "expect", "", "exit 1 with a diff unless the rows equal this file's (dsh list -o json or -o jsonl output)")
	f.IntVar(&e.count, "expect-count", 0, "exit 1 unless there are exactly this many rows")
	f.BoolVar(&e.noDiagnostics, "expect-no-diagnostics", false, "exit 1 if any row is a diagnostic (corrupt or unavailable)")
}

// prepare validates the flags and reads the --expect file before anything
// is listed, so a bad file is a usage error, not a failed check.
func (e *listExpectations) prepare(cmd *cobra.Command) error {
	f := cmd.Flags()
	e.countGiven = f.Changed("expect-count")
	if e.countGiven && e.count < 0 {
		return dsherr.New(dsherr.Usage, "--expect-count: %d is negative", e.count)
	}
	if !f.Changed("expect") {
		return nil
	}
	if e.file == "" {
		return dsherr.New(dsherr.InvalidInput, "--expect: empty value")
	}
	text, err := boundedfile.Read(cmd.Context(), e.file, maxExpectBytes)
	if err != nil {
		return dsherr.Wrap(dsherr.InvalidInput, err, "--expect")
	}
	e.want, err = expectedRows(text)
	if err != nil {
		return dsherr.Wrap(dsherr.InvalidInput, err, "--expect %s", e.file)
	}
	if e.want == nil {
		e.want = [][]byte{}
	}
	return nil
}

// given reports whether any check was asked for.
func (e *listExpectations) given() bool { return e.want != nil || e.countGiven || e.noDiagnostics }

// maxExpectBytes bounds a golden listing: a million rows of a typical size.
const maxExpectBytes = 256 << 20

// expectedRows reads a golden listing: one JSON array (dsh list -o json) or
// one object per line (-o jsonl). Each row is re-serialised compactly with
// its key order kept, as dsh prints rows.
func expectedRows(text []byte) ([][]byte, error) {
	text = bytes.TrimSpace(text)
	var raws []json.RawMessage
	if bytes.HasPrefix(text, []byte("[")) {
		if err := json.Unmarshal(text, &raws); err != nil {
			return nil, fmt.Errorf("not a JSON array of rows: %w", err)
		}
	} else {
		for i, line := range bytes.Split(text, []byte("\n")) {
			if line = bytes.TrimSpace(line); len(line) == 0 {
				continue
			}
			if !json.Valid(line) {
				return nil, fmt.Errorf("line %d is not JSON", i+1)
			}
			raws = append(raws, line)
		}
	}
	rows := make([][]byte, len(raws))
	for i, raw := range raws {
		if !bytes.HasPrefix(bytes.TrimSpace(raw), []byte("{")) {
			return nil, fmt.Errorf("row %d is not a JSON object", i+1)
		}
		c, err := jsjson.Compact(raw)
		if err != nil {
			return nil, fmt.Errorf("row %d: %w", i+1, err)
		}
		rows[i] = c
	}
	return rows, nil
}

// check asserts the printed rows. Every failed assertion is reported; the
// --expect diff goes to stderr.
func (e *listExpectations) check(a *app, rows []subagent.Row, scope corpus.Scope) error {
	var failed []string
	if e.want != nil {
		var want, got bytes.Buffer
		for _, w := range e.want {
			want.Write(w)
			want.WriteByte('\n')
		}
		for _, r := range rows {
			got.Write(render.AppendListEntry(nil, r, scope))
			got.WriteByte('\n')
		}
		if d := diff.Diff(e.file, want.Bytes(), "dsh list", got.Bytes()); d != nil {
			// Row text comes from the corpus: escaped line by line, so
			// the diff keeps its shape and cannot drive the terminal.
			var b strings.Builder
			for line := range strings.Lines(string(d)) {
				b.WriteString(render.Escape(strings.TrimSuffix(line, "\n")))
				b.WriteByte('\n')
			}
			io.WriteString(a.stderr, b.String())
			failed = append(failed, "the rows differ from "+e.file)
		}
	}
	if e.countGiven && len(rows) != e.count {
		failed = append(failed, fmt.Sprintf("%d row(s), expected %d", len(rows), e.count))
	}
	if e.noDiagnostics {
		var diags []string
		for _, r := range rows {
			if r.Kind == subagent.KindDiagnostic {
				diags = append(diags, fmt.Sprintf("%s (%s)", r.ID, r.Reason))
			}
		}
		if len(diags) > 0 {
			shown := diags[:min(len(diags), 5)]
			more := ""
			if len(diags) > len(shown) {
				more = ", …"
			}
			failed = append(failed, fmt.Sprintf("%d diagnostic row(s): %s%s", len(diags), strings.Join(shown, ", "), more))
		}
	}
	if len(failed) > 0 {
		return failedCheck("%s", strings.Join(failed, "; "))
	}
	return nil
}
