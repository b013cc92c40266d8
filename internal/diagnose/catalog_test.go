package diagnose

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/dsh-project/dsh/internal/corpus"
	"github.com/dsh-project/dsh/internal/dshcompat"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/subagent"
)

// laterHeader is a format-V2+ header (unseeded); parent "" for a root.
func (s *store) laterHeader(version int64, id, parent string) session.Header {
	h := session.Header{Version: version, ID: id, CreatedAt: s.tick(), Cwd: ptr("/work"), DelegationDepth: ptr(int64(0))}
	if parent != "" {
		h.ParentSession, h.Origin, h.DelegationDepth = ptr(parent), ptr(session.OriginSubagent), ptr(int64(1))
	}
	return h
}

func fact(seq int64, payload string) session.Event { return ev(seq, session.TypeCatalog, payload) }

// factOf is a valid v0 fact naming h with mode and label ("" for none).
func factOf(seq int64, h session.Header, mode, label string) session.Event {
	return factFor(seq, h.ID, h.CreatedAt, mode, label)
}

func factFor(seq int64, id string, createdAt int64, mode, label string) session.Event {
	payload := fmt.Sprintf(`{"version":0,"childId":%q,"childCreatedAt":%d,"mode":%q`, id, createdAt, mode)
	if label != "" {
		payload += fmt.Sprintf(`,"label":%q`, label)
	}
	return fact(seq, payload+"}")
}

func laterDescriptor(seq int64, mode, label string) session.Event {
	payload := fmt.Sprintf(`{"version":3,"mode":%q,"provider":"spawn"`, mode)
	if label != "" {
		payload += fmt.Sprintf(`,"label":%q`, label)
	}
	return ev(seq, session.TypeDescriptor, payload+"}")
}

// catalogCorpus builds parents in DSH's later formats whose catalogs
// provoke every CATALOG_* code, and returns what the audit must say per
// session (findings "CODE@seq" in order).
func catalogCorpus(s *store) map[string]string {
	s.t.Helper()
	want := map[string]string{}
	child := func(h session.Header, events ...session.Event) session.Header {
		s.importLog(h, events)
		return h
	}

	// A V4 parent: its catalog is read as written.
	p4 := s.laterHeader(4, "p4", "")
	ok := child(s.laterHeader(4, "p4-ok", "p4"), laterDescriptor(0, "continuable", "ok"))
	created := child(s.laterHeader(4, "p4-created", "p4"), laterDescriptor(0, "continuable", "created"))
	label := child(s.laterHeader(4, "p4-label", "p4"), laterDescriptor(0, "continuable", "desc-label"))
	unknown := child(s.laterHeader(4, "p4-unknown", "p4"), laterDescriptor(0, "one-shot", ""))
	child(s.laterHeader(4, "p4-uncataloged", "p4"), laterDescriptor(0, "continuable", "hidden"))
	// A V0 child of a V4 parent is judged by its parent's catalog all
	// the same.
	v0 := s.childOf("p4", "p4-v0")
	child(v0, ev(0, session.TypeDescriptor, continuable("v0")))
	s.importLog(p4, []session.Event{
		factOf(0, ok, "continuable", "ok"),
		factFor(1, created.ID, created.CreatedAt+5, "continuable", "created"),
		factOf(2, label, "continuable", "cat-label"),
		fact(3, fmt.Sprintf(`{"version":1,"childId":"p4-unknown","childCreatedAt":%d,"mode":"unknown"}`, unknown.CreatedAt)),
		factFor(4, "p4-missing", 7, "one-shot", ""),
		factOf(5, v0, "one-shot", "v0"),
	})
	want["p4"] = ""
	want["p4-missing"] = "CATALOG_CHILD_MISSING@4"
	want["p4-ok"] = ""
	want["p4-created"] = "CATALOG_MISMATCH@1"
	want["p4-label"] = "CATALOG_MISMATCH@2"
	want["p4-unknown"] = "CATALOG_MODE_UNKNOWN@3"
	want["p4-uncataloged"] = "CATALOG_CHILD_UNCATALOGED"
	want["p4-v0"] = "CATALOG_MISMATCH@5"

	// A V4 parent DSH 0.1.7+ cannot read: each bad fact is reported on
	// it, and its children are not judged against it.
	bad := s.laterHeader(4, "p4-bad", "")
	x := child(s.laterHeader(4, "x", "p4-bad"), laterDescriptor(0, "continuable", "x"))
	s.importLog(bad, []session.Event{
		fact(0, `{"version":0,"childId":"x","childCreatedAt":-1,"mode":"continuable","label":"x"}`),
		fact(1, `{"version":7,"childId":"x","childCreatedAt":1,"mode":"continuable","label":"x"}`),
		factOf(2, x, "continuable", "x"),
		factOf(3, x, "continuable", "x"),
		fact(4, `"not an object"`),
	})
	want["p4-bad"] = "CATALOG_FACT_MALFORMED@0 CATALOG_FACT_UNSUPPORTED_VERSION@1 CATALOG_DUPLICATE_CHILD@3 CATALOG_FACT_MALFORMED@4"
	want["x"] = ""

	// A V3 parent: DSH 0.1.7+ reads it through its V3->V4 migration,
	// whose back-fill judges each child's evidence.
	p3 := s.laterHeader(3, "p3", "")
	conflict := child(s.laterHeader(4, "p3-conflict", "p3"), laterDescriptor(0, "continuable", "c"))
	child(s.laterHeader(4, "p3-twice", "p3"), laterDescriptor(0, "continuable", "one"), laterDescriptor(1, "continuable", "two"))
	child(s.laterHeader(4, "p3-fine", "p3"), laterDescriptor(0, "one-shot", ""))
	s.importLog(p3, []session.Event{factFor(0, conflict.ID, conflict.CreatedAt+1, "continuable", "c")})
	want["p3"] = ""
	want["p3-conflict"] = "CATALOG_BACKFILL_REFUSED@0"
	want["p3-twice"] = "CATALOG_MODE_UNKNOWN DESCRIPTOR_MULTIPLE@1"
	want["p3-fine"] = ""

	// A format-0 parent without facts: DSH 0.1.7 would back-fill it too,
	// but the cross-check is for parents with facts or in V2+.
	s.root("p0")
	s.create(s.childOf("p0", "p0-child"), []session.Event{ev(0, session.TypeDescriptor, oneShot)})
	want["p0"] = ""
	want["p0-child"] = ""
	return want
}

func TestCatalogCrossCheck(t *testing.T) {
	s := newStore(t)
	want := catalogCorpus(s)
	reports, sum, err := s.audit(Options{Strict: true, Select: Selection{All: true}})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range reports {
		w, ok := want[r.ID]
		if !ok {
			t.Errorf("unexpected report %s: %s", r.ID, got(r))
			continue
		}
		seen[r.ID] = true
		if g := got(r); g != w {
			t.Errorf("%s: %q, want %q", r.ID, g, w)
		}
		for _, f := range r.Findings {
			if f.SessionID != r.ID || f.Severity != f.Code.Severity() || f.Detail == "" || strings.Contains(f.Detail, "\n") {
				t.Errorf("%s: malformed finding %+v", r.ID, f)
			}
		}
	}
	for id := range want {
		if !seen[id] {
			t.Errorf("no report for %s", id)
		}
	}
	// The missing child is reported right after its parent, with the
	// parent it was cataloged under.
	at := slices.IndexFunc(reports, func(r Report) bool { return r.ID == "p4-missing" })
	if at < 1 || reports[at-1].ID != "p4" || reports[at].ParentID == nil || *reports[at].ParentID != "p4" || reports[at].RowKind != RowNotListed {
		t.Errorf("missing child's report at %d: %+v (before it %v)", at, reports[max(at, 0)], ids(reports))
	}
	if sum.Examined != len(want) {
		t.Errorf("examined %d, want %d", sum.Examined, len(want))
	}
	for _, code := range Codes() {
		if strings.HasPrefix(string(code), "CATALOG_") && sum.ByCode[code] == 0 {
			t.Errorf("the catalog corpus provokes no %s", code)
		}
	}
}

// The cross-check of a child is the same however the child is selected:
// by the default audit (subagent sessions), by its parent, by its id. A
// parent not examined itself still has its missing children reported when
// its children are examined, and its own catalog damage (which makes DSH
// 0.1.7+ list none of them) before them.
func TestCatalogCrossCheckEverySelection(t *testing.T) {
	s := newStore(t)
	want := catalogCorpus(s)
	for _, c := range []struct {
		sel  Selection
		want []string
	}{
		{Selection{}, []string{"p0-child", "p3-conflict", "p3-fine", "p3-twice", "p4-ok", "p4-created", "p4-label", "p4-unknown", "p4-uncataloged", "p4-v0", "p4-missing", "p4-bad", "x"}},
		{Selection{Parent: "p4", HasParent: true}, []string{"p4-ok", "p4-created", "p4-label", "p4-unknown", "p4-uncataloged", "p4-v0", "p4-missing"}},
		{Selection{Parent: "p3", HasParent: true, Scope: corpus.ScopeDescendants}, []string{"p3-conflict", "p3-twice", "p3-fine"}},
		{Selection{Parent: "p4-bad", HasParent: true}, []string{"p4-bad", "x"}},
		{Selection{Parent: "p4-bad", HasParent: true, Scope: corpus.ScopeDescendants}, []string{"p4-bad", "x"}},
		{Selection{IDs: []string{"p4-created", "p4-uncataloged", "p3-conflict", "p4-bad", "p4"}}, []string{"p4-bad", "p4", "p4-missing", "p3-conflict", "p4-created", "p4-uncataloged"}},
	} {
		reports, _, err := s.audit(Options{Strict: true, Select: c.sel})
		if err != nil {
			t.Fatal(err)
		}
		if examined := ids(reports); !slices.Equal(slices.Sorted(slices.Values(examined)), slices.Sorted(slices.Values(c.want))) {
			t.Errorf("%+v: examined %v, want %v", c.sel, examined, c.want)
		}
		for _, r := range reports {
			if g := got(r); g != want[r.ID] {
				t.Errorf("%+v: %s: %q, want %q", c.sel, r.ID, g, want[r.ID])
			}
		}
		// The unreadable catalog comes before the children it hides.
		if bad, x := slices.IndexFunc(reports, func(r Report) bool { return r.ID == "p4-bad" }), slices.IndexFunc(reports, func(r Report) bool { return r.ID == "x" }); x >= 0 && bad > x {
			t.Errorf("%+v: p4-bad reported at %d, after its child x at %d", c.sel, bad, x)
		}
	}
}

// Under --dsh-compat 0.1.7 a report's row is DSH 0.1.7's (the listing's
// own rows, from the catalog), while the findings stay those of every
// profile.
func TestCatalogProfileRows(t *testing.T) {
	s := newStore(t)
	want := catalogCorpus(s)
	reports, sum, err := s.audit(Options{Profile: dshcompat.V017, Strict: true, Select: Selection{All: true}})
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	for _, r := range reports {
		if g := got(r); g != want[r.ID] {
			t.Errorf("%s: %q, want %q (the findings of every profile)", r.ID, g, want[r.ID])
		}
		row := "null"
		if r.Row != nil {
			row = fmt.Sprintf("%s %s %s %s", r.Row.Kind, r.Row.Mode, r.Row.Reason, derefOr(r.Row.Label))
		}
		rows[r.ID] = string(r.RowKind) + ": " + strings.Join(strings.Fields(row), " ")
	}
	for id, w := range map[string]string{
		"p4-ok":          "child: child continuable ok",
		"p4-label":       "child: child continuable cat-label",  // the catalog's label
		"p4-v0":          "child: child one-shot v0",            // the catalog's mode
		"p4-unknown":     "unsupported: diagnostic unsupported", // DSH 0.1.7's fifth outcome
		"p4-missing":     "unavailable: diagnostic unavailable", // cataloged, no session
		"p4-uncataloged": "notListed: null",                     // not in the catalog
		"x":              "notListed: null",                     // its parent is unreadable
		"p3-conflict":    "notListed: null",                     // the back-fill refuses p3
		"p0-child":       "child: child one-shot",               // the back-filled catalog
		"p4":             "notListed: null",
	} {
		if rows[id] != w {
			t.Errorf("%s: row %q, want %q", id, rows[id], w)
		}
	}
	if sum.Rows[RowUnsupported] != 1 || sum.Rows[RowUnavailable] != 1 {
		t.Errorf("rows %v", sum.Rows)
	}
	// The rows are the listing's: the same lister, the same snapshot.
	l := subagent.NewStoreLister(s.st, nil, 1)
	l.Profile = dshcompat.V017
	listed, err := l.ListChildren(s.ctx, "p4")
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range listed {
		r := byID(reports)[row.ID]
		if r.Row == nil || r.Row.Kind != row.Kind || r.Row.Mode != row.Mode || r.Row.Reason != row.Reason || derefOr(r.Row.Label) != derefOr(row.Label) || r.Row.HasChildren != row.HasChildren {
			t.Errorf("%s: report row %+v, listing row %+v", row.ID, r.Row, row)
		}
	}
}

func derefOr(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
