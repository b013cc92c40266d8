package catalog

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/dsh-project/dsh/internal/session"
)

// log builds events with dense seqs from (type, data) pairs; time = 100+seq.
func log(pairs ...string) []session.Event {
	var events []session.Event
	for i := 0; i+1 < len(pairs); i += 2 {
		seq := int64(len(events))
		events = append(events, session.Event{Type: pairs[i], Seq: seq, Time: 100 + seq, Data: json.RawMessage(pairs[i+1])})
	}
	return events
}

const cat = session.TypeCatalog

func fact(id string, ca int64, mode Mode, lbl ...string) string {
	f := Fact{Version: VersionLive, ChildID: id, ChildCreatedAt: ca, Mode: mode}
	if mode == ModeUnknown {
		f.Version = VersionUnknown
	}
	if mode == ModeExternal {
		f.Version = VersionExternal
	}
	if len(lbl) > 0 {
		f.Label = &lbl[0]
	}
	return string(encode(f))
}

func viewJSON(t *testing.T, view []Entry) string {
	t.Helper()
	b, err := json.Marshal(view)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func catalogError(t *testing.T, err error) *Error {
	t.Helper()
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v, want a catalog error", err)
	}
	return ce
}

// §2 / §8 case 1: event order, not createdAt; the view's key order.
func TestFoldKeepsEventOrderAndKeyOrder(t *testing.T) {
	events := log(
		"session/start", `{}`,
		cat, fact("B", 20, ModeContinuable, "branch"),
		"user/message", `{}`,
		cat, fact("S", 10, ModeOneShot, "sibling"),
		cat, fact("N", 30, ModeOneShot),
	)
	view, err := Fold(events, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"id":"B","createdAt":20,"mode":"continuable","label":"branch"},{"id":"S","createdAt":10,"mode":"one-shot","label":"sibling"},{"id":"N","createdAt":30,"mode":"one-shot"}]`
	if got := viewJSON(t, view); got != want {
		t.Errorf("view = %s\nwant   %s", got, want)
	}
}

// §2: no dedupe, no update: a second fact for a child is a second entry;
// unknown and external entries are kept as they are.
func TestFoldAppendsDuplicatesAndEveryMode(t *testing.T) {
	events := log(cat, fact("X", 1, ModeOneShot), cat, fact("U", 2, ModeUnknown), cat, fact("X", 1, ModeContinuable, "again"), cat, fact("E", 3, ModeExternal, "ext"))
	view, err := Fold(events, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"id":"X","createdAt":1,"mode":"one-shot"},{"id":"U","createdAt":2,"mode":"unknown"},{"id":"X","createdAt":1,"mode":"continuable","label":"again"},{"id":"E","createdAt":3,"mode":"external","label":"ext"}]`
	if got := viewJSON(t, view); got != want {
		t.Errorf("view = %s\nwant   %s", got, want)
	}
}

// §2, §8 case 9: facts below the inherited cut are never interpreted, not
// even validated.
func TestFoldIgnoresInheritedFacts(t *testing.T) {
	events := log(
		cat, fact("I", 1, ModeContinuable, "inherited"),
		cat, `{"version":9}`,
		session.TypeEndSeed, `{"inherited":true}`,
		cat, fact("O", 2, ModeContinuable, "own"),
	)
	view, err := Fold(events, 2)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := viewJSON(t, view), `[{"id":"O","createdAt":2,"mode":"continuable","label":"own"}]`; got != want {
		t.Errorf("view = %s, want %s", got, want)
	}
	if err := Admit(events, 2); err != nil {
		t.Errorf("Admit: %v", err)
	}
}

func TestFoldEmptyIsEmptyNotNil(t *testing.T) {
	view, err := Fold(log("session/start", `{}`), 0)
	if err != nil || view == nil || len(view) != 0 {
		t.Fatalf("Fold = %#v, %v", view, err)
	}
	if got := viewJSON(t, view); got != "[]" {
		t.Errorf("view = %s", got)
	}
}

// §1.2: one invalid own fact refuses the whole fold, at its seq.
func TestFoldRefusesAnInvalidOwnFact(t *testing.T) {
	for _, tt := range []struct {
		data    string
		problem Problem
	}{
		{`{"version":0,"childId":"c","childCreatedAt":-1,"mode":"one-shot"}`, ProblemMalformed},
		{`{"version":7,"childId":"c","childCreatedAt":1,"mode":"one-shot"}`, ProblemUnsupportedVersion},
		{`{"version":0,"childId":"c","childCreatedAt":1,"mode":"one-shot","plugin":1}`, ProblemMalformed},
		{`"not an object"`, ProblemMalformed},
	} {
		events := log(cat, fact("A", 1, ModeOneShot), "user/message", `{}`, cat, tt.data, cat, fact("B", 2, ModeOneShot))
		view, err := Fold(events, 0)
		ce := catalogError(t, err)
		if view != nil || ce.Problem != tt.problem || ce.Seq != 2 {
			t.Errorf("Fold with %s = %v, %s at seq %d; want nil, %s at seq 2", tt.data, view, ce.Problem, ce.Seq, tt.problem)
		}
		if !strings.Contains(err.Error(), "seq 2") {
			t.Errorf("message %q does not name the seq", err)
		}
	}
}

// §1.2: admission of a persisted V4 log: catalogFact tolerates extra keys,
// a duplicate own child refuses.
func TestAdmit(t *testing.T) {
	extra := log(cat, `{"version":0,"childId":"c","childCreatedAt":1,"mode":"one-shot","plugin":"p"}`)
	if err := Admit(extra, 0); err != nil {
		t.Errorf("Admit with an extra key: %v", err)
	}
	dup := log(cat, fact("X", 1, ModeOneShot), cat, fact("Y", 1, ModeOneShot), cat, fact("X", 1, ModeOneShot))
	ce := catalogError(t, Admit(dup, 0))
	if ce.Problem != ProblemDuplicate || ce.Seq != 2 || ce.ChildID != "X" || !strings.Contains(ce.Detail, `duplicate catalog child "X"`) {
		t.Errorf("Admit duplicate = %+v", ce)
	}
	// The inherited copy of a fact is not a duplicate of an own one.
	forked := log(cat, fact("X", 1, ModeOneShot), session.TypeEndSeed, `{"inherited":true}`, cat, fact("X", 1, ModeOneShot))
	if err := Admit(forked, 1); err != nil {
		t.Errorf("Admit of a fork re-cataloging an inherited child: %v", err)
	}
	bad := log(cat, `{"version":0}`)
	if ce := catalogError(t, Admit(bad, 0)); ce.Problem != ProblemMalformed || ce.Seq != 0 {
		t.Errorf("Admit malformed = %+v", ce)
	}
}

// View of a V4 parent: admission, then the strict fold; no back-fill.
func TestViewOfNativeParent(t *testing.T) {
	ev := []Evidence{{ChildID: "uncataloged", ChildCreatedAt: 1}}
	view, err := View(4, log(cat, fact("A", 1, ModeOneShot)), 0, 50, ev)
	if err != nil {
		t.Fatal(err)
	}
	if got := viewJSON(t, view); got != `[{"id":"A","createdAt":1,"mode":"one-shot"}]` {
		t.Errorf("V4 view = %s (evidence must not be back-filled)", got)
	}
	// §8 case 2: a V4 parent without facts lists nothing, whatever sessions name it.
	if view, err := View(4, log("user/message", `{}`), 0, 50, ev); err != nil || len(view) != 0 {
		t.Errorf("V4 parent without facts = %v, %v", view, err)
	}
	// Extra key: admitted, then refused by the projection.
	_, err = View(4, log(cat, `{"version":0,"childId":"c","childCreatedAt":1,"mode":"one-shot","plugin":"p"}`), 0, 50, nil)
	if ce := catalogError(t, err); ce.Problem != ProblemMalformed || !strings.Contains(ce.Detail, "plugin") {
		t.Errorf("V4 extra key = %+v", ce)
	}
	// §8 case 14: a persisted V4 log naming a child twice is refused.
	_, err = View(4, log(cat, fact("X", 1, ModeOneShot), cat, fact("X", 1, ModeOneShot)), 0, 50, nil)
	if ce := catalogError(t, err); ce.Problem != ProblemDuplicate {
		t.Errorf("V4 duplicate = %+v", ce)
	}
}
