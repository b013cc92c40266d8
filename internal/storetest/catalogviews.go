package storetest

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/catalog"
	"github.com/dsh-project/dsh/internal/corpus"
	"github.com/dsh-project/dsh/internal/dshcompat"
	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/subagent"
)

// catalogFact is a subagent/catalog event at seq with the given payload.
func catalogFact(seq int64, payload string) session.Event {
	return session.Event{Type: session.TypeCatalog, Seq: seq, Time: 5 + seq, Data: json.RawMessage(payload)}
}

// addCatalogs adds to the forest the sessions a --dsh-compat 0.1.7 listing
// reads beyond the V0-V3 back-fills the forest already holds: a V4 parent q
// whose catalog names a child with a catalog of its own (qa), a V0 child
// (qb), a missing child (qm), an unknown-mode child whose own catalog names
// qb again (qu: a duplicate the walk skips), an external leaf (qe) and the
// forest's root p, whose back-filled catalog is walked below q.
func addCatalogs(t *testing.T, e *env) {
	t.Helper()
	imp := func(h session.Header, events []session.Event) {
		t.Helper()
		if _, err := e.b.ImportSession(e.ctx, h, events, nil); err != nil {
			t.Fatalf("import %s: %v", h.ID, err)
		}
	}
	v4 := func(h session.Header) session.Header {
		h.Version = catalog.NativeFormat
		return h
	}
	imp(v4(root("q", 80)), []session.Event{
		catalogFact(0, `{"version":0,"childId":"qa","childCreatedAt":81,"mode":"continuable","label":"qa-label"}`),
		catalogFact(1, `{"version":0,"childId":"qb","childCreatedAt":82,"mode":"one-shot"}`),
		catalogFact(2, `{"version":0,"childId":"qm","childCreatedAt":83,"mode":"continuable","label":"missing"}`),
		catalogFact(3, `{"version":1,"childId":"qu","childCreatedAt":84,"mode":"unknown"}`),
		catalogFact(4, `{"version":2,"childId":"qe","childCreatedAt":85,"mode":"external","label":"ext"}`),
		catalogFact(5, `{"version":0,"childId":"p","childCreatedAt":1,"mode":"one-shot"}`),
	})
	imp(v4(child("qa", "q", 81)), []session.Event{
		catalogFact(0, `{"version":0,"childId":"qaa","childCreatedAt":86,"mode":"one-shot","label":"leaf"}`),
	})
	imp(v4(child("qaa", "qa", 86)), nil)
	imp(child("qb", "q", 82), []session.Event{descriptor(0, 2)})
	imp(v4(child("qu", "q", 84)), []session.Event{
		catalogFact(0, `{"version":0,"childId":"qb","childCreatedAt":82,"mode":"one-shot"}`),
	})
}

// checkCatalogViews: every catalog view the store gives as current equals
// the catalog computed from the logs (the 0.1.7 listing of a lister that
// reads no view: its root entries, or its refusal), after refresh every
// view is current, and the 0.1.7 listing of every session in both scopes,
// served from whatever views are current and the logs of the others,
// equals the listing computed from the logs alone: rows, entries and
// error.
func checkCatalogViews(t *testing.T, e *env, step string, refresh bool, ids []string) {
	t.Helper()
	src, ok := e.b.(backend.CatalogViewReader)
	if !ok {
		return
	}
	stamp := subagent.CatalogViewsStamp()
	fast := subagent.NewStoreLister(e.b, e.b, 0)
	fast.Profile = dshcompat.V017
	slow := subagent.NewLister(e.b, e.b, nil, 0)
	slow.Profile = dshcompat.V017
	for _, id := range ids {
		want, werr := slow.ListCatalog(e.ctx, id, corpus.ScopeChildren)
		var view *backend.CatalogView
		err := src.CatalogViews(e.ctx, []string{id}, stamp, func(v backend.CatalogView) error {
			view = &v
			return nil
		})
		if err != nil {
			t.Fatalf("%s: CatalogViews(%s): %v", step, id, err)
		}
		switch {
		case view == nil && refresh && id != "nobody":
			t.Errorf("%s: the catalog view of %s is still stale", step, id)
		case view == nil:
		case view.Reason != "":
			if dsherr.CodeOf(werr) != dsherr.InvalidLog || view.Reason != string(subagent.ReasonCorrupt) {
				t.Errorf("%s: the view of %s says %s; computed from the logs: %v", step, id, view.Reason, werr)
			}
		default:
			got, gerr := completeView(t, e, step, *view)
			switch {
			case gerr != nil && dsherr.CodeOf(werr) != dsherr.InvalidLog:
				t.Errorf("%s: the view of %s completes to %v; computed from the logs: %v", step, id, gerr, werr)
			case gerr == nil && werr != nil:
				t.Errorf("%s: the view of %s completes to %d entries; computed from the logs: %v", step, id, len(got), werr)
			case gerr == nil && viewString(got) != entriesString(want.Entries):
				t.Errorf("%s: the view of %s completes to %s; computed from the logs: %s", step, id, viewString(got), entriesString(want.Entries))
			}
		}
		for _, scope := range []corpus.Scope{corpus.ScopeChildren, corpus.ScopeDescendants} {
			want, werr := slow.ListCatalog(e.ctx, id, scope)
			got, gerr := fast.ListCatalog(e.ctx, id, scope)
			if fmt.Sprint(gerr) != fmt.Sprint(werr) || dsherr.CodeOf(gerr) != dsherr.CodeOf(werr) {
				t.Errorf("%s: 0.1.7 %s of %s fails with %v; computed from the logs: %v", step, scope, id, gerr, werr)
				continue
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s: 0.1.7 %s of %s = %v / %v\ncomputed from the logs: %v / %v", step, scope, id,
					rowStrings(got.Rows), rowStrings(got.Entries), rowStrings(want.Rows), rowStrings(want.Entries))
			}
		}
	}
}

// completeView is the catalog a view gives: its own entries, completed
// for a back-fill view with its children's evidence read from their logs;
// every current child's stored evidence must be that evidence, and the
// view is a back-fill exactly when its session is V0-V3.
func completeView(t *testing.T, e *env, step string, v backend.CatalogView) ([]backend.CatalogEntry, error) {
	t.Helper()
	h, err := e.b.Header(e.ctx, v.ID)
	if err != nil {
		t.Fatal(err)
	}
	if v.Backfill != (h.Version < catalog.NativeFormat) {
		t.Errorf("%s: the view of %s (version %d) says backfill=%v", step, v.ID, h.Version, v.Backfill)
	}
	if !v.Backfill {
		return v.Entries, nil
	}
	own := make([]catalog.Entry, len(v.Entries))
	for i, x := range v.Entries {
		own[i] = catalog.Entry{ID: x.ID, CreatedAt: x.CreatedAt, Mode: catalog.Mode(x.Mode), Label: x.Label}
	}
	evidence := make([]catalog.Evidence, len(v.Children))
	for i, k := range v.Children {
		ev := logEvidence(e, k.ID, k.CreatedAt)
		if k.Current && (k.EvidenceCount != ev.DescriptorCount || string(k.EvidenceDescriptor) != string(ev.Descriptor)) {
			t.Errorf("%s: the view of %s holds evidence %d %s; its log gives %d %s", step, k.ID,
				k.EvidenceCount, k.EvidenceDescriptor, ev.DescriptorCount, ev.Descriptor)
		}
		evidence[i] = ev
	}
	all, err := catalog.Complete(own, evidence)
	out := make([]backend.CatalogEntry, len(all))
	for i, x := range all {
		out[i] = backend.CatalogEntry{ID: x.ID, CreatedAt: x.CreatedAt, Mode: string(x.Mode), Label: x.Label}
	}
	return out, err
}

// logEvidence is a child's evidence for its parent's back-fill read from
// its whole log: its own descriptors' count and first payload, none when
// the log cannot be read or that payload is not a descriptor.
func logEvidence(e *env, id string, createdAt int64) catalog.Evidence {
	ev := catalog.Evidence{ChildID: id, ChildCreatedAt: createdAt}
	in, err := e.b.Inspect(e.ctx, id)
	if err != nil {
		return ev
	}
	for _, x := range in.Events {
		if x.Type != session.TypeDescriptor || x.Seq < in.Header.InheritedCut() {
			continue
		}
		if ev.DescriptorCount == 0 {
			ev.Descriptor = x.Data
		}
		ev.DescriptorCount++
	}
	if ev.Descriptor != nil {
		if _, err := subagent.ParseDescriptor(ev.Descriptor); err != nil {
			ev.Descriptor, ev.DescriptorCount = nil, 0
		}
	}
	return ev
}

func viewString(entries []backend.CatalogEntry) string {
	parts := make([]string, len(entries))
	for i, e := range entries {
		parts[i] = identityString(e.ID, e.Mode, e.Label)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func entriesString(rows []subagent.Row) string {
	parts := make([]string, len(rows))
	for i, r := range rows {
		parts[i] = identityString(r.ID, string(r.Mode), r.Label)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// identityString is an entry's or a row's id, mode and label as the
// failures print them, an absent label told from an empty one.
func identityString(id, mode string, label *string) string {
	l := "<absent>"
	if label != nil {
		l = fmt.Sprintf("%q", *label)
	}
	return fmt.Sprintf("%s:%s:%s", id, mode, l)
}
