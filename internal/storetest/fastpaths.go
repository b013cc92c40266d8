package storetest

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/session"
)

// testCapabilities: the backend has every required capability of
// backend.Capabilities, and none a foreign corpus alone may have (a store
// offering Unoffered would have diagnose skip the refusals it records);
// the optional ones it lacks are logged, each a slow path its consumers
// take instead.
func testCapabilities(t *testing.T, e *env) {
	typ := reflect.TypeOf(e.b)
	for _, c := range backend.Capabilities {
		has := typ.Implements(c.Type)
		switch {
		case c.Required && !has:
			t.Errorf("%v lacks the required capability %s", typ, c.Type.Name())
		case c.ForeignOnly && has:
			t.Errorf("%v has %s, which only a foreign corpus may have", typ, c.Type.Name())
		case !c.Required && !c.ForeignOnly && !has:
			t.Logf("%v lacks the optional capability %s: its consumers take the slow path", typ, c.Type.Name())
		}
	}
}

// forest is the corpus the fast-path cases read: subagent children with
// equal createdAt, forks and ordinary children beside them, nested
// children three deep, a seeded child, logs damaged, torn, gapped,
// invalid and unverified, a recorded registry fold, catalog events own and inherited,
// checkpoint records matching their header, stale and absent, and a
// parent-link cycle.
type forest struct {
	ids    []string                   // every session, in creation order
	events map[string][]session.Event // the events each was stored with
	types  []string                   // the event types the cold reads ask for
}

// descriptor is a subagent/descriptor of the given version at seq.
func descriptor(seq int64, version int) session.Event {
	return session.Event{Type: session.TypeDescriptor, Seq: seq, Time: 3 + seq,
		Data: json.RawMessage(fmt.Sprintf(`{"version":%d,"mode":"continuable","provider":"spawn","label":"w%d"}`, version, seq))}
}

func newForest(t *testing.T, e *env) forest {
	t.Helper()
	f := forest{types: []string{session.TypeDescriptor, session.TypeCatalog}, events: map[string][]session.Event{}}
	add := func(h session.Header, events []session.Event) {
		t.Helper()
		e.create(h, events)
		f.ids = append(f.ids, h.ID)
		f.events[h.ID] = events
	}
	imp := func(h session.Header, events []session.Event, tail *backend.TornTail) {
		t.Helper()
		if _, err := e.b.ImportSession(e.ctx, h, events, tail); err != nil {
			t.Fatalf("import %s: %v", h.ID, err)
		}
		f.ids = append(f.ids, h.ID)
		f.events[h.ID] = events
	}
	withDesc := func(version int, more ...session.Event) []session.Event {
		return append([]session.Event{descriptor(0, version)}, more...)
	}
	add(root("p", 1), turn(0, 1))
	// Ties in createdAt, created out of id order.
	add(child("c2", "p", 10), withDesc(3))
	add(child("c1", "p", 10), withDesc(2))
	add(child("c0", "p", 10), withDesc(2, turn(1, 1)...))
	add(child("c3", "p", 20), append(withDesc(2, turn(1, 1)...), descriptor(7, 3)))
	add(child("g1", "c3", 21), withDesc(2))
	add(child("gg1", "g1", 22), withDesc(2))
	add(child("gg2", "g1", 22), nil)
	ordinary := root("o1", 15)
	ordinary.ParentSession = ptr("p")
	add(ordinary, turn(0, 1))
	fork := root("f1", 23)
	fork.ParentSession, fork.SeedLength = ptr("c1"), ptr(int64(1))
	add(fork, withDesc(2))
	seeded := child("s1", "p", 30)
	seeded.SeedLength = ptr(int64(1))
	add(seeded, withDesc(2))
	damage := backend.DamagedLog{FromSeq: 2, Reason: "unparsable committed event at line 3", Encoding: "jsonl-text", Raw: []byte("{not json}\n")}
	prefix := withDesc(2, turn(1, 1)[:1]...)
	if _, err := e.b.ImportDamagedSession(e.ctx, child("d1", "p", 40), prefix, damage); err != nil {
		t.Fatalf("import d1: %v", err)
	}
	f.ids = append(f.ids, "d1")
	f.events["d1"] = prefix
	imp(child("t1", "p", 41), withDesc(2, turn(1, 1)...), &backend.TornTail{FromSeq: 7, Reason: "unterminated line", Raw: []byte(`{"type":"step/st`)})
	invalid := withDesc(2, turn(1, 1)...)
	invalid[2].SurfaceOp = nil
	imp(child("i1", "p", 42), invalid, nil)
	imp(child("m1", "p", 43), withDesc(2), nil)
	// A hole in the stored seqs, which a store reads as a torn tail at the
	// first row past it.
	gapped := withDesc(2, turn(1, 1)...)
	for i := 4; i < len(gapped); i++ {
		gapped[i].Seq++
	}
	imp(child("gap", "p", 44), gapped, nil)
	// A parent with a catalog fact of its own, and a fork that inherits it
	// below its cut (the fork's stored log holds the inherited prefix).
	cat := []session.Event{{Type: session.TypeCatalog, Seq: 0, Time: 5, Data: json.RawMessage(`{"child":"k1","status":"started"}`)}}
	catParent := root("k", 50)
	catParent.Version = 3
	imp(catParent, cat, nil)
	catFork := root("kf", 51)
	catFork.Version, catFork.ParentSession, catFork.SeedLength = 3, ptr("k"), ptr(int64(1))
	imp(catFork, cat, nil)
	// A cycle of parent links, which no walk may loop on.
	cycA, cycB := child("cyc-a", "cyc-b", 60), child("cyc-b", "cyc-a", 61)
	add(cycA, nil)
	add(cycB, nil)

	put := func(id string, witness session.Header, rows string) {
		t.Helper()
		if err := e.b.PutCheckpoint(e.ctx, backend.CheckpointRecord{Witness: witness, AsOfSeq: 0, Rows: []byte(rows)}); err != nil {
			t.Fatalf("checkpoint %s: %v", id, err)
		}
	}
	headers := map[string]session.Header{}
	for _, id := range f.ids {
		h, err := e.b.Header(e.ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		headers[id] = h
	}
	// c1 and g1: records matching their headers, one holding the mark the
	// cold listing is given, one not; c0: a record of another lifecycle;
	// s1: a matching record of a seeded child; the rest none.
	put("c1", headers["c1"], `{"identity":{"label":"c1"}}`)
	put("g1", headers["g1"], `{"other":1}`)
	stale := headers["c0"]
	stale.AgentPreset = ptr("another")
	put("c0", stale, `{"identity":{"label":"c0"}}`)
	put("s1", headers["s1"], `{"identity":{"label":"s1"}}`)
	if rf, ok := e.b.(backend.RegistryFoldRecorder); ok {
		if err := rf.RecordRegistryFold(e.ctx, "c2", []byte("unit@1\n{\"seq\":0}")); err != nil {
			t.Fatalf("RecordRegistryFold: %v", err)
		}
	}
	if u, ok := e.b.(backend.Unverifier); ok {
		if err := u.UnverifyChildren(e.ctx, "g1"); err != nil {
			t.Fatalf("UnverifyChildren: %v", err)
		}
	}
	return f
}

// parents is every id of the forest, one unknown id, and a parent only
// forks and ordinary sessions name.
func (f forest) parents() []string { return append(slices.Clone(f.ids), "nobody") }

// walk is SubtreeOf's slow path: ChildrenOf walked from root, each session
// once, root only when a cycle leads back to it.
func walk(t *testing.T, e *env, root string) map[string]session.Header {
	t.Helper()
	out := map[string]session.Header{}
	stack := []string{root}
	for len(stack) > 0 {
		id := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		err := e.b.ChildrenOf(e.ctx, id, func(h session.Header) error {
			if _, seen := out[h.ID]; !seen {
				out[h.ID] = h
				stack = append(stack, h.ID)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// slowListed is what a one-query listing must give for h: its
// hasChildren from SubagentParents and its checkpoint text when the
// record's witness is h.
func slowListed(t *testing.T, e *env, headers []session.Header) []backend.ListedChild {
	t.Helper()
	ids := make([]string, len(headers))
	for i, h := range headers {
		ids[i] = h.ID
	}
	parents, err := e.b.SubagentParents(e.ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		has, err := e.b.HasSubagentChild(e.ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if has != parents[id] {
			t.Errorf("%s: SubagentParents %v, HasSubagentChild %v", id, parents[id], has)
		}
	}
	records := map[string]backend.CheckpointRecord{}
	err = e.b.CheckpointsOf(e.ctx, ids, func(r backend.CheckpointRecord) error {
		records[r.Witness.ID] = r
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]backend.ListedChild, len(headers))
	for i, h := range headers {
		out[i] = backend.ListedChild{Header: h, HasChildren: parents[h.ID]}
		if r, ok := records[h.ID]; ok && reflect.DeepEqual(r.Witness, h) {
			out[i].Checkpoint = r.Rows
		}
	}
	return out
}

func listedString(c backend.ListedChild) string {
	s := fmt.Sprintf("%s has=%v cp=%q", headerString(c.Header), c.HasChildren, c.Checkpoint)
	if c.Cold != nil {
		s += " cold=" + coldString(c.Cold.Verdict, c.Cold.Log)
	}
	return s
}

func coldString(v *backend.ColdVerdict, in *backend.Inspection) string {
	switch {
	case v != nil:
		return fmt.Sprintf("verdict(err=%v fold=%q)", v.ReadErr, v.RegistryFold)
	case in != nil:
		return "log(" + inspectionString(in) + ")"
	}
	return "none"
}

// inspectionString is what a batch read and InspectTypes must agree on:
// the header and the events, in order.
func inspectionString(in *backend.Inspection) string {
	var sb strings.Builder
	sb.WriteString(headerString(in.Header))
	for _, ev := range in.Events {
		fmt.Fprintf(&sb, " %d:%s:%s", ev.Seq, ev.Type, ev.Data)
	}
	return sb.String()
}

func listedStrings(cs []backend.ListedChild) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = listedString(c)
	}
	return out
}

// testSubtreeOfEqualsWalk: SubtreeOf gives what ChildrenOf walked from the
// root gives, each session once.
func testSubtreeOfEqualsWalk(t *testing.T, e *env) {
	src, ok := e.b.(backend.SubtreeReader)
	if !ok {
		t.Skipf("%T has no SubtreeOf", e.b)
	}
	f := newForest(t, e)
	for _, root := range f.parents() {
		got := map[string]session.Header{}
		err := src.SubtreeOf(e.ctx, root, func(h session.Header) error {
			if _, dup := got[h.ID]; dup {
				t.Errorf("SubtreeOf(%s) gives %s twice", root, h.ID)
			}
			got[h.ID] = h
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if want := walk(t, e, root); !reflect.DeepEqual(got, want) {
			t.Errorf("SubtreeOf(%s) = %v\nthe ChildrenOf walk gives %v", root, slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
		}
	}
}

// testChildListingEqualsSlowPath: ChildListing gives, in order, the
// subagent-origin children ChildrenOf gives, each with SubagentParents'
// hasChildren and its witness-matched record's text.
func testChildListingEqualsSlowPath(t *testing.T, e *env) {
	src, ok := e.b.(backend.ChildListingReader)
	if !ok {
		t.Skipf("%T has no ChildListing", e.b)
	}
	f := newForest(t, e)
	for _, parent := range f.parents() {
		var got []backend.ListedChild
		if err := src.ChildListing(e.ctx, parent, func(c backend.ListedChild) error { got = append(got, c); return nil }); err != nil {
			t.Fatal(err)
		}
		var kids []session.Header
		err := e.b.ChildrenOf(e.ctx, parent, func(h session.Header) error {
			if h.Origin != nil && *h.Origin == session.OriginSubagent {
				kids = append(kids, h)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if g, w := listedStrings(got), listedStrings(slowListed(t, e, kids)); !slices.Equal(g, w) {
			t.Errorf("ChildListing(%s) =\n  %s\nthe slow path gives\n  %s", parent, strings.Join(g, "\n  "), strings.Join(w, "\n  "))
		}
	}
}

// testSubtreeListingEqualsSlowPath: SubtreeListing gives the sessions
// SubtreeOf (or the ChildrenOf walk) gives, each once, with hasChildren
// and record text as the slow path reads them.
func testSubtreeListingEqualsSlowPath(t *testing.T, e *env) {
	src, ok := e.b.(backend.SubtreeListingReader)
	if !ok {
		t.Skipf("%T has no SubtreeListing", e.b)
	}
	f := newForest(t, e)
	for _, root := range f.parents() {
		var got []backend.ListedChild
		if err := src.SubtreeListing(e.ctx, root, func(c backend.ListedChild) error { got = append(got, c); return nil }); err != nil {
			t.Fatal(err)
		}
		tree := walk(t, e, root)
		headers := make([]session.Header, 0, len(tree))
		for _, h := range tree {
			headers = append(headers, h)
		}
		g, w := listedStrings(got), listedStrings(slowListed(t, e, headers))
		sort.Strings(g)
		sort.Strings(w)
		if !slices.Equal(g, w) {
			t.Errorf("SubtreeListing(%s) =\n  %s\nthe slow path gives\n  %s", root, strings.Join(g, "\n  "), strings.Join(w, "\n  "))
		}
	}
}

// testVerifiedBatchEqualsInspectTypes: InspectVerifiedTypes returns exactly
// the logs Inspect finds verified and untorn, each as InspectTypes reads it.
func testVerifiedBatchEqualsInspectTypes(t *testing.T, e *env) {
	src, ok := e.b.(backend.VerifiedBatchReader)
	if !ok {
		t.Skipf("%T has no InspectVerifiedTypes", e.b)
	}
	f := newForest(t, e)
	ids := f.parents()
	got, err := src.InspectVerifiedTypes(e.ctx, ids, f.types)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 || len(got) == len(ids) {
		t.Fatalf("InspectVerifiedTypes gives %d of %d logs; the forest has verified logs and others", len(got), len(ids))
	}
	for _, id := range ids {
		full, ferr := e.b.Inspect(e.ctx, id)
		want := ferr == nil && full.Verified && full.Torn == nil
		in, has := got[id]
		if has != want {
			t.Errorf("InspectVerifiedTypes gives %s: %v; Inspect: err %v, verified and untorn %v", id, has, ferr, want)
			continue
		}
		if !has {
			continue
		}
		typed, err := e.b.InspectTypes(e.ctx, id, f.types...)
		if err != nil {
			t.Fatalf("InspectTypes(%s): %v", id, err)
		}
		if g, w := inspectionString(in), inspectionString(typed); g != w {
			t.Errorf("InspectVerifiedTypes(%s) = %s\nInspectTypes gives %s", id, g, w)
		}
	}
}

// coldSlow is what InspectColdBatch must give: ColdVerdicts, then
// InspectVerifiedTypes of the ids without a verdict.
func coldSlow(t *testing.T, e *env, ids, types []string) (map[string]backend.ColdVerdict, map[string]*backend.Inspection) {
	t.Helper()
	verdicts := map[string]backend.ColdVerdict{}
	if cv, ok := e.b.(backend.ColdVerdictReader); ok {
		var err error
		if verdicts, err = cv.ColdVerdicts(e.ctx, ids); err != nil {
			t.Fatal(err)
		}
	}
	var rest []string
	for _, id := range ids {
		if _, ok := verdicts[id]; !ok {
			rest = append(rest, id)
		}
	}
	logs := map[string]*backend.Inspection{}
	if vb, ok := e.b.(backend.VerifiedBatchReader); ok {
		var err error
		if logs, err = vb.InspectVerifiedTypes(e.ctx, rest, types); err != nil {
			t.Fatal(err)
		}
	}
	return verdicts, logs
}

// testColdBatchEqualsSlowPath: InspectColdBatch is ColdVerdicts followed by
// InspectVerifiedTypes of the rest.
func testColdBatchEqualsSlowPath(t *testing.T, e *env) {
	src, ok := e.b.(backend.ColdBatchReader)
	if !ok {
		t.Skipf("%T has no InspectColdBatch (optional)", e.b)
	}
	f := newForest(t, e)
	ids := f.parents()
	gotV, gotL, err := src.InspectColdBatch(e.ctx, ids, f.types)
	if err != nil {
		t.Fatal(err)
	}
	wantV, wantL := coldSlow(t, e, ids, f.types)
	for _, id := range ids {
		var gv, wv *backend.ColdVerdict
		if v, ok := gotV[id]; ok {
			gv = &v
		}
		if v, ok := wantV[id]; ok {
			wv = &v
		}
		if g, w := coldString(gv, nil)+" "+coldString(nil, gotL[id]), coldString(wv, nil)+" "+coldString(nil, wantL[id]); g != w {
			t.Errorf("InspectColdBatch(%s) = %s\nColdVerdicts and InspectVerifiedTypes give %s", id, g, w)
		}
	}
}

// testColdChildListingEqualsSlowPath: ChildListingCold is ChildListing with
// Cold set, for every child without a record, every seeded child and every
// child whose record lacks the mark, to what the batch cold read gives.
func testColdChildListingEqualsSlowPath(t *testing.T, e *env) {
	src, ok := e.b.(backend.ColdChildListingReader)
	if !ok {
		t.Skipf("%T has no ChildListingCold (optional)", e.b)
	}
	f := newForest(t, e)
	listing := e.b.(backend.ChildListingReader)
	kinds := map[string]bool{}
	for _, mark := range []string{"", `{"identity":{`, "in no record"} {
		for _, parent := range f.parents() {
			var got, want []backend.ListedChild
			if err := src.ChildListingCold(e.ctx, parent, f.types, mark, func(c backend.ListedChild) error { got = append(got, c); return nil }); err != nil {
				t.Fatal(err)
			}
			if err := listing.ChildListing(e.ctx, parent, func(c backend.ListedChild) error { want = append(want, c); return nil }); err != nil {
				t.Fatal(err)
			}
			var cold []string
			for _, c := range want {
				if c.Checkpoint == nil || c.Header.IsSeeded() || (mark != "" && !strings.Contains(string(c.Checkpoint), mark)) {
					cold = append(cold, c.Header.ID)
				}
			}
			verdicts, logs := coldSlow(t, e, cold, f.types)
			for i, c := range want {
				if v, ok := verdicts[c.Header.ID]; ok {
					want[i].Cold = &backend.ListedColdRead{Verdict: &v}
				} else if in, ok := logs[c.Header.ID]; ok {
					want[i].Cold = &backend.ListedColdRead{Log: in}
				}
			}
			for _, c := range want {
				if c.Cold != nil {
					kinds[strings.SplitN(coldString(c.Cold.Verdict, c.Cold.Log), "(", 2)[0]] = true
				}
			}
			if g, w := listedStrings(got), listedStrings(want); !slices.Equal(g, w) {
				t.Errorf("ChildListingCold(%s, mark %q) =\n  %s\nChildListing and the batch cold read give\n  %s", parent, mark, strings.Join(g, "\n  "), strings.Join(w, "\n  "))
			}
		}
	}
	if !kinds["verdict"] || !kinds["log"] {
		t.Fatalf("the cold listings read %v; the forest has recorded verdicts and verified logs", kinds)
	}
}

// testAuditEachEqualsAudit: AuditEach audits every log of the forest as
// Audit does, one by one.
func testAuditEachEqualsAudit(t *testing.T, e *env) {
	if _, ok := e.b.(backend.BatchAuditor); !ok {
		t.Skipf("%T has no AuditEach", e.b)
	}
	f := newForest(t, e)
	want := map[string]*backend.AuditRead{}
	for _, id := range f.ids {
		a, err := e.b.Audit(e.ctx, id)
		if err != nil {
			t.Fatalf("Audit(%s): %v", id, err)
		}
		want[id] = a
	}
	e.sameBatchAudits(e.b, want)
}

// testDescriptorsAtEqualsLog: DescriptorsAt, asked for every seq of every
// log and past its end, gives exactly the version-3 descriptors the logs
// hold, bytes as stored (a damaged log's valid prefix included); one of
// another version only as stored.
func testDescriptorsAtEqualsLog(t *testing.T, e *env) {
	f := newForest(t, e)
	stored := f.events
	served := 0
	for seq := int64(0); seq < 9; seq++ {
		at := map[string]int64{"nobody": seq}
		for _, id := range f.ids {
			at[id] = seq
		}
		got, err := e.b.DescriptorsAt(e.ctx, at)
		if err != nil {
			t.Fatal(err)
		}
		for id := range at {
			var ev *session.Event
			for i := range stored[id] {
				if stored[id][i].Seq == seq {
					ev = &stored[id][i]
				}
			}
			data, given := got[id]
			isDesc := ev != nil && ev.Type == session.TypeDescriptor
			var v struct{ Version json.Number }
			v3 := isDesc && json.Unmarshal(ev.Data, &v) == nil && v.Version == "3"
			switch {
			case v3:
				served++
				if !given || string(data) != string(ev.Data) {
					t.Errorf("DescriptorsAt(%s@%d) = %q, %v; the log holds the version-3 descriptor %s", id, seq, data, given, ev.Data)
				}
			case !isDesc && given:
				t.Errorf("DescriptorsAt(%s@%d) = %q; the log holds no descriptor there", id, seq, data)
			case isDesc && !v3 && given && string(data) != string(ev.Data):
				t.Errorf("DescriptorsAt(%s@%d) = %q; stored %s", id, seq, data, ev.Data)
			}
		}
	}
	if served == 0 {
		t.Fatal("the forest holds no version-3 descriptor")
	}
}

// testCatalogSessionsCoverLogs: CatalogSessions gives, in id order and
// each once, every session whose stored log holds a subagent/catalog
// event, own or inherited below a fork's cut.
func testCatalogSessionsCoverLogs(t *testing.T, e *env) {
	f := newForest(t, e)
	var got []string
	if err := e.b.CatalogSessions(e.ctx, func(id string) error { got = append(got, id); return nil }); err != nil {
		t.Fatal(err)
	}
	if !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != len(got) {
		t.Errorf("CatalogSessions = %q, want each once in id order", got)
	}
	for _, id := range f.ids {
		holds := slices.ContainsFunc(f.events[id], func(ev session.Event) bool { return ev.Type == session.TypeCatalog })
		if holds && !slices.Contains(got, id) {
			t.Errorf("CatalogSessions = %q leaves out %s, whose log holds a catalog event", got, id)
		}
	}
	for _, id := range []string{"k", "kf"} {
		if !slices.Contains(got, id) {
			t.Errorf("CatalogSessions = %q leaves out %s", got, id)
		}
	}
}
