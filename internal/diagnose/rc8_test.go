package diagnose

import (
	"strings"
	"testing"

	"github.com/dsh-project/dsh/internal/dshcompat"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/subagent"
)

// Under --dsh-compat 0.1.0-rc.8 the audit's rows are rc.8's listing rows
// and its descriptor findings follow rc.8's rules: a version-3 descriptor
// is unsupported (the row corrupt, though dsh resume reads it), and a fork
// child whose only descriptor is its ancestor's is listed under that
// identity, which resume refuses. Every other session of the damage corpus
// reads as under seeds.
func TestRC8AuditFollowsRC8(t *testing.T) {
	s := newStore(t)
	want := damageCorpus(s)
	h := s.childOf("parent", "c20-version-3")
	v3 := `{"version":3,"mode":"continuable","provider":"spawn","label":"later"}`
	s.create(h, withDescriptor(v3))
	s.checkpoint(h, withDescriptor(v3))
	h = s.childOf("parent", "c21-v2-then-v3")
	s.create(h, append(withDescriptor(continuable("first")), append([]session.Event{ev(7, session.TypeDescriptor, v3)}, turn(8, 2)...)...))

	seeds := map[string]expectation{
		"c20-version-3":  {"", RowChild},
		"c21-v2-then-v3": {"DESCRIPTOR_MULTIPLE@7", RowChild},
	}
	rc8 := map[string]expectation{
		"c07-ancestor-only": {"NOT_RESUMABLE DESCRIPTOR_ANCESTOR_ONLY@0", RowChild},
		"c20-version-3":     {"DESCRIPTOR_UNSUPPORTED_VERSION@0", RowCorrupt},
		"c21-v2-then-v3":    {"DESCRIPTOR_UNSUPPORTED_VERSION@7 DESCRIPTOR_MULTIPLE@7", RowCorrupt},
	}
	for _, profile := range []dshcompat.Profile{dshcompat.Seeds, dshcompat.RC8} {
		exp := map[string]expectation{}
		for id, e := range want {
			exp[id] = e
		}
		over := seeds
		if profile == dshcompat.RC8 {
			for id, e := range seeds {
				exp[id] = e
			}
			over = rc8
		}
		for id, e := range over {
			exp[id] = e
		}
		reports, _, err := s.audit(Options{Profile: profile, Strict: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range reports {
			if g, w := describe(expectation{got(r), r.RowKind}), describe(exp[r.ID]); g != w {
				t.Errorf("%s %s: %s, want %s", profile, r.ID, g, w)
			}
		}
		// The rows are the listing's under the same profile.
		l := subagent.NewStoreLister(s.st, s.st, 0)
		l.Profile = profile
		rows, err := l.ListChildren(s.ctx, "parent")
		if err != nil {
			t.Fatal(err)
		}
		byID := byID(reports)
		for _, row := range rows {
			r := byID[row.ID].Row
			if r == nil || r.Kind != row.Kind || r.Reason != row.Reason || (r.Label == nil) != (row.Label == nil) || (r.Label != nil && *r.Label != *row.Label) {
				t.Errorf("%s %s: audit row %+v, listing row %+v", profile, row.ID, r, row)
			}
		}
		if profile != dshcompat.RC8 {
			continue
		}
		for id, frag := range map[string][2]string{
			"c20-version-3":     {"DESCRIPTOR_UNSUPPORTED_VERSION", "descriptor version 3 is not supported by DSH 0.1.0-rc.8 (it reads version 2); it is the last descriptor, so dsh list shows the child as corrupt; dsh resume, which reads versions 2 and 3, takes it"},
			"c07-ancestor-only": {"DESCRIPTOR_ANCESTOR_ONLY", `dsh list shows the ancestor's identity, continuable "ancestor", as DSH 0.1.0-rc.8 does (deviation #1), and resume refuses it (NOT_RESUMABLE)`},
		} {
			f := finding(byID[id], Code(frag[0]))
			if f == nil || !strings.Contains(f.Detail, frag[1]) {
				t.Errorf("%s %s: %+v, want a detail containing %q", id, frag[0], f, frag[1])
			}
		}
	}
}
