package render

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/dsh-project/dsh/internal/diagnose"
	"github.com/dsh-project/dsh/internal/subagent"
)

func seqp(n int64) *int64 { return &n }

// sampleDiagnosis covers a clean child, a session with findings with and
// without seq, an omitted child (no row), a session without a parent, a
// descendants row, and text a terminal would act on.
func sampleDiagnosis() ([]diagnose.Report, diagnose.Summary) {
	parent := strp("parent")
	finding := func(id string, p *string, code diagnose.Code, seq *int64, detail string) diagnose.Finding {
		return diagnose.Finding{Code: code, Severity: code.Severity(), SessionID: id, ParentID: p, Seq: seq, Detail: detail}
	}
	reports := []diagnose.Report{
		{ID: "orphan-root", RowKind: diagnose.RowNotListed, Findings: []diagnose.Finding{
			finding("orphan-root", nil, diagnose.OrphanParent, nil, "origin is subagent but the header names no parentSession"),
		}},
		{ID: "ok", ParentID: parent, RowKind: diagnose.RowChild,
			Row: &subagent.Row{Kind: subagent.KindChild, ID: "ok", Mode: subagent.ModeContinuable, Label: strp("fine"), Activity: subagent.ActivityInactive}},
		{ID: "torn", ParentID: parent, RowKind: diagnose.RowChild,
			Row: &subagent.Row{Kind: subagent.KindChild, ID: "torn", Mode: subagent.ModeOneShot, Activity: subagent.ActivityInactive, HasChildren: true},
			Findings: []diagnose.Finding{
				finding("torn", parent, diagnose.LeaseStale, nil, "lease of holder h1 expired"),
				finding("torn", parent, diagnose.TurnInterrupted, seqp(7), "the turn started at seq 7 has no turn/end"),
				finding("torn", parent, diagnose.LogTornTail, seqp(11), "torn tail from seq 11 (data is not valid JSON)"),
			}},
		{ID: "running", ParentID: parent, RowKind: diagnose.RowOmitted},
		{ID: "evil\x1b]0;pwned\x07", ParentID: parent, RowKind: diagnose.RowCorrupt,
			Row: &subagent.Row{Kind: subagent.KindDiagnostic, ID: "evil\x1b]0;pwned\x07", Reason: subagent.ReasonCorrupt, ParentID: "parent", Depth: 1},
			Findings: []diagnose.Finding{
				finding("evil\x1b]0;pwned\x07", parent, diagnose.DescriptorMalformed, seqp(0), "persisted subagent descriptor label must be a string\n\u202e"),
			}},
	}
	sum := diagnose.Summary{
		Examined:   len(reports),
		BySeverity: map[diagnose.Severity]int{diagnose.Error: 1, diagnose.Warning: 3, diagnose.Info: 1},
		ByCode: map[diagnose.Code]int{diagnose.OrphanParent: 1, diagnose.LeaseStale: 1, diagnose.TurnInterrupted: 1,
			diagnose.LogTornTail: 1, diagnose.DescriptorMalformed: 1},
		Rows: map[diagnose.RowKind]int{diagnose.RowChild: 2, diagnose.RowOmitted: 1, diagnose.RowCorrupt: 1, diagnose.RowNotListed: 1},
	}
	return reports, sum
}

// Every diagnose output format is pinned by a golden file.
func TestDiagnosisGolden(t *testing.T) {
	reports, sum := sampleDiagnosis()
	for _, f := range []struct {
		name string
		opts Options
	}{
		{"table", Options{Format: Table}},
		{"tsv", Options{Format: TSV}},
		{"json", Options{Format: JSON}},
		{"jsonl", Options{Format: JSONL}},
	} {
		for _, set := range []struct {
			name    string
			reports []diagnose.Report
			sum     diagnose.Summary
		}{{"findings", reports, sum}, {"empty", nil, diagnose.Summary{}}} {
			name := "diagnose-" + set.name + "." + f.name
			t.Run(name, func(t *testing.T) {
				var buf bytes.Buffer
				d := New(&buf, f.opts).Diagnosis()
				for _, r := range set.reports {
					if err := d.Add(r); err != nil {
						t.Fatal(err)
					}
				}
				if err := d.Close(set.sum); err != nil {
					t.Fatal(err)
				}
				checkGolden(t, name, buf.Bytes())
				switch f.opts.Format {
				case JSON:
					if !json.Valid(buf.Bytes()) {
						t.Errorf("invalid JSON: %s", buf.Bytes())
					}
				case JSONL:
					for _, line := range bytes.Split(bytes.TrimSuffix(buf.Bytes(), []byte("\n")), []byte("\n")) {
						if !json.Valid(line) {
							t.Errorf("invalid JSON line: %s", line)
						}
					}
				}
			})
		}
	}
}
