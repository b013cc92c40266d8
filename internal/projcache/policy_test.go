package projcache

import (
	"testing"
	"time"

	"github.com/dsh-project/dsh/internal/session"
)

// fakeClock is advanced by hand, so no test depends on real time.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func checkpointer(p WritePolicy) (*Checkpointer, *fakeClock) {
	clock := &fakeClock{t: time.Unix(1000, 0)}
	c := &Checkpointer{policy: p.withDefaults(), now: clock.now, lastWrite: clock.t}
	return c, clock
}

func ev(typ string) session.Event { return session.Event{Type: typ} }

func TestWritePolicyDefaults(t *testing.T) {
	p := WritePolicy{}.withDefaults()
	if p.EveryEvents != 200 || p.Interval != 5*time.Second {
		t.Fatalf("defaults %+v", p)
	}
	p = WritePolicy{EveryEvents: 3, Interval: time.Second}.withDefaults()
	if p.EveryEvents != 3 || p.Interval != time.Second {
		t.Fatalf("explicit values replaced: %+v", p)
	}
}

func TestCheckpointerTurnEndIsMandatory(t *testing.T) {
	c, _ := checkpointer(WritePolicy{EveryEvents: 100, Interval: time.Hour})
	if c.Observe(ev(session.TypeTurnStart), ev(session.TypeStepStart)) {
		t.Fatal("wrote before any threshold")
	}
	if !c.Observe(ev(session.TypeStepEnd), ev(session.TypeTurnEnd)) {
		t.Fatal("turn/end did not force a write")
	}
	c.Written()
	if c.Observe(ev(session.TypeTurnStart)) {
		t.Fatal("wrote right after a write")
	}
}

func TestCheckpointerEventCount(t *testing.T) {
	c, _ := checkpointer(WritePolicy{EveryEvents: 3, Interval: time.Hour})
	if c.Observe(ev("a")) || c.Observe(ev("b")) {
		t.Fatal("wrote below the count")
	}
	if !c.Observe(ev("c")) {
		t.Fatal("no write at the count")
	}
	// A failed write is not acknowledged: the next append asks again.
	if !c.Observe(ev("d")) {
		t.Fatal("unacknowledged events were forgotten")
	}
	c.Written()
	if c.Observe(ev("e")) {
		t.Fatal("count not reset by Written")
	}
	if c.Observe() {
		t.Fatal("an empty append asked for a write")
	}
}

func TestCheckpointerInterval(t *testing.T) {
	c, clock := checkpointer(WritePolicy{EveryEvents: 100, Interval: 5 * time.Second})
	clock.t = clock.t.Add(4 * time.Second)
	if c.Observe(ev("a")) {
		t.Fatal("wrote before the interval")
	}
	clock.t = clock.t.Add(time.Second)
	if !c.Observe(ev("b")) {
		t.Fatal("no write once the interval passed")
	}
	c.Written()
	clock.t = clock.t.Add(4 * time.Second)
	if c.Observe(ev("c")) {
		t.Fatal("interval not measured from the last write")
	}
}

func TestCheckpointerRelease(t *testing.T) {
	c, _ := checkpointer(WritePolicy{})
	if !c.Release() {
		t.Fatal("a writer that never wrote must write on release")
	}
	c.Observe(ev("a"))
	c.Written()
	if c.Release() {
		t.Fatal("nothing pending, yet release asked for a write")
	}
	c.Observe(ev("b"))
	if !c.Release() {
		t.Fatal("pending events not written on release")
	}
}
