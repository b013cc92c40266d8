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
