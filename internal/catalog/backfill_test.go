package catalog

import (
	"encoding/json"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/dsh-project/dsh/internal/session"
)

func desc(data string) Evidence {
	return Evidence{DescriptorCount: 1, Descriptor: json.RawMessage(data)}
}

func evidence(id string, ca int64, e Evidence) Evidence {
	e.ChildID, e.ChildCreatedAt = id, ca
	return e
}

const (
	v3Continuable = `{"version":3,"mode":"continuable","provider":"spawn","label":"lower","agentProvider":"p","agentModel":"m"}`
	v3OneShot     = `{"version":3,"mode":"one-shot","provider":"fork"}`
)

func backfilledView(t *testing.T, version int64, events []session.Event, cut int64, ev []Evidence) string {
	t.Helper()
	view, err := View(version, events, cut, 50, ev)
	if err != nil {
		t.Fatalf("View: %v", err)
	}
	return viewJSON(t, view)
}

// §8 case 15: evidence by childCreatedAt, then childId by code unit ("B" < "a").
func TestBackfillOrdersByCreatedAtThenCodeUnits(t *testing.T) {
	ev := []Evidence{
		evidence("a", 5, desc(v3Continuable)),
		evidence("B", 5, desc(v3OneShot)),
		evidence("z", 1, Evidence{}),
	}
	got := backfilledView(t, 3, log("session/start", `{}`), 0, ev)
	want := `[{"id":"z","createdAt":1,"mode":"unknown"},{"id":"B","createdAt":5,"mode":"one-shot"},{"id":"a","createdAt":5,"mode":"continuable","label":"lower"}]`
	if got != want {
		t.Errorf("view = %s\nwant   %s", got, want)
	}
	if ev[0].ChildID != "a" {
		t.Error("Backfill reordered the caller's evidence")
	}
}

// §6 rule 5: new facts after every source event, dense seqs, at the last
// event's time; the header's createdAt for an empty log. The payloads are
// v0 from a descriptor, v1 unknown without label.
func TestBackfillAppendsAfterTheLog(t *testing.T) {
	events := log("session/start", `{}`, "user/message", `{}`, "turn/end", `{}`)
	events[2].Time = 7 // times may go backwards; the last event's is used
	added, err := Backfill(events, 0, 50, []Evidence{evidence("c", 2, desc(v3OneShot)), evidence("d", 3, Evidence{})})
	if err != nil {
		t.Fatal(err)
	}
	if len(added) != 2 {
		t.Fatalf("added %d facts", len(added))
	}
	for i, want := range []string{
		`{"version":0,"childId":"c","childCreatedAt":2,"mode":"one-shot"}`,
		`{"version":1,"childId":"d","childCreatedAt":3,"mode":"unknown"}`,
	} {
		e := added[i]
		if e.Type != session.TypeCatalog || e.Seq != int64(3+i) || e.Time != 7 || string(e.Data) != want {
			t.Errorf("fact %d = %s seq %d time %d %s", i, e.Type, e.Seq, e.Time, e.Data)
		}
	}
	added, err = Backfill(nil, 0, 50, []Evidence{evidence("c", 2, Evidence{})})
	if err != nil || len(added) != 1 || added[0].Seq != 0 || added[0].Time != 50 {
		t.Errorf("empty log: %+v, %v", added, err)
	}
	if added, err := Backfill(events, 0, 50, nil); err != nil || added != nil {
		t.Errorf("no evidence: %v, %v", added, err)
	}
}

// §6 rule 4: which evidence gives which fact.
func TestBackfillFactFromEvidence(t *testing.T) {
	for _, tt := range []struct {
		name string
		ev   Evidence
		want string
	}{
		{"v1 descriptor is continuable", desc(`{"version":1,"provider":"spawn","label":"old"}`), `{"id":"c","createdAt":4,"mode":"continuable","label":"old"}`},
		{"v2 descriptor", desc(`{"version":2,"mode":"continuable","provider":"fork","label":"l2"}`), `{"id":"c","createdAt":4,"mode":"continuable","label":"l2"}`},
		{"v3 one-shot with label", desc(`{"version":3,"mode":"one-shot","provider":"fork","label":"o"}`), `{"id":"c","createdAt":4,"mode":"one-shot","label":"o"}`},
		{"no descriptor", Evidence{}, `{"id":"c","createdAt":4,"mode":"unknown"}`},
		{"two descriptors (§8 case 18)", Evidence{DescriptorCount: 2, Descriptor: json.RawMessage(v3OneShot)}, `{"id":"c","createdAt":4,"mode":"unknown"}`},
		{"unsupported version", desc(`{"version":4,"mode":"one-shot","provider":"fork"}`), `{"id":"c","createdAt":4,"mode":"unknown"}`},
		{"no version", desc(`{"mode":"one-shot","provider":"fork"}`), `{"id":"c","createdAt":4,"mode":"unknown"}`},
		{"not an object", desc(`[1]`), `{"id":"c","createdAt":4,"mode":"unknown"}`},
		{"undecodable child (count 0)", Evidence{DescriptorCount: 0, Descriptor: json.RawMessage(v3OneShot)}, `{"id":"c","createdAt":4,"mode":"unknown"}`},
	} {
		got := backfilledView(t, 0, nil, 0, []Evidence{evidence("c", 4, tt.ev)})
		if got != "["+tt.want+"]" {
			t.Errorf("%s: view = %s, want [%s]", tt.name, got, tt.want)
		}
	}
}

// §6 rule 4: the converter refuses a descriptor it cannot convert, and the
// whole parent with it.
func TestBackfillConverterRefusals(t *testing.T) {
	for name, d := range map[string]string{
		"provider missing":    `{"version":3,"mode":"one-shot"}`,
		"provider not string": `{"version":2,"mode":"one-shot","provider":1}`,
		"v1 provider missing": `{"version":1,"label":"x"}`,
		"mode invalid":        `{"version":3,"mode":"fork","provider":"fork"}`,
		"mode missing":        `{"version":2,"provider":"fork"}`,
		"label not a string":  `{"version":3,"mode":"one-shot","provider":"fork","label":7}`,
	} {
		_, err := View(3, nil, 0, 50, []Evidence{evidence("ok", 1, Evidence{}), evidence("c", 4, desc(d))})
		ce := catalogError(t, err)
		if ce.Problem != ProblemDescriptor || ce.ChildID != "c" || ce.Seq != -1 {
			t.Errorf("%s: %+v", name, ce)
		}
	}
	// A continuable descriptor without label converts into a v0 fact the
	// strict projection refuses: the parent is unreadable too.
	_, err := View(3, log("session/start", `{}`), 0, 50, []Evidence{evidence("c", 4, desc(`{"version":3,"mode":"continuable","provider":"spawn"}`))})
	if ce := catalogError(t, err); ce.Problem != ProblemMalformed || ce.Seq != 1 {
		t.Errorf("continuable without label: %+v", ce)
	}
}

// §6 rule 4, §8 cases 17 and 18: an existing fact is checked against the
// evidence and kept as written.
func TestBackfillExistingFacts(t *testing.T) {
	existing := log(cat, fact("c", 2, ModeContinuable, "x"))
	// Agreeing evidence: the fact stays, nothing is appended.
	added, err := Backfill(existing, 0, 50, []Evidence{evidence("c", 2, desc(`{"version":3,"mode":"continuable","provider":"spawn","label":"x"}`))})
	if err != nil || added != nil {
		t.Errorf("agreeing evidence: %v, %v", added, err)
	}
	// Two descriptors (or none, or an unsupported one): only createdAt is compared.
	for _, ev := range []Evidence{
		{DescriptorCount: 2, Descriptor: json.RawMessage(v3OneShot)},
		{},
		desc(`{"version":4,"mode":"one-shot","provider":"fork"}`),
	} {
		if added, err := Backfill(existing, 0, 50, []Evidence{evidence("c", 2, ev)}); err != nil || added != nil {
			t.Errorf("existing fact with %+v: %v, %v", ev, added, err)
		}
	}
	// The converter's provider rule does not apply to an existing fact.
	if _, err := Backfill(existing, 0, 50, []Evidence{evidence("c", 2, desc(`{"version":3,"mode":"continuable","label":"x"}`))}); err != nil {
		t.Errorf("existing fact, descriptor without provider: %v", err)
	}
	for name, ev := range map[string]Evidence{
		"createdAt (§8 case 17)": evidence("c", 3, Evidence{}),
		"mode":                   evidence("c", 2, desc(`{"version":3,"mode":"one-shot","provider":"fork","label":"x"}`)),
		"label":                  evidence("c", 2, desc(`{"version":3,"mode":"continuable","provider":"spawn","label":"y"}`)),
		"label absent":           evidence("c", 2, desc(`{"version":3,"mode":"continuable","provider":"spawn"}`)),
	} {
		_, err := View(3, existing, 0, 50, []Evidence{ev})
		if ce := catalogError(t, err); ce.Problem != ProblemConflict || ce.ChildID != "c" {
			t.Errorf("%s conflict: %+v", name, ce)
		}
	}
	// An unknown fact against a child with one supported descriptor conflicts.
	unknown := log(cat, fact("c", 2, ModeUnknown))
	if _, err := View(3, unknown, 0, 50, []Evidence{evidence("c", 2, desc(v3OneShot))}); catalogError(t, err).Problem != ProblemConflict {
		t.Error("unknown fact vs descriptor does not conflict")
	}
}

// §6 rule 6 and §8 case 16: facts without evidence are kept, extension keys
// included; the strict projection then refuses the extension key.
func TestBackfillKeepsFactsWithoutEvidence(t *testing.T) {
	events := log(cat, fact("gone", 9, ModeOneShot), cat, fact("here", 1, ModeOneShot))
	got := backfilledView(t, 2, events, 0, []Evidence{evidence("new", 0, Evidence{}), evidence("here", 1, Evidence{})})
	want := `[{"id":"gone","createdAt":9,"mode":"one-shot"},{"id":"here","createdAt":1,"mode":"one-shot"},{"id":"new","createdAt":0,"mode":"unknown"}]`
	if got != want {
		t.Errorf("view = %s\nwant   %s", got, want)
	}
	ext := log(cat, `{"version":0,"childId":"c","childCreatedAt":1,"mode":"one-shot","plugin":"p"}`)
	added, err := Backfill(ext, 0, 50, []Evidence{evidence("c", 1, Evidence{})})
	if err != nil || added != nil {
		t.Fatalf("migration of an extension key: %v, %v", added, err)
	}
	_, err = View(3, ext, 0, 50, []Evidence{evidence("c", 1, Evidence{})})
	if ce := catalogError(t, err); ce.Problem != ProblemMalformed || !strings.Contains(ce.Detail, "plugin") {
		t.Errorf("view of a kept extension key: %+v", ce)
	}
}

// §6 rules 1–2: own facts only (after the last inherited marker); an
// invalid or duplicate own fact refuses the migration.
func TestBackfillOwnFactsAndRefusals(t *testing.T) {
	// An inherited fact for c is not c's fact: c gets a new one.
	forked := log(cat, fact("c", 1, ModeOneShot), cat, `{"bad":true}`, session.TypeEndSeed, `{"inherited":true}`)
	got := backfilledView(t, 3, forked, 2, []Evidence{evidence("c", 1, Evidence{})})
	if got != `[{"id":"c","createdAt":1,"mode":"unknown"}]` {
		t.Errorf("fork view = %s", got)
	}
	dup := log(cat, fact("c", 1, ModeOneShot), cat, fact("c", 1, ModeOneShot))
	if ce := catalogError(t, func() error { _, err := Backfill(dup, 0, 50, nil); return err }()); ce.Problem != ProblemDuplicate || ce.Seq != 1 {
		t.Errorf("duplicate: %+v", ce)
	}
	bad := log(cat, `{"version":5,"childId":"c","childCreatedAt":1,"mode":"one-shot"}`)
	if ce := catalogError(t, func() error { _, err := Backfill(bad, 0, 50, nil); return err }()); ce.Problem != ProblemUnsupportedVersion || ce.Seq != 0 {
		t.Errorf("unsupported version: %+v", ce)
	}
}

func TestCompareCodeUnits(t *testing.T) {
	// U+FF5E sorts after U+1F600 by UTF-16 code unit (0xFF5E > 0xD83D),
	// before it by code point (Go's <).
	a, b := "\U0001F600", "\uFF5E"
	if CompareCodeUnits(a, b) >= 0 || !(b < a) {
		t.Errorf("CompareCodeUnits(%q, %q) = %d", a, b, CompareCodeUnits(a, b))
	}
	for _, tt := range []struct {
		a, b string
		want int
	}{
		{"B", "a", -1}, {"a", "a", 0}, {"a", "ab", -1}, {"", "", 0}, {"b", "", 1},
		{"\U0001F600", "\U0001F601", -1}, {"\U00010000", "\U0010FFFF", -1},
	} {
		if got := CompareCodeUnits(tt.a, tt.b); got != tt.want {
			t.Errorf("CompareCodeUnits(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
	// Against the definition, on random strings mixing the ranges that matter.
	alphabet := []rune{'a', 'B', 0xE000, 0xFF5E, 0xFFFF, 0x10000, 0x1F600, 0x10FFFF}
	rng := rand.New(rand.NewSource(1))
	random := func() string {
		r := make([]rune, rng.Intn(4))
		for i := range r {
			r[i] = alphabet[rng.Intn(len(alphabet))]
		}
		return string(r)
	}
	for range 5000 {
		x, y := random(), random()
		want := slices.Compare(utf16.Encode([]rune(x)), utf16.Encode([]rune(y)))
		if got := CompareCodeUnits(x, y); got != want {
			t.Fatalf("CompareCodeUnits(%q, %q) = %d, want %d", x, y, got, want)
		}
	}
}

// FuzzBackfill: any parent log and evidence back-fills or refuses with a
// coded error, never a panic; what it appends follows the log densely.
func FuzzBackfill(f *testing.F) {
	f.Add([]byte(fact("c", 1, ModeOneShot)), "c", int64(1), 1, []byte(v3OneShot))
	f.Add([]byte(`{"version":0,"childId":"c","childCreatedAt":1,"mode":"continuable"}`), "d", int64(0), 1, []byte(`{"version":3}`))
	f.Add([]byte(`{}`), "", int64(-5), 3, []byte(`null`))
	f.Fuzz(func(t *testing.T, factData []byte, id string, ca int64, count int, descriptor []byte) {
		events := []session.Event{{Type: session.TypeCatalog, Seq: 0, Time: 1, Data: factData}}
		ev := []Evidence{{ChildID: id, ChildCreatedAt: ca, DescriptorCount: count, Descriptor: descriptor}}
		added, err := Backfill(events, 0, 0, ev)
		if err != nil {
			catalogError(t, err)
			return
		}
		for i, e := range added {
			if e.Seq != int64(1+i) || e.Type != session.TypeCatalog {
				t.Fatalf("added fact %d at seq %d", i, e.Seq)
			}
		}
		if _, err := View(3, events, 0, 0, ev); err != nil {
			catalogError(t, err)
		}
	})
}

// View of a V0–V3 log is OwnView completed with the evidence (Complete),
// refusals included: what a stored view splits it into (the listing's
// resolved catalogs) gives the same catalog.
func TestCompleteIsView(t *testing.T) {
	existing := log(cat, fact("c", 2, ModeContinuable, "x"), cat, fact("gone", 9, ModeOneShot))
	for name, tt := range map[string]struct {
		events []session.Event
		cut    int64
		ev     []Evidence
	}{
		"no facts, ordered evidence": {log("session/start", `{}`), 0, []Evidence{
			evidence("a", 5, desc(v3Continuable)), evidence("B", 5, desc(v3OneShot)), evidence("z", 1, Evidence{})}},
		"agreeing fact":         {existing, 0, []Evidence{evidence("c", 2, desc(`{"version":3,"mode":"continuable","provider":"spawn","label":"x"}`)), evidence("n", 1, Evidence{})}},
		"conflicting fact":      {existing, 0, []Evidence{evidence("c", 3, Evidence{})}},
		"refused descriptor":    {nil, 0, []Evidence{evidence("c", 4, desc(`{"version":3,"mode":"resident","provider":"spawn"}`))}},
		"continuable, no label": {nil, 0, []Evidence{evidence("c", 4, desc(`{"version":3,"mode":"continuable","provider":"spawn"}`))}},
		"two descriptors":       {nil, 0, []Evidence{evidence("c", 4, Evidence{DescriptorCount: 2, Descriptor: json.RawMessage(v3OneShot)})}},
		"extension key":         {log(cat, `{"version":0,"childId":"c","childCreatedAt":1,"mode":"one-shot","plugin":"p"}`), 0, []Evidence{evidence("c", 1, Evidence{})}},
		"duplicate own fact":    {log(cat, fact("c", 1, ModeOneShot), cat, fact("c", 1, ModeOneShot)), 0, nil},
		"inherited facts":       {log(cat, fact("c", 1, ModeOneShot), cat, `{"bad":true}`, session.TypeEndSeed, `{"inherited":true}`), 2, []Evidence{evidence("c", 1, Evidence{})}},
	} {
		want, werr := View(3, tt.events, tt.cut, 50, tt.ev)
		own, err := OwnView(tt.events, tt.cut)
		if err == nil {
			var got []Entry
			got, err = Complete(own, tt.ev)
			if err == nil && viewJSON(t, got) != viewJSON(t, want) {
				t.Errorf("%s: Complete(OwnView) = %s, View = %s", name, viewJSON(t, got), viewJSON(t, want))
			}
		}
		if (err == nil) != (werr == nil) {
			t.Errorf("%s: Complete(OwnView) fails with %v, View with %v", name, err, werr)
		}
	}
}
