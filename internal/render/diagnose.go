package render

import (
	"strconv"
	"strings"

	"github.com/dsh-project/dsh/internal/corpus"
	"github.com/dsh-project/dsh/internal/diagnose"
	"github.com/dsh-project/dsh/internal/jsjson"
)

// Diagnosis prints a diagnose audit as its reports arrive:
//   - table: one line per finding, like git fsck,
//     `<severity> <code> <session> [seq N]: <detail>`, every stored string
//     escaped; sessions without findings print nothing;
//   - TSV: the same lines as five tab-separated cells, severity, code,
//     session, seq (empty when the finding concerns no single event) and
//     detail, for cut and awk;
//   - JSONL: one session object per line, then one {"summary":…} line;
//   - JSON: one document {"summary":…,"sessions":[…]}. The summary is known
//     only at the end, so the encoded session objects (small: a row and a
//     few findings each) are held until Close.
type Diagnosis struct {
	p        *Printer
	sessions []byte
	count    int
}

// Diagnosis starts printing an audit on p. Call Close with the summary.
func (p *Printer) Diagnosis() *Diagnosis { return &Diagnosis{p: p} }

// Add prints (JSON: holds) one session's report.
func (d *Diagnosis) Add(r diagnose.Report) error {
	switch d.p.opts.Format {
	case JSON:
		if d.count > 0 {
			d.sessions = append(d.sessions, ',')
		}
		d.sessions = AppendDiagnosisSession(d.sessions, r)
		d.count++
		return nil
	case JSONL:
		_, err := d.p.w.Write(append(AppendDiagnosisSession(nil, r), '\n'))
		return err
	}
	var b strings.Builder
	for _, f := range r.Findings {
		if d.p.opts.Format == TSV {
			b.WriteString(findingTSV(f))
		} else {
			b.WriteString(FindingLine(f))
		}
		b.WriteByte('\n')
	}
	_, err := d.p.w.Write([]byte(b.String()))
	return err
}

// Close prints the summary (JSON: the whole document). Table and TSV print
// no summary on stdout; the command reports it on stderr.
func (d *Diagnosis) Close(s diagnose.Summary) error {
	var b []byte
	switch d.p.opts.Format {
	case JSON:
		b = append(b, `{"summary":`...)
		b = AppendDiagnosisSummary(b, s)
		b = append(b, `,"sessions":[`...)
		b = append(b, d.sessions...)
		b = append(b, "]}\n"...)
		d.sessions = nil
	case JSONL:
		b = append(b, `{"summary":`...)
		b = AppendDiagnosisSummary(b, s)
		b = append(b, "}\n"...)
	default:
		return nil
	}
	_, err := d.p.w.Write(b)
	return err
}

// FindingLine is a finding as one line for people:
// `<severity> <code> <session> [seq N]: <detail>`, escaped.
func FindingLine(f diagnose.Finding) string {
	var b strings.Builder
	b.WriteString(f.Severity.String())
	b.WriteByte(' ')
	b.WriteString(string(f.Code))
	b.WriteByte(' ')
	b.WriteString(Escape(f.SessionID))
	if f.Seq != nil {
		b.WriteString(" seq ")
		b.WriteString(strconv.FormatInt(*f.Seq, 10))
	}
	b.WriteString(": ")
	b.WriteString(Escape(f.Detail))
	return b.String()
}

// findingTSV is a finding as tab-separated cells; Escape turns a tab inside
// a cell into \t, so every line has exactly five cells.
func findingTSV(f diagnose.Finding) string {
	seq := ""
	if f.Seq != nil {
		seq = strconv.FormatInt(*f.Seq, 10)
	}
	return strings.Join([]string{f.Severity.String(), string(f.Code), Escape(f.SessionID), seq, Escape(f.Detail)}, "\t")
}

// AppendDiagnosisSession appends one session's report as JSON:
// {"id","parentId","row","rowKind","findings"}; parentId and row are null
// when absent, row is DSH's SubagentListEntry (with parentId and depth in
// descendants scope).
func AppendDiagnosisSession(b []byte, r diagnose.Report) []byte {
	b = append(b, `{"id":`...)
	b = jsjson.AppendString(b, r.ID)
	b = append(b, `,"parentId":`...)
	b = appendOptString(b, r.ParentID)
	b = append(b, `,"row":`...)
	if r.Row == nil {
		b = append(b, "null"...)
	} else {
		scope := corpus.ScopeChildren
		if r.Row.Depth > 0 {
			scope = corpus.ScopeDescendants
		}
		b = AppendListEntry(b, *r.Row, scope)
	}
	b = append(b, `,"rowKind":`...)
	b = jsjson.AppendString(b, string(r.RowKind))
	b = append(b, `,"findings":[`...)
	for i, f := range r.Findings {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendFinding(b, f)
	}
	return append(b, "]}"...)
}

// appendFinding writes {"code","severity","sessionId","parentId","seq"?,"detail"}.
func appendFinding(b []byte, f diagnose.Finding) []byte {
	b = append(b, `{"code":`...)
	b = jsjson.AppendString(b, string(f.Code))
	b = append(b, `,"severity":`...)
	b = jsjson.AppendString(b, f.Severity.String())
	b = append(b, `,"sessionId":`...)
	b = jsjson.AppendString(b, f.SessionID)
	b = append(b, `,"parentId":`...)
	b = appendOptString(b, f.ParentID)
	if f.Seq != nil {
		b = append(b, `,"seq":`...)
		b = jsjson.AppendInt(b, *f.Seq)
	}
	b = append(b, `,"detail":`...)
	b = jsjson.AppendString(b, f.Detail)
	return append(b, '}')
}

// AppendDiagnosisSummary appends the summary object. Every severity, code
// and row kind is present (zero when none), so consumers never meet a
// missing key.
func AppendDiagnosisSummary(b []byte, s diagnose.Summary) []byte {
	b = append(b, `{"examined":`...)
	b = jsjson.AppendInt(b, int64(s.Examined))
	b = append(b, `,"bySeverity":{`...)
	for i, sev := range []diagnose.Severity{diagnose.Error, diagnose.Warning, diagnose.Info} {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsjson.AppendString(b, sev.String())
		b = append(b, ':')
		b = jsjson.AppendInt(b, int64(s.BySeverity[sev]))
	}
	b = append(b, `},"byCode":{`...)
	for i, code := range diagnose.Codes() {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsjson.AppendString(b, string(code))
		b = append(b, ':')
		b = jsjson.AppendInt(b, int64(s.ByCode[code]))
	}
	b = append(b, `},"rows":{`...)
	for i, k := range diagnose.RowKinds() {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsjson.AppendString(b, string(k))
		b = append(b, ':')
		b = jsjson.AppendInt(b, int64(s.Rows[k]))
	}
	b = append(b, `},"truncated":`...)
	b = strconv.AppendBool(b, s.Truncated)
	return append(b, '}')
}

func appendOptString(b []byte, s *string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	return jsjson.AppendString(b, *s)
}
