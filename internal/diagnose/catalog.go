package diagnose

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/catalog"
	"github.com/dsh-project/dsh/internal/corpus"
	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/subagent"
)

// The catalog cross-check. DSH 0.1.0-rc.8 (and dsh's seeds profile) finds a
// parent's children by their headers; DSH 0.1.7 and later by the parent's
// own subagent/catalog facts. Wherever a parent has catalog facts or is in
// format V2 or later, the audit compares the two authorities in every
// profile, so that a CI job learns before an upgrade what DSH will stop
// showing:
//
//   - on the parent (judged from its own log when the audit examines it,
//     else from its catalog events when the audit examines its children:
//     reportParentFacts): each own fact that is malformed or of an
//     unsupported version, each repeated child id, and each cataloged child
//     with no session (a report of its own, after the parent's);
//   - on a subagent child (judged against its parent's catalog, read once
//     per parent): not named by the catalog, a fact whose childCreatedAt,
//     mode or label disagrees with the child, an unknown-mode entry; and
//     for a V0-V3 parent what DSH's in-memory V3->V4 back-fill makes of the
//     child, a refusal included.
//
// Facts before a parent's inherited cut are its ancestor's copies, which DSH
// never interprets: they are judged in the ancestor's log, not again here.

// catalogView is one parent's own catalog facts as the audit judges them.
type catalogView struct {
	parent session.Header
	facts  []judgedFact
	// first maps a child id to the index in facts of the first valid fact
	// naming it.
	first map[string]int
	// unreadable: an own fact is invalid or names a child twice, so DSH
	// 0.1.7+ cannot read the parent (nor list any of its children).
	unreadable bool
}

// judgedFact is one own catalog fact and what is wrong with it.
type judgedFact struct {
	event session.Event
	fact  catalog.Fact // valid when err is nil
	err   error
	// dupOf is the seq of an earlier valid fact naming the same child, or
	// -1.
	dupOf int64
}

// judgeCatalog judges the own catalog facts in events, the log of h as read
// with them (so that h's cut is the log's). Each fact is parsed as DSH's
// projection does (strictly: an extra key a V4 log's admission tolerates
// still makes the fold, and so the parent, fail).
func judgeCatalog(h session.Header, events []session.Event) *catalogView {
	v := &catalogView{parent: h}
	cut := h.InheritedCut()
	for _, e := range events {
		if e.Type != session.TypeCatalog || !catalog.Own(e, cut) {
			continue
		}
		j := judgedFact{event: e, dupOf: -1}
		j.fact, j.err = catalog.ParseFact(e.Data)
		if j.err != nil {
			v.unreadable = true
		} else if at, dup := v.first[j.fact.ChildID]; dup {
			j.dupOf = v.facts[at].event.Seq
			v.unreadable = true
		} else {
			if v.first == nil {
				v.first = map[string]int{}
			}
			v.first[j.fact.ChildID] = len(v.facts)
		}
		v.facts = append(v.facts, j)
	}
	return v
}

// applies reports whether the cross-check concerns this parent: it has own
// catalog facts or is in a format that carries them (V2+).
func (v *catalogView) applies() bool {
	return v != nil && (len(v.facts) > 0 || session.IsLaterFormat(v.parent.Version))
}

// backfilled reports whether DSH 0.1.7+ reads this parent through its
// V3->V4 migration, which back-fills the catalog in memory.
func (v *catalogView) backfilled() bool { return v.parent.Version < 4 }

// entry is the valid fact naming id, nil when none does.
func (v *catalogView) entry(id string) *judgedFact {
	if at, ok := v.first[id]; ok {
		return &v.facts[at]
	}
	return nil
}

// refusal says how DSH 0.1.7+ refuses the parent for a bad fact.
func (v *catalogView) refusal() string {
	if v.backfilled() {
		return fmt.Sprintf("DSH 0.1.7+ refuses the V%d->V4 migration of this session, so it cannot read it and lists none of its children", v.parent.Version)
	}
	return "DSH 0.1.7+ refuses this session's catalog, so it cannot read it and lists none of its children"
}

// checkCatalogFacts reports what is wrong with the own catalog facts of the
// session being audited.
func checkCatalogFacts(s *sessionAudit, v *catalogView) {
	for _, j := range v.facts {
		var bad *catalog.Error
		switch {
		case errors.As(j.err, &bad) && bad.Problem == catalog.ProblemUnsupportedVersion:
			s.add(CatalogFactUnsupportedVersion, seqOf(j.event.Seq), "catalog fact %s: %s", bad.Detail, v.refusal())
		case errors.As(j.err, &bad):
			s.add(CatalogFactMalformed, seqOf(j.event.Seq), "catalog fact is malformed (%s): %s", bad.Detail, v.refusal())
		case j.err != nil:
			s.add(CatalogFactMalformed, seqOf(j.event.Seq), "catalog fact is malformed (%v): %s", j.err, v.refusal())
		case j.dupOf >= 0:
			s.add(CatalogDuplicateChild, seqOf(j.event.Seq), "catalog fact names child %s again (first at seq %d): %s",
				strconv.Quote(j.fact.ChildID), j.dupOf, v.refusal())
		}
	}
}

// missingChildren are the reports of the children v names that have no
// session: DSH 0.1.7 lists each as unavailable.
func (a *auditor) missingChildren(ctx context.Context, v *catalogView) ([]Report, error) {
	if len(v.first) == 0 {
		return nil, nil
	}
	present := map[string]bool{}
	err := a.view.ChildrenOf(ctx, v.parent.ID, func(h session.Header) error {
		present[h.ID] = true
		return nil
	})
	if err != nil {
		return nil, err
	}
	var out []Report
	parent := v.parent.ID
	for _, j := range v.facts {
		// An external entry (DSH 0.2.x) is a leaf with no session of its
		// own: DSH never reads one.
		if j.err != nil || j.dupOf >= 0 || present[j.fact.ChildID] || j.fact.Mode == catalog.ModeExternal {
			continue
		}
		id := j.fact.ChildID
		if _, live := a.leases.live[id]; live {
			continue
		}
		// A session the catalog names may name another parent (or none).
		if _, err := a.view.Header(ctx, id); err == nil {
			continue
		} else if !errors.Is(err, backend.ErrNotFound) {
			return nil, err
		}
		s := &sessionAudit{header: session.Header{ID: id, CreatedAt: j.fact.ChildCreatedAt, ParentSession: &parent}}
		s.add(CatalogChildMissing, seqOf(j.event.Seq), "the catalog of %s names child %s (fact at seq %d) but no session has that id: DSH 0.1.7+ lists it as unavailable; dsh's seeds and 0.1.0-rc.8 rules do not list it",
			strconv.Quote(parent), strconv.Quote(id), j.event.Seq)
		r := Report{ID: id, ParentID: &parent, CreatedAt: j.fact.ChildCreatedAt, RowKind: RowNotListed, Findings: s.findings}
		if a.opts.Profile.CatalogAuthority() {
			// DSH 0.1.7 lists it (as unavailable) when it can read
			// the parent.
			res, err := a.catalogResolution(ctx, parent, id, corpus.ScopeChildren)
			if err != nil {
				return nil, err
			}
			if res != nil {
				r.Row, r.RowKind = res.Row, rowKind(res)
			}
		}
		out = append(out, r)
	}
	return out, nil
}

// reportParentFacts reports, for a parent the audit does not examine, what
// is wrong with its own catalog facts (malformed, of an unsupported
// version, naming a child twice): each makes DSH 0.1.7+ unable to read the
// parent and list any of its children. The report, like a missing child's,
// carries only those findings, and the row a listing of the parent's own
// parent shows for it; a parent with no such damage gets no report.
func (a *auditor) reportParentFacts(ctx context.Context, parent string) error {
	h, err := a.parentHeader(ctx, parent)
	if err != nil || h == nil {
		return err
	}
	header := *h
	v, err := a.parentCatalog(ctx, parent)
	if err != nil || v == nil {
		return err
	}
	s := &sessionAudit{header: header}
	checkCatalogFacts(s, v)
	if len(s.findings) == 0 {
		return nil
	}
	sortFindings(s.findings)
	r := Report{ID: header.ID, ParentID: header.ParentSession, CreatedAt: header.CreatedAt, RowKind: RowNotListed, Findings: s.findings}
	res, err := a.rowOf(ctx, header)
	if err != nil {
		return err
	}
	if res != nil {
		r.Row, r.RowKind = res.Row, rowKind(res)
	}
	return a.record(ctx, r)
}

// rowOf resolves the row `dsh list --parent <h's parent>` shows for h, nil
// when h is no listing candidate.
func (a *auditor) rowOf(ctx context.Context, h session.Header) (*subagent.Resolution, error) {
	p := h.ParentSession
	if p == nil {
		return nil, nil
	}
	if a.opts.Profile.CatalogAuthority() {
		return a.catalogResolution(ctx, *p, h.ID, corpus.ScopeChildren)
	}
	recs, err := a.corpus.Children(ctx, *p)
	if err != nil {
		return nil, err
	}
	for _, rec := range recs {
		if rec.Header.ID != h.ID {
			continue
		}
		resolved, err := a.lister.ResolveRecords(ctx, []corpus.Record{rec}, corpus.ScopeChildren)
		if err != nil || len(resolved) == 0 {
			return nil, err
		}
		return &resolved[0], nil
	}
	return nil, nil
}

// parentCatalog is the catalog of parent as the cross-check of its children
// needs it: nil when the check does not apply (no such session, a log that
// cannot be read, which its own audit reports, or a V0/V1 parent without
// facts). It is read once per parent, and held for the next chunks of the
// same parent's children.
func (a *auditor) parentCatalog(ctx context.Context, parent string) (*catalogView, error) {
	if v, ok := a.catalogs[parent]; ok {
		return v, nil
	}
	ins, err := a.view.InspectTypes(ctx, parent, session.TypeCatalog, session.TypeEndSeed)
	var v *catalogView
	switch {
	case err == nil:
		v = judgeCatalog(ins.Header, ins.Events)
	case unreadableLog(err):
	default:
		return nil, err
	}
	return a.rememberCatalog(parent, v), nil
}

// maxRememberedCatalogs bounds the catalogs an audit holds: enough for the
// parents audited before their children's groups (a store's top-level
// sessions come first), small enough not to hold a store.
const maxRememberedCatalogs = 4096

// rememberCatalog keeps the catalog of id (nil: its log cannot be read)
// for the cross-check of its children, and returns it; nil where the
// check does not apply.
func (a *auditor) rememberCatalog(id string, v *catalogView) *catalogView {
	if !v.applies() {
		v = nil
	}
	if len(a.catalogs) >= maxRememberedCatalogs {
		clear(a.catalogs)
	}
	a.catalogs[id] = v
	return v
}

// unreadableLog reports whether err is a log that cannot be read (as
// opposed to a store that cannot be): the log's own audit reports it.
func unreadableLog(err error) bool {
	var invalid *session.ValidationError
	return errors.Is(err, backend.ErrNotFound) || errors.Is(err, backend.ErrCorrupt) || errors.Is(err, backend.ErrLogUnreadable) ||
		errors.As(err, &invalid) || dsherr.CodeOf(err) == dsherr.UnsupportedFormat
}

// checkCatalogEntry compares a subagent child with its parent's catalog.
func checkCatalogEntry(s *sessionAudit, v *catalogView, log *backend.AuditRead) {
	h := s.header
	if !v.applies() || v.unreadable || !h.IsSubagent() || h.Parent() != v.parent.ID {
		return
	}
	ev := evidenceOf(h, log)
	j := v.entry(h.ID)
	if v.backfilled() {
		// DSH's back-fill judges each child's evidence against the fact
		// naming it (if any) alone: the parent's other facts, which the
		// duplicate check above has cleared, do not enter into it.
		var named []session.Event
		if j != nil {
			named = []session.Event{j.event}
		}
		added, err := catalog.Backfill(named, v.parent.InheritedCut(), v.parent.CreatedAt, []catalog.Evidence{ev})
		if err != nil {
			var at *int64
			if j != nil {
				at = seqOf(j.event.Seq)
			}
			s.add(CatalogBackfillRefused, at, "%s: DSH 0.1.7+ cannot read parent %s (format V%d) after its V3->V4 migration refuses, and lists none of its children",
				refusalDetail(err), strconv.Quote(v.parent.ID), v.parent.Version)
			return
		}
		if j == nil {
			if len(added) == 1 {
				if f, err := catalog.ParseFact(added[0].Data); err == nil && f.Mode == catalog.ModeUnknown {
					s.add(CatalogModeUnknown, nil, "parent %s (format V%d) has no catalog fact for this child, and DSH 0.1.7+'s V3->V4 back-fill makes its entry mode \"unknown\" (%s): DSH 0.1.7 lists the child as unsupported",
						strconv.Quote(v.parent.ID), v.parent.Version, unknownReason(ev))
				}
			}
			return
		}
	}
	if j == nil {
		s.add(CatalogChildUncataloged, nil, "parent %s's catalog does not name this child: DSH 0.1.7+ does not list it", strconv.Quote(v.parent.ID))
		return
	}
	f := j.fact
	if f.ChildCreatedAt != h.CreatedAt {
		s.add(CatalogMismatch, seqOf(j.event.Seq), "parent %s's catalog fact (seq %d) says childCreatedAt %d, the header says createdAt %d",
			strconv.Quote(v.parent.ID), j.event.Seq, f.ChildCreatedAt, h.CreatedAt)
	}
	if f.Mode == catalog.ModeExternal {
		// DSH 0.2.x lists an external entry as a leaf without reading
		// any session: there is nothing to compare.
		return
	}
	if f.Mode == catalog.ModeUnknown {
		s.add(CatalogModeUnknown, seqOf(j.event.Seq), "parent %s's catalog fact (seq %d) has mode \"unknown\": DSH 0.1.7 lists the child as unsupported",
			strconv.Quote(v.parent.ID), j.event.Seq)
		return
	}
	if d := firstOwnDescriptor(log); d != nil {
		if what := identityDisagreement(f, d); what != "" {
			s.add(CatalogMismatch, seqOf(j.event.Seq), "parent %s's catalog fact (seq %d) says %s, the child's first own descriptor %s: DSH 0.1.7+ shows the catalog's",
				strconv.Quote(v.parent.ID), j.event.Seq, describeFact(f), what)
		}
	}
}

// refusalDetail is a back-fill refusal's reason.
func refusalDetail(err error) string {
	var bad *catalog.Error
	if errors.As(err, &bad) {
		return bad.Detail
	}
	return err.Error()
}

// evidenceOf is what DSH's V3->V4 back-fill learns of a child: its id and
// createdAt, and its own descriptors (none when its log cannot be read:
// DSH then still supplies the child's identity).
func evidenceOf(h session.Header, log *backend.AuditRead) catalog.Evidence {
	ev := catalog.Evidence{ChildID: h.ID, ChildCreatedAt: h.CreatedAt}
	if log.ReadErr != nil {
		return ev
	}
	cut := log.Header.InheritedCut()
	for _, e := range log.Events {
		if e.Type == session.TypeDescriptor && e.Seq >= cut {
			if ev.DescriptorCount == 0 {
				ev.Descriptor = e.Data
			}
			ev.DescriptorCount++
		}
	}
	return ev
}

// unknownReason says why the back-fill gives a child an unknown entry.
func unknownReason(ev catalog.Evidence) string {
	switch ev.DescriptorCount {
	case 0:
		return "no own descriptor can be read"
	case 1:
		return "its descriptor's version is not 1, 2 or 3"
	}
	return fmt.Sprintf("%d own descriptors", ev.DescriptorCount)
}

// firstOwnDescriptor is the child's first own descriptor when it parses
// (the one its parent cataloged when it started the child), else nil.
func firstOwnDescriptor(log *backend.AuditRead) *subagent.Descriptor {
	cut := log.Header.InheritedCut()
	for _, e := range log.Events {
		if e.Type == session.TypeDescriptor && e.Seq >= cut {
			d, err := subagent.ParseDescriptor(e.Data)
			if err != nil {
				return nil
			}
			return d
		}
	}
	return nil
}

// identityDisagreement says how d differs from f's mode and label ("" when
// it does not).
func identityDisagreement(f catalog.Fact, d *subagent.Descriptor) string {
	if string(f.Mode) == string(d.Mode) && equalLabels(f.Label, d.Label) {
		return ""
	}
	return "says " + describeIdentity(string(d.Mode), d.Label)
}

func equalLabels(a, b *string) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

func describeFact(f catalog.Fact) string { return describeIdentity(string(f.Mode), f.Label) }

func describeIdentity(mode string, label *string) string {
	if label == nil {
		return mode + " without a label"
	}
	return mode + " " + strconv.Quote(*label)
}
