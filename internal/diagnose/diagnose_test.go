package diagnose

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/dsh-project/dsh/internal/corpus"
	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/subagent"
)

// Every finding code the corpus provokes is reported on the session it
// concerns, at the seq it concerns, with the catalog row `dsh list` shows.
func TestDefaultAuditReportsEveryCodeWithSeqAndRow(t *testing.T) {
	s := newStore(t)
	want := damageCorpus(s)
	reports, sum, err := s.audit(Options{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(reports); !slices.Equal(got, storeOrder) {
		t.Errorf("examined\n%v\nwant\n%v", got, storeOrder)
	}
	for _, r := range reports {
		w, ok := want[r.ID]
		if !ok {
			t.Errorf("unexpected session %s", r.ID)
			continue
		}
		if g := describe(expectation{got(r), r.RowKind}); g != describe(w) {
			t.Errorf("%s: %s, want %s", r.ID, g, describe(w))
		}
		for _, f := range r.Findings {
			if f.SessionID != r.ID || f.Severity != f.Code.Severity() || f.Detail == "" {
				t.Errorf("%s: malformed finding %+v", r.ID, f)
			}
			if (f.ParentID == nil) != (r.ParentID == nil) || (f.ParentID != nil && *f.ParentID != *r.ParentID) {
				t.Errorf("%s: finding parent %v, session parent %v", r.ID, f.ParentID, r.ParentID)
			}
		}
	}
	seen := map[Code]bool{}
	for code, n := range sum.ByCode {
		seen[code] = n > 0
	}
	for _, code := range Codes() {
		switch code {
		case UnknownSession:
			// Only --no-strict produces it (TestUnknownIDs).
		case HeaderUnreadable:
			// A store holds no session without a header; a foreign
			// corpus read in place does (source.txtar, dshformat's
			// corpus tests).
		case LifecycleMismatch:
			// Needs a live header that differs from the stored one;
			// leases always publish the stored header.
		case UnsupportedFormat:
			// Only a foreign corpus read in place produces it
			// (source.txtar and the dsh-home tests of cmd/dsh).
		case CatalogFactMalformed, CatalogFactUnsupportedVersion, CatalogDuplicateChild, CatalogBackfillRefused,
			CatalogChildMissing, CatalogChildUncataloged, CatalogMismatch, CatalogModeUnknown:
			// Need parents in DSH's later formats: catalogCorpus
			// provokes each (TestCatalogCrossCheck).
		case EventTextReplaced:
			// Needs a log read from text that is not UTF-8, which
			// dsh's writers never store: a foreign corpus in place
			// and the import of one (cmd/dsh's
			// TestDamageCatalogueTextReplaced, on both backends).
		default:
			if !seen[code] {
				t.Errorf("the corpus provokes no %s", code)
			}
		}
	}
	if sum.Examined != len(storeOrder) || sum.Rows[RowChild] != 13 || sum.Rows[RowCorrupt] != 5 || sum.Rows[RowUnavailable] != 2 || sum.Rows[RowOmitted] != 1 {
		t.Errorf("summary %+v", sum)
	}
}

// The row in a report is exactly the row of `dsh list --parent <parent>`:
// the same lister, the same snapshot.
func TestReportRowIsTheListingRow(t *testing.T) {
	s := newStore(t)
	damageCorpus(s)
	reports, _, err := s.audit(Options{Strict: true, Select: Selection{Parent: "parent", HasParent: true}})
	if err != nil {
		t.Fatal(err)
	}
	rows, err := subagent.NewStoreLister(s.st, s.st, 0).ListChildren(s.ctx, "parent")
	if err != nil {
		t.Fatal(err)
	}
	var fromAudit []subagent.Row
	for _, r := range reports {
		if r.Row != nil {
			fromAudit = append(fromAudit, *r.Row)
		}
	}
	if len(fromAudit) != len(rows) {
		t.Fatalf("%d rows from the audit, %d from the listing", len(fromAudit), len(rows))
	}
	for i := range rows {
		a, l := fromAudit[i], rows[i]
		if a.ID != l.ID || a.Kind != l.Kind || a.Mode != l.Mode || a.Reason != l.Reason || a.Activity != l.Activity ||
			a.HasChildren != l.HasChildren || (a.Label == nil) != (l.Label == nil) || (a.Label != nil && *a.Label != *l.Label) {
			t.Errorf("row %d: audit %+v, listing %+v", i, a, l)
		}
	}
	byID := byID(reports)
	if r := byID["c13-cache-stale"].Row; r == nil || r.Label == nil || *r.Label != "lie" {
		t.Errorf("the stale checkpoint's label is what list shows: %+v", r)
	}
	if r := byID["c19-mid"].Row; r == nil || !r.HasChildren {
		t.Errorf("c19-mid has a subagent child: %+v", r)
	}
	if _, ok := byID["g1-grandchild"]; ok {
		t.Error("children scope examined a grandchild")
	}
}

func TestDescendantsScopePlacesRows(t *testing.T) {
	s := newStore(t)
	damageCorpus(s)
	reports, _, err := s.audit(Options{Strict: true, Select: Selection{Parent: "parent", HasParent: true, Scope: corpus.ScopeDescendants}})
	if err != nil {
		t.Fatal(err)
	}
	// Grouped by parent: c19-mid's child sorts before parent's children.
	if reports[0].ID != "g1-grandchild" || len(reports) != len(storeOrder)-1 {
		t.Fatalf("examined %v", ids(reports))
	}
	g := reports[0].Row
	if g == nil || g.ParentID != "c19-mid" || g.Depth != 2 {
		t.Errorf("grandchild row %+v", g)
	}
	if r := byID(reports)["c01-ok"].Row; r == nil || r.ParentID != "parent" || r.Depth != 1 {
		t.Errorf("child row %+v", r)
	}
}

func TestAllExaminesOrdinarySessions(t *testing.T) {
	s := newStore(t)
	damageCorpus(s)
	reports, sum, err := s.audit(Options{Strict: true, Select: Selection{All: true}})
	if err != nil {
		t.Fatal(err)
	}
	want := append([]string{"parent", "g1-grandchild", "o1-orphan"}, storeOrder[2:]...)
	want = append(want, "f1-fork")
	if got := ids(reports); !slices.Equal(got, want) {
		t.Errorf("examined\n%v\nwant\n%v", got, want)
	}
	for _, id := range []string{"parent", "f1-fork"} {
		if r := byID(reports)[id]; r.Row != nil || r.RowKind != RowNotListed || len(r.Findings) != 0 {
			t.Errorf("%s: %+v", id, r)
		}
	}
	if sum.Rows[RowNotListed] != 2 {
		t.Errorf("rows %v", sum.Rows)
	}
}

func TestUnknownIDs(t *testing.T) {
	s := newStore(t)
	damageCorpus(s)
	for _, sel := range []Selection{
		{IDs: []string{"c01-ok", "nope"}},
		{Parent: "nope", HasParent: true},
		{Parent: "ghost", HasParent: true},
	} {
		_, _, err := s.audit(Options{Strict: true, Select: sel})
		if dsherr.CodeOf(err) != dsherr.NotFound || !strings.Contains(err.Error(), "no session with id") {
			t.Errorf("%+v: %v, want NOT_FOUND", sel, err)
		}
	}
	reports, _, err := s.audit(Options{Select: Selection{IDs: []string{"nope", "c02-missing", "c01-ok", "c02-missing"}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(ids(reports), " "); got != "nope c01-ok c02-missing" {
		t.Errorf("examined %s", got)
	}
	if got(reports[0]) != "UNKNOWN_SESSION" || reports[0].RowKind != RowNotListed {
		t.Errorf("unknown id: %+v", reports[0])
	}
	if r := reports[2]; r.Row == nil || r.Row.Reason != subagent.ReasonCorrupt || got(r) != "DESCRIPTOR_MISSING" {
		t.Errorf("named child: %+v", r)
	}
	// An absent parent still has its orphans examined.
	reports, _, err = s.audit(Options{Select: Selection{Parent: "ghost", HasParent: true}})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(ids(reports), " "); got != "ghost o1-orphan" {
		t.Errorf("examined %s", got)
	}
}

func TestDetailsNameSeqRuleAndChoice(t *testing.T) {
	s := newStore(t)
	damageCorpus(s)
	reports, _, err := s.audit(Options{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	m := byID(reports)
	for _, c := range []struct {
		id   string
		code Code
		want []string
	}{
		{"c03-malformed", DescriptorMalformed, []string{"persisted subagent descriptor provider must be a string", "dsh list shows the child as corrupt"}},
		{"c04-unsupported", DescriptorUnsupportedVersion, []string{"version 4 is not supported"}},
		{"c05-multiple", DescriptorMultiple, []string{`last (seq 7: continuable "second")`, `first (seq 0: continuable "first")`, "they differ"}},
		{"c06-oneshot-first", DescriptorMultiple, []string{"seq 0: one-shot", "they differ"}},
		{"c07-ancestor-only", DescriptorAncestorOnly, []string{"seedLength 7"}},
		{"c08-unreadable", LogUnreadable, []string{"rule " + session.RuleSurfaceOpRequired, "unavailable"}},
		{"c10-gap", SeqGap, []string{"seq 3 is missing", "from seq 2 to 4"}},
		{"c10-gap", LogUnreadable, []string{"committed row at seq 4"}},
		{"c11-depth", DepthInconsistent, []string{"delegationDepth is 3", "expected 1"}},
		{"c12-stale-lease", LeaseStale, []string{"holder-crashed", "pid 4242 on build-7"}},
		{"c13-cache-stale", CacheStale, []string{`unit "subagent"`, "dsh list's row comes from this checkpoint"}},
		{"c14-cache-foreign", CacheForeign, []string{"createdAt"}},
		{"c17-unit-failed", UnitFailed, []string{"poison me"}},
		{"c18-unreadable-cached", LogUnreadable, []string{"from the projection checkpoint"}},
		{"o1-orphan", OrphanParent, []string{`"ghost"`}},
		{"c18-unreadable-cached", NotResumable, []string{`subagent "c18-unreadable-cached" is unavailable`, "NOT_RESUMABLE"}},
		{"c06-oneshot-first", NotResumable, []string{"no supported continuation state", `--parent "parent"`}},
	} {
		f := finding(m[c.id], c.code)
		if f == nil {
			t.Errorf("%s: no %s", c.id, c.code)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(f.Detail, w) {
				t.Errorf("%s %s: %q lacks %q", c.id, c.code, f.Detail, w)
			}
		}
	}
	if f := finding(m["c05-multiple"], DescriptorMultiple); f != nil && strings.Contains(f.Detail, "agree") {
		t.Errorf("different labels reported as agreeing: %s", f.Detail)
	}
}

// Two identical own descriptors: list and resume pick the same identity.
func TestMultipleIdenticalDescriptorsAgree(t *testing.T) {
	s := newStore(t)
	s.root("parent")
	s.create(s.childOf("parent", "twice"),
		append(withDescriptor(continuable("same")), append([]session.Event{ev(7, session.TypeDescriptor, continuable("same"))}, turn(8, 2)...)...))
	reports, _, err := s.audit(Options{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	f := finding(reports[0], DescriptorMultiple)
	if f == nil || !strings.HasSuffix(f.Detail, "they agree") || got(reports[0]) != "DESCRIPTOR_MULTIPLE@7" {
		t.Fatalf("%+v", reports[0])
	}
}

// --max-findings stops the printing, not the audit: the summary (and so
// the exit status) counts every session and finding.
func TestMaxFindingsStopsPrintingButKeepsCounting(t *testing.T) {
	s := newStore(t)
	damageCorpus(s)
	_, full, err := s.audit(Options{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	if full.Findings() <= 3 {
		t.Fatalf("the damage corpus has only %d findings", full.Findings())
	}
	reports, sum, err := s.audit(Options{Strict: true, MaxFindings: 3})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range reports {
		n += len(r.Findings)
	}
	if n != 3 || !sum.Truncated {
		t.Errorf("%d findings reported, summary %+v", n, sum)
	}
	if last := reports[len(reports)-1]; len(last.Findings) == 0 {
		t.Errorf("reports went on past the limit: last report %+v", last)
	}
	if sum.Examined != full.Examined || sum.Findings() != full.Findings() || sum.AtOrAbove(Error) != full.AtOrAbove(Error) {
		t.Errorf("limited summary %+v, full summary %+v", sum, full)
	}
	// A limit that cuts nothing truncates nothing.
	if _, sum, err := s.audit(Options{Strict: true, MaxFindings: full.Findings()}); err != nil || sum.Truncated {
		t.Errorf("limit at the total: truncated %v, err %v", sum.Truncated, err)
	}
}

func TestProgressCountsEverySession(t *testing.T) {
	s := newStore(t)
	damageCorpus(s)
	var calls [][2]int
	_, _, err := s.audit(Options{Strict: true, Progress: func(done, total int) { calls = append(calls, [2]int{done, total}) }})
	if err != nil {
		t.Fatal(err)
	}
	n := len(storeOrder)
	if len(calls) != n+1 || calls[0] != [2]int{0, n} || calls[n] != [2]int{n, n} {
		t.Errorf("progress calls %v", calls)
	}
}

// Cancellation between sessions ends the audit with CANCELLED, never with a
// partial success.
func TestCancelledAudit(t *testing.T) {
	s := newStore(t)
	damageCorpus(s)
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	emitted := 0
	_, err := Run(ctx, s.st, Options{Strict: true}, func(Report) error {
		emitted++
		if emitted == 2 {
			cancel()
		}
		return nil
	})
	if dsherr.CodeOf(err) != dsherr.Cancelled || emitted != 2 {
		t.Fatalf("after %d reports: %v, want CANCELLED", emitted, err)
	}
}

// A diagnostic row whose cause the log audit cannot see still gets a
// finding naming the ladder's cause: a lifecycle witness mismatch arises
// only from a live header that differs from the stored one.
func TestDiagnosticRowIsAlwaysExplained(t *testing.T) {
	corrupt := &subagent.Row{Kind: subagent.KindDiagnostic, ID: "c", Reason: subagent.ReasonCorrupt}
	for _, c := range []struct {
		cause error
		want  Code
	}{
		{subagent.ErrWitnessMismatch, LifecycleMismatch},
		{fmt.Errorf("%w: view threw", subagent.ErrUnitFailed), UnitFailed},
		{subagent.ErrNoIdentity, DescriptorMissing},
		{subagent.ErrAncestorOnly, DescriptorAncestorOnly},
	} {
		s := &sessionAudit{header: session.Header{ID: "c"}}
		explainRow(s, &subagent.Resolution{Row: corrupt, Rung: subagent.RungRead, Cause: c.cause})
		if len(s.findings) != 1 || s.findings[0].Code != c.want || s.findings[0].Severity != Error {
			t.Errorf("cause %v: findings %+v, want one %s", c.cause, s.findings, c.want)
		}
		// A finding that already explains the row is enough.
		s = &sessionAudit{header: session.Header{ID: "c"}}
		s.add(DescriptorMalformed, seqOf(0), "malformed")
		explainRow(s, &subagent.Resolution{Row: corrupt, Rung: subagent.RungRead, Cause: c.cause})
		if len(s.findings) != 1 {
			t.Errorf("cause %v: explained twice: %+v", c.cause, s.findings)
		}
	}
}
