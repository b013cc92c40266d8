package diagnose

import (
	"cmp"
	"slices"

	"github.com/dsh-project/dsh/internal/subagent"
)

// Report is the audit of one session.
type Report struct {
	ID string
	// ParentID is the header's parentSession, nil when it has none.
	ParentID  *string
	CreatedAt int64
	// Row is the row `dsh list` prints for the session (with parentId
	// and depth in descendants scope); nil when no listing shows it.
	Row     *subagent.Row
	RowKind RowKind
	// Findings are sorted by seq, findings about no single event first.
	Findings []Finding
}

// Summary counts what an audit examined and found.
type Summary struct {
	Examined   int
	BySeverity map[Severity]int
	ByCode     map[Code]int
	Rows       map[RowKind]int
	// Truncated is set when the audit stopped at the findings limit.
	Truncated bool
}

func newSummary() Summary {
	return Summary{BySeverity: map[Severity]int{}, ByCode: map[Code]int{}, Rows: map[RowKind]int{}}
}

// Findings is the total number of findings.
func (s Summary) Findings() int {
	n := 0
	for _, c := range s.BySeverity {
		n += c
	}
	return n
}

// AtOrAbove counts findings whose severity is at least min.
func (s Summary) AtOrAbove(min Severity) int {
	n := 0
	for sev, c := range s.BySeverity {
		if sev >= min {
			n += c
		}
	}
	return n
}

func (s *Summary) add(r Report) {
	s.Examined++
	s.Rows[r.RowKind]++
	for _, f := range r.Findings {
		s.BySeverity[f.Severity]++
		s.ByCode[f.Code]++
	}
}

// sortFindings orders findings by seq, those without one first, keeping
// the order they were found in otherwise.
func sortFindings(fs []Finding) {
	slices.SortStableFunc(fs, func(a, b Finding) int {
		switch {
		case a.Seq == nil && b.Seq == nil:
			return 0
		case a.Seq == nil:
			return -1
		case b.Seq == nil:
			return 1
		}
		return cmp.Compare(*a.Seq, *b.Seq)
	})
}
