package session

import (
	"encoding/json"
	"testing"
)

// An ordinary fork copies the parent's events up to its last turn/end, adds
// one session/end-seed and records the exact inherited cut; an open turn
// after it is not inherited, and a parent with no completed turn gives a
// seeded child with an empty prefix (seedLength 0).
func TestForkSeedsUpToLastTurnEnd(t *testing.T) {
	cwd, preset := "/w", "coder"
	parent := Header{ID: "p", CreatedAt: 1, Cwd: &cwd, AgentPreset: &preset}
	ev := func(seq int64, typ, data string) Event {
		return Event{Type: typ, Seq: seq, Time: 10, Data: json.RawMessage(data)}
	}
	log := []Event{
		ev(0, TypeTurnStart, `{"turn":1}`),
		ev(1, TypeTurnEnd, `{"turn":1,"reason":{"kind":"completed"}}`),
		ev(2, TypeTurnStart, `{"turn":2}`),
	}
	child, seed := Fork(parent, log, "c", 99)
	if child.SeedLength == nil || *child.SeedLength != 2 || child.Parent() != "p" || child.IsSubagent() || *child.Cwd != "/w" || *child.AgentPreset != "coder" {
		t.Fatalf("child header %+v", child)
	}
	if len(seed) != 3 || seed[2].Type != TypeEndSeed || seed[2].Seq != 2 || string(seed[2].Data) != "{}" {
		t.Fatalf("seed %+v", seed)
	}
	if err := ValidateLog(child, seed); err != nil {
		t.Fatalf("fork seed does not validate: %v", err)
	}
	empty, seed := Fork(parent, log[2:], "e", 99)
	if empty.SeedLength == nil || *empty.SeedLength != 0 || len(seed) != 1 || seed[0].Seq != 0 {
		t.Fatalf("empty fork: %+v %+v", empty, seed)
	}
}

// A fork of a later-format session is in the parent's format, seeded, and
// its cut is the seq of the tagged marker closing the inherited prefix: the
// log validates under the later lineage rules, which refuse a seeded log
// whose event at the cut is an untagged marker (what a format-0 fork
// writes).
func TestForkKeepsLaterFormat(t *testing.T) {
	cwd := "/w"
	for _, version := range []int64{2, 3, 4} {
		parent := Header{Version: version, ID: "p", CreatedAt: 1, Cwd: &cwd}
		log := []Event{
			{Type: TypeTurnStart, Seq: 0, Time: 10, Data: json.RawMessage(`{"turn":1}`)},
			{Type: TypeTurnEnd, Seq: 1, Time: 10, Data: json.RawMessage(`{"turn":1,"reason":{"kind":"completed"}}`)},
		}
		child, seed := Fork(parent, log, "c", 99)
		if child.Version != version || !child.IsSeeded() || child.InheritedCut() != 2 {
			t.Fatalf("v%d: child header %+v", version, child)
		}
		if err := ValidateLog(child, seed); err != nil {
			t.Fatalf("v%d: fork does not validate: %v", version, err)
		}
		if cut, ok := LaterFormatCut(true, seed); !ok || cut != child.InheritedCut() {
			t.Fatalf("v%d: the marker gives cut %d (%v), the header %d", version, cut, ok, child.InheritedCut())
		}
		untagged := append([]Event(nil), seed...)
		untagged[2].Data = json.RawMessage(`{}`)
		if err := ValidateLog(child, untagged); err == nil {
			t.Fatalf("v%d: a seeded later log with an untagged marker at its cut validated", version)
		}
	}
}
