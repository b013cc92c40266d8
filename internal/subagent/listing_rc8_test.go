package subagent

// DSH's catalogue cases (semantics §10) whose recorded outcome is
// 0.1.0-rc.8's and differs from the later revision dsh's seeds profile
// follows: under the 0.1.0-rc.8 profile each gives DSH's own result. The
// seeds outcome of the same case stays pinned by its LaterRevision test in
// listing_catalog_test.go.

import (
	"context"
	"errors"
	"testing"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/dshcompat"
	"github.com/dsh-project/dsh/internal/session"
)

// rc8 returns l following DSH 0.1.0-rc.8.
func rc8(l *Lister) *Lister {
	l.Profile = dshcompat.RC8
	return l
}

// descV3 is desc with version 3 (later DSH's payload).
func descV3(label string) string {
	return `{"version":3,"mode":"continuable","provider":"spawn","label":"` + label + `"}`
}

// L15: rc.8 consults the cache for a seeded child too and refuses the
// cached ancestor identity by its seq (2 < seedLength 4): the log is read
// once and the child's own descriptor wins. A cached identity within the
// own suffix is final, even a stale one (deviation #6).
func TestRC8L15SeededChildCacheGate(t *testing.T) {
	c := newCatalog(t)
	h := c.author("fork-child", forkChildEvents("ancestor label", "own label"), seeded(4))
	c.putCheckpoint(h, 6, identityRow("ancestor label", 2))
	rows, err := c.children(rc8(c.cachedLister()), "parent")
	expectRows(t, rows, err, `fork-child continuable "own label" inactive`)
	if n := c.reads.count("fork-child"); n != 1 {
		t.Errorf("read %d times, want 1", n)
	}
	c.putCheckpoint(h, 6, identityRow("stale own", 5))
	rows, err = c.children(rc8(c.cachedLister()), "parent")
	expectRows(t, rows, err, `fork-child continuable "stale own" inactive`)
	if n := c.reads.count("fork-child"); n != 0 {
		t.Errorf("read %d times, want 0 (served from the cache)", n)
	}
}

// L16a–g: rc.8's witness is seven fields, the exact seedLength among them;
// origin and agentPreset are not witness fields.
func TestRC8L16SevenFieldWitness(t *testing.T) {
	const id = "00000000-0000-4000-8000-00000000ae03"
	cases := []struct {
		name   string
		seeded bool
		change string // SQL SET clause on the child's sessions row
		want   string
	}{
		{"c createdAt", false, "created_at = created_at + 1", "diagnostic corrupt"},
		{"d cwd", false, "cwd = '/elsewhere'", "diagnostic corrupt"},
		{"e parentSession", false, "parent_session = 'another-parent'", "diagnostic corrupt"},
		{"f seedLength makes it seeded", false, "seed_length = 1", "diagnostic corrupt"},
		{"f seedLength moves", true, "seed_length = 5", "diagnostic corrupt"},
		{"g delegationDepth", false, "delegation_depth = delegation_depth + 1", "diagnostic corrupt"},
		{"origin is no witness field", false, "origin = NULL", `continuable "witnessed" inactive`},
		{"agentPreset is no witness field", false, "agent_preset = 'reviewer'", `continuable "witnessed" inactive`},
		{"a version", false, "version = version + 1", "diagnostic unavailable"},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			c := newCatalog(t)
			if tt.seeded {
				c.author(id, forkChildEvents("ancestor", "witnessed"), seeded(4))
			} else {
				c.author(id, childEvents(desc("witnessed")).events)
			}
			sibling := c.startChild("parent", "healthy sibling")
			l := rc8(c.lister())
			c.reads.before = func(_ context.Context, read string) {
				if read == id {
					c.exec("UPDATE sessions SET "+tt.change+" WHERE id = ?", read)
				}
			}
			rows, err := c.children(l, "parent")
			expectRows(t, rows, err, id+" "+tt.want, sibling+` continuable "healthy sibling" inactive`)
		})
	}
}

// L20 as DSH wrote it: desc('from the future', 3) is an unknown version to
// rc.8: corrupt. (Seeds reads version 3 and lists the child.)
func TestRC8L20Version3Corrupt(t *testing.T) {
	c := newCatalog(t)
	c.author("future", childEvents(descV3("from the future")).events)
	rows, err := c.children(rc8(c.lister()), "parent")
	expectRows(t, rows, err, "future diagnostic corrupt")
	rows, err = c.children(c.lister(), "parent")
	expectRows(t, rows, err, `future continuable "from the future" inactive`)
}

// L21: a fork child whose whole log is its seed is listed under the
// ancestor's identity (deviation #1), cold and while a holder runs it.
func TestRC8L21SeedOnlyForkChildListed(t *testing.T) {
	c := newCatalog(t)
	c.author("seed-only", childEvents(desc("ancestor label")).events, seeded(4))
	rows, err := c.children(rc8(c.lister()), "parent")
	expectRows(t, rows, err, `seed-only continuable "ancestor label" inactive`)
	c.holdLive(authoredHeader("seed-only", seeded(4)), identityView("ancestor label", 2))
	rows, err = c.children(rc8(c.lister()), "parent")
	expectRows(t, rows, err, `seed-only continuable "ancestor label" running`)
}

// L24: for a live child every registered unit is consulted: the hostile
// unit's failure makes the poisoned live child corrupt; the healthy live
// child is a running row.
func TestRC8L24LiveChildConsultsEveryUnit(t *testing.T) {
	c := newCatalog(t)
	poisoned := liveHeader("live-poisoned", "parent", 1)
	if err := c.st.CreateSession(c.ctx, poisoned, childEvents(desc("poison me")).events); err != nil {
		t.Fatal(err)
	}
	c.holdLive(poisoned, identityView("poison me", 2))
	c.holdLive(liveHeader("live-healthy", "parent", 2), identityView("live healthy", 1))
	c.holdLiveSnapshot(liveHeader("live-unit-failed", "parent", 3), "", "subagent view failed")
	lister := rc8(c.lister())
	if err := lister.Units.Register(hostileUnit{}); err != nil {
		t.Fatal(err)
	}
	rows, err := c.children(lister, "parent")
	expectRows(t, rows, err,
		"live-poisoned diagnostic corrupt",
		`live-healthy continuable "live healthy" running`,
		"live-unit-failed diagnostic corrupt")
}

// P1 and the parse order: to rc.8 any version but 2 is unsupported before
// anything else is checked, so a version-3 payload that seeds finds
// malformed is only unsupported; version 2 parses as under seeds.
func TestRC8DescriptorVersion2Only(t *testing.T) {
	for _, raw := range []string{
		`{"version":3,"provider":"spawn"}`,
		descV3("later"),
		`{"version":3,"mode":"continuable","provider":"spawn","label":"c","agentReasoningEffort":7}`,
		`{"version":3.0,"mode":"one-shot","provider":"fork"}`,
	} {
		if d, err := ParseDescriptorRC8([]byte(raw)); d != nil || err != nil {
			t.Errorf("%s: %+v, %v; want unsupported", raw, d, err)
		}
	}
	d, err := ParseDescriptorRC8([]byte(desc("work")))
	if err != nil || d == nil || d.Version != 2 || *d.Label != "work" {
		t.Errorf("version 2: %+v, %v", d, err)
	}
	_, err = ParseDescriptorRC8([]byte(`{"version":2,"mode":"continuable","provider":"spawn","label":"c","agentReasoningEffort":"high"}`))
	var de *DescriptorError
	if !errors.As(err, &de) || de.Problem != `payload has unknown field "agentReasoningEffort"` {
		t.Errorf("version 2 with agentReasoningEffort: %v", err)
	}
}

// dsh's own folds read version 3 as valid; under rc.8 an identity taken
// from one (a checkpoint record, a holder's snapshot, a registry fold
// recorded beside the log) is checked against its descriptor: a version-3
// last descriptor is rc.8's null. A version-2 descriptor before it does not
// come back (the version-3 one reset the identity).
func TestRC8Version3ThroughDshFolds(t *testing.T) {
	c := newCatalog(t)
	v2ThenV3 := childEvents(desc("first")).descriptor(descV3("second")).add(session.TypeTurnEnd, `{"turn":1,"reason":{"kind":"completed"}}`).events
	v3ThenV2 := childEvents(descV3("first")).descriptor(desc("second")).add(session.TypeTurnEnd, `{"turn":1,"reason":{"kind":"completed"}}`).events
	// Cold children with the checkpoint a dsh writer leaves.
	h := c.author("a-cached-v3", childEvents(descV3("cached later")).events, created(2))
	c.checkpoint(h, childEvents(descV3("cached later")).events)
	h = c.author("b-cached-v2-then-v3", v2ThenV3, created(3))
	c.checkpoint(h, v2ThenV3)
	h = c.author("c-cached-v3-then-v2", v3ThenV2, created(4))
	c.checkpoint(h, v3ThenV2)
	// A cold child with a registry fold recorded beside its log.
	h = c.author("d-folded-v3", childEvents(descV3("folded later")).events, created(5))
	err := c.st.Update(c.ctx, func(tx backend.Store) error {
		reg := NewRegistry()
		f := reg.NewFold()
		f.Apply(childEvents(descV3("folded later")).events...)
		return RecordRegistryFold(c.ctx, tx, reg, h.ID, f)
	})
	if err != nil {
		t.Fatal(err)
	}
	seeds := []string{
		`a-cached-v3 continuable "cached later" inactive`,
		`b-cached-v2-then-v3 continuable "second" inactive`,
		`c-cached-v3-then-v2 continuable "second" inactive`,
		`d-folded-v3 continuable "folded later" inactive`,
	}
	want := []string{
		"a-cached-v3 diagnostic corrupt",
		"b-cached-v2-then-v3 diagnostic corrupt",
		`c-cached-v3-then-v2 continuable "second" inactive`,
		"d-folded-v3 diagnostic corrupt",
	}
	rows, err := c.children(c.cachedLister(), "parent")
	expectRows(t, rows, err, seeds...)
	rows, err = c.children(rc8(c.cachedLister()), "parent")
	expectRows(t, rows, err, want...)
	// Descendants take the same paths (one subtree statement).
	l := rc8(c.cachedLister())
	res, err := l.ResolveDescendants(c.ctx, "parent")
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rowsOf(res) {
		r.ParentID, r.Depth = "", 0
		if show(r) != want[i] {
			t.Errorf("descendants row %d: %s, want %s", i, show(r), want[i])
		}
	}
	// Every listing's answer matches a cold read's: no cache at all.
	rows, err = c.children(rc8(c.lister()), "parent")
	expectRows(t, rows, err, want...)

	// A live child whose holder folded a version-3 descriptor: rc.8's
	// null, the creation window: omitted.
	live := liveHeader("e-live-v3", "parent", 6)
	if err := c.st.CreateSession(c.ctx, live, childEvents(descV3("live later")).events); err != nil {
		t.Fatal(err)
	}
	c.holdLive(live, identityView("live later", 2))
	rows, err = c.children(rc8(c.cachedLister()), "parent")
	expectRows(t, rows, err, want...)
	rows, err = c.children(c.cachedLister(), "parent")
	expectRows(t, rows, err, append(seeds, `e-live-v3 continuable "live later" running`)...)
}
