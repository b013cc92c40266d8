package subagent

// DSH's listChildren (L1–L41) and listDescendants (D1–D11) catalogue
// (semantics §10.1–§10.2), on real SQLite stores. Where dsh follows DSH's
// later listing revision and the outcome differs from 0.1.0-rc.8, the test
// name says LaterRevision and asserts the later outcome. Cases about DSH's
// optional services (a registry or session store that is not mounted) pin
// what dsh does instead; their comments say so.

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/projcache"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/sqlitepersist"
)

// L1: a live child with nothing persisted but its header (a dsh holder
// creates the header and takes the lease together) lists as running, from
// its holder's snapshot alone.
func TestL01LiveOnlyChild(t *testing.T) {
	c := newCatalog(t)
	c.holdLive(liveHeader("live-only-child", "live-only-parent", 1), identityView("live-only child", 1))
	l := c.lister()
	rows, err := c.children(l, "live-only-parent")
	expectRows(t, rows, err, `live-only-child continuable "live-only child" running`)
	if n := c.reads.total(); n != 0 {
		t.Errorf("%d cold reads, want none", n)
	}
}

// L2 (and L41b, D11): DSH rejects a listing when its projection registry is
// not mounted, before anything else, even a cancelled signal. dsh always
// mounts the registry (NewStoreLister); a Lister built without one is a
// wiring error that fails the same way instead of listing.
func TestL02RegistryNotMountedFailsFirst(t *testing.T) {
	c := newCatalog(t)
	headers := &countingHeaders{HeaderSource: c.st}
	l := &Lister{Headers: headers, Cold: c.lister().Cold}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, ctx := range []context.Context{context.Background(), ctx} {
		rows, err := l.ListChildren(ctx, "parent")
		if err == nil || rows != nil {
			t.Fatalf("rows %v err %v, want a failure", rows, err)
		}
		if dsherr.CodeOf(err) == dsherr.Cancelled || !strings.Contains(err.Error(), "projection registry") {
			t.Errorf("err = %v, want the missing registry", err)
		}
		if _, err := l.ListDescendants(ctx, "parent"); err == nil || !strings.Contains(err.Error(), "projection registry") {
			t.Errorf("descendants: err = %v, want the missing registry", err)
		}
	}
	if headers.calls != 0 {
		t.Errorf("headers read %d times before the registry check", headers.calls)
	}
	if !strings.Contains(fmt.Sprint(NewStoreLister(c.st, nil, 0).Units.Keys()), UnitKey) {
		t.Error("NewStoreLister does not mount the subagent unit")
	}
}

// L3: DSH needs its session store mounted. dsh's equivalent is the database
// itself: a listing over a missing database never starts (the CLI opens it
// read-only and exits 3), and a Lister without a header source fails.
func TestL03SessionStoreMissing(t *testing.T) {
	_, err := sqlitepersist.OpenReadOnly(context.Background(), filepath.Join(t.TempDir(), "missing.db"), sqlitepersist.Options{})
	if !errors.Is(err, backend.ErrNoDatabase) {
		t.Fatalf("open missing database: %v, want ErrNoDatabase", err)
	}
	l := &Lister{Units: NewRegistry()}
	if _, err := l.ListChildren(context.Background(), "parent"); err == nil || !strings.Contains(err.Error(), "session store") {
		t.Errorf("err = %v, want the missing session store", err)
	}
}

// L4: a started (settled) continuable child.
func TestL04StartedChild(t *testing.T) {
	c := newCatalog(t)
	id := c.startChild("parent", "summarize the doc")
	rows, err := c.children(c.lister(), "parent")
	expectRows(t, rows, err, id+` continuable "summarize the doc" inactive`)
}

// L5: a real one-shot child without a label and a continuable child.
func TestL05OneShotAndContinuable(t *testing.T) {
	c := newCatalog(t)
	once := c.startOneShot("parent", nil)
	cont := c.startChild("parent", "continuable child")
	rows, err := c.children(c.lister(), "parent")
	expectRows(t, rows, err, once+" one-shot inactive", cont+` continuable "continuable child" inactive`)
}

// L6: the parent is only persisted (nobody holds it).
func TestL06PersistedOnlyParent(t *testing.T) {
	c := newCatalog(t)
	parent := session.Header{ID: "00000000-0000-4000-8000-00000000cccc", CreatedAt: 1, Cwd: strp("/work")}
	if err := c.st.CreateSession(c.ctx, parent, []session.Event{
		eventAt(0, session.TypeTurnStart, `{"turn":1}`),
		eventAt(1, session.TypeTurnEnd, `{"turn":1,"reason":{"kind":"completed"}}`),
	}); err != nil {
		t.Fatal(err)
	}
	c.author("00000000-0000-4000-8000-00000000cdcd", childEvents(desc("persisted parent case")).events, under(parent.ID))
	rows, err := c.children(c.lister(), parent.ID)
	expectRows(t, rows, err, `00000000-0000-4000-8000-00000000cdcd continuable "persisted parent case" inactive`)
}

// L7: createdAt first, then id; an ordinary fork of the parent is never a
// candidate.
func TestL07OrderAndOrdinaryForkNotListed(t *testing.T) {
	c := newCatalog(t)
	c.holdLive(liveHeader("00000000-0000-4000-8000-000000000009", "parent", 9), identityView("late child", 1))
	c.holdLive(liveHeader("00000000-0000-4000-8000-000000000002", "parent", 5), identityView("tie b", 1))
	c.holdLive(liveHeader("00000000-0000-4000-8000-000000000001", "parent", 5), identityView("tie a", 1))
	fork := session.Header{ID: "plain-fork", CreatedAt: 2, Cwd: strp("/work"), ParentSession: strp("parent"), SeedLength: new(int64)}
	if err := c.st.CreateSession(c.ctx, fork, []session.Event{eventAt(0, session.TypeEndSeed, `{}`)}); err != nil {
		t.Fatal(err)
	}
	rows, err := c.children(c.lister(), "parent")
	expectRows(t, rows, err,
		`00000000-0000-4000-8000-000000000001 continuable "tie a" running`,
		`00000000-0000-4000-8000-000000000002 continuable "tie b" running`,
		`00000000-0000-4000-8000-000000000009 continuable "late child" running`)
}

// L8: a live child without an identity is in its creation window: no row,
// whether its holder has published nothing yet or a `null` view.
func TestL08LiveCreationWindowOmitted(t *testing.T) {
	c := newCatalog(t)
	c.holdLive(liveHeader("no-snapshot-yet", "parent", 1), "")
	c.holdLive(liveHeader("only-turn-start", "parent", 2), "null")
	rows, err := c.children(c.lister(), "parent")
	expectRows(t, rows, err)
	if rows == nil || len(rows) != 0 {
		t.Errorf("rows = %#v, want an empty non-nil list", rows)
	}
}

// L9: an authored one-shot child with a label.
func TestL09AuthoredOneShot(t *testing.T) {
	c := newCatalog(t)
	c.author("one-shot", childEvents(`{"version":2,"mode":"one-shot","provider":"spawn","label":"labeled one-shot"}`).events)
	rows, err := c.children(c.lister(), "parent")
	expectRows(t, rows, err, `one-shot one-shot "labeled one-shot" inactive`)
}

// L10: settled and live children side by side.
func TestL10SettledAndLive(t *testing.T) {
	c := newCatalog(t)
	settled := c.startChild("parent", "settled child")
	c.holdLive(liveHeader("live-child", "parent", c.tick()), identityView("live child", 0))
	rows, err := c.children(c.lister(), "parent")
	expectRows(t, rows, err, settled+` continuable "settled child" inactive`, `live-child continuable "live child" running`)
}

// L11: of two own descriptors the listing shows the last.
func TestL11LastDescriptorWins(t *testing.T) {
	c := newCatalog(t)
	events := (&logBuilder{}).add(session.TypeTurnStart, `{"turn":1}`).events
	events = append(events, eventAt(1, session.TypeUserMessage, fmt.Sprintf(userMessage, 1)))
	b := &logBuilder{events: events}
	b.descriptor(desc("twice")).descriptor(desc("twice again")).add(session.TypeTurnEnd, `{"turn":1,"reason":{"kind":"completed"}}`)
	c.author("doubled", b.events)
	sibling := c.startChild("parent", "healthy")
	rows, err := c.children(c.lister(), "parent")
	expectRows(t, rows, err, `doubled continuable "twice again" inactive`, sibling+` continuable "healthy" inactive`)
}

// L12: a live child whose later descriptor is malformed has a `null` view:
// running without an identity, so no row.
func TestL12LiveNullAfterMalformedOmitted(t *testing.T) {
	c := newCatalog(t)
	c.holdLive(liveHeader("reset-live", "parent", 1), "null")
	rows, err := c.children(c.lister(), "parent")
	expectRows(t, rows, err)
}

// L13: a valid descriptor followed by a malformed one resets the identity:
// settled debris, corrupt.
func TestL13ValidThenMalformedIsCorrupt(t *testing.T) {
	c := newCatalog(t)
	b := childEvents(desc("was valid"))
	end := b.events[3]
	b.events = b.events[:3]
	b.descriptor(`{"version":2,"mode":"continuable","provider":7}`)
	end.Seq = 4
	b.events = append(b.events, end)
	c.author("reset", b.events)
	rows, err := c.children(c.lister(), "parent")
	expectRows(t, rows, err, "reset diagnostic corrupt")
}

// identityRow is a checkpoint holding one continuable identity.
func identityRow(label string, seq int64) projcache.Checkpoint {
	return projcache.Checkpoint{UnitKey: {Ver: UnitStateVersion, Seq: seq, Val: []byte(`{"identity":` + identityView(label, seq) + `}`)}}
}

// L14: a cached identity of an unseeded cold child is final: its label is
// served and the log is never read.
func TestL14CachedIdentityServedWithoutRead(t *testing.T) {
	c := newCatalog(t)
	h := c.author("cached", childEvents(desc("disk label")).events)
	c.putCheckpoint(h, 3, identityRow("cached own", 2))
	rows, err := c.children(c.cachedLister(), "parent")
	expectRows(t, rows, err, `cached continuable "cached own" inactive`)
	if n := c.reads.count("cached"); n != 0 {
		t.Errorf("read %d times, want 0", n)
	}
}

// forkChildEvents is L15's log: the seed childEvents(desc(ancestor)) (4
// events), then the child's own turn with its own descriptor at seq 5.
func forkChildEvents(ancestor, own string) []session.Event {
	b := childEvents(desc(ancestor))
	b.add(session.TypeTurnStart, `{"turn":2}`)
	if own != "" {
		b.descriptor(desc(own))
	}
	return b.add(session.TypeTurnEnd, `{"turn":2,"reason":{"kind":"completed"}}`).events
}

// L15 (later revision): a seeded child never takes the cache rung, so the
// cached ancestor identity is not even considered; the full read finds the
// child's own descriptor. (0.1.0-rc.8 consulted the cache and refused the
// identity by its seq; the row is the same.)
func TestL15LaterRevisionSeededChildSkipsCache(t *testing.T) {
	c := newCatalog(t)
	h := c.author("fork-child", forkChildEvents("ancestor label", "own label"), seeded(4))
	c.putCheckpoint(h, 6, identityRow("ancestor label", 2))
	rows, err := c.children(c.cachedLister(), "parent")
	expectRows(t, rows, err, `fork-child continuable "own label" inactive`)
	if n := c.reads.count("fork-child"); n != 1 {
		t.Errorf("read %d times, want 1", n)
	}
	// Even a cached identity within the own suffix is not served for a
	// seeded child: the seeded path always reads.
	c.putCheckpoint(h, 6, identityRow("stale own", 5))
	rows, err = c.children(c.cachedLister(), "parent")
	expectRows(t, rows, err, `fork-child continuable "own label" inactive`)
}

// L16: the stored header changes between enumeration and the cold read (a
// lifecycle replaced underneath the listing). dsh compares the later
// revision's nine witness fields; a mismatch is corrupt, and the healthy
// sibling is unaffected.
func TestL16LifecycleWitness(t *testing.T) {
	cases := []struct {
		name   string
		change string // SQL SET clause on the child's sessions row
		want   string
	}{
		{"c createdAt", "created_at = created_at + 1", "diagnostic corrupt"},
		{"d cwd", "cwd = '/elsewhere'", "diagnostic corrupt"},
		{"e parentSession", "parent_session = 'another-parent'", "diagnostic corrupt"},
		{"f seedLength makes it seeded", "seed_length = 1", "diagnostic corrupt"},
		{"g delegationDepth", "delegation_depth = delegation_depth + 1", "diagnostic corrupt"},
		// The later revision's added fields.
		{"LaterRevision origin", "origin = NULL", "diagnostic corrupt"},
		{"LaterRevision agentPreset", "agent_preset = 'reviewer'", "diagnostic corrupt"},
		// L16a: a store validates the header it reads, so a format version
		// dsh cannot read makes the read fail before any witness
		// comparison: unavailable, as a real DSH inspect rejects it.
		{"a version", "version = version + 1", "diagnostic unavailable"},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			c := newCatalog(t)
			c.author("00000000-0000-4000-8000-00000000ae03", childEvents(desc("witnessed")).events)
			sibling := c.startChild("parent", "healthy sibling")
			l := c.lister()
			c.reads.before = func(_ context.Context, id string) {
				if id == "00000000-0000-4000-8000-00000000ae03" {
					c.exec("UPDATE sessions SET "+tt.change+" WHERE id = ?", id)
				}
			}
			rows, err := c.children(l, "parent")
			expectRows(t, rows, err, "00000000-0000-4000-8000-00000000ae03 "+tt.want, sibling+` continuable "healthy sibling" inactive`)
		})
	}
}

// L16b: a stored row cannot change its id; the nearest real event, the
// session disappearing between enumeration and the read, makes the read
// fail: unavailable.
func TestL16bSessionGoneBeforeRead(t *testing.T) {
	c := newCatalog(t)
	c.author("vanishing", childEvents(desc("gone")).events)
	l := c.lister()
	c.reads.before = func(_ context.Context, id string) { c.exec("DELETE FROM sessions WHERE id = ?", id) }
	rows, err := c.children(l, "parent")
	expectRows(t, rows, err, "vanishing diagnostic unavailable")
}

// L16 (later revision): the exact cut is not a witness field — only whether
// the session is seeded. A seeded child whose cut moves stays listed, judged
// against the cut it was enumerated with.
func TestL16LaterRevisionCutIsNotAWitnessField(t *testing.T) {
	c := newCatalog(t)
	c.author("fork-child", forkChildEvents("ancestor label", "own label"), seeded(4))
	l := c.lister()
	c.reads.before = func(_ context.Context, id string) { c.exec("UPDATE sessions SET seed_length = 5 WHERE id = ?", id) }
	rows, err := c.children(l, "parent")
	expectRows(t, rows, err, `fork-child continuable "own label" inactive`)
}

// L17: a cached `null` is not an identity: the log is read.
func TestL17CachedNullFallsThrough(t *testing.T) {
	c := newCatalog(t)
	h := c.author("valid", childEvents(desc("actually valid")).events)
	c.putCheckpoint(h, 0, projcache.Checkpoint{UnitKey: {Ver: UnitStateVersion, Seq: 0, Val: []byte(`{}`)}})
	rows, err := c.children(c.cachedLister(), "parent")
	expectRows(t, rows, err, `valid continuable "actually valid" inactive`)
	if n := c.reads.count("valid"); n != 1 {
		t.Errorf("read %d times, want 1", n)
	}
}

// L18: a log that fails DSH's validation (a user/message without surfaceOp)
// cannot be read: unavailable.
func TestL18InvalidLogUnavailable(t *testing.T) {
	c := newCatalog(t)
	events := childEvents(desc("broken surface")).events[:3]
	events[1].SurfaceOp = nil
	c.authorInvalid("broken-surface", events)
	rows, err := c.children(c.lister(), "parent")
	expectRows(t, rows, err, "broken-surface diagnostic unavailable")
}

// L19: a malformed descriptor is no identity: corrupt.
func TestL19MalformedDescriptorCorrupt(t *testing.T) {
	c := newCatalog(t)
	c.author("malformed", childEvents(`{"version":2,"mode":"continuable","provider":7}`).events)
	rows, err := c.children(c.lister(), "parent")
	expectRows(t, rows, err, "malformed diagnostic corrupt")
}

// L20: an unknown descriptor version is no identity either: corrupt, never
// `unsupported`.
func TestL20FutureVersionCorrupt(t *testing.T) {
	c := newCatalog(t)
	c.author("future", childEvents(`{"version":4,"mode":"continuable","provider":"spawn","label":"from the future"}`).events)
	rows, err := c.children(c.lister(), "parent")
	expectRows(t, rows, err, "future diagnostic corrupt")
}

// L21 (later revision): a fork child whose only descriptor is its
// ancestor's copy in the seed has no identity of its own: corrupt.
// (0.1.0-rc.8 listed it under the ancestor's label, "deviation #1".)
func TestL21LaterRevisionSeedOnlyForkChildIsCorrupt(t *testing.T) {
	c := newCatalog(t)
	c.author("seed-only", childEvents(desc("ancestor label")).events, seeded(4))
	rows, err := c.children(c.lister(), "parent")
	expectRows(t, rows, err, "seed-only diagnostic corrupt")
	res, err := c.lister().ResolveChildren(c.ctx, "parent")
	if err != nil || len(res) != 1 || !errors.Is(res[0].Cause, ErrAncestorOnly) {
		t.Errorf("resolution %+v, %v: want cause ErrAncestorOnly", res, err)
	}
	// The same child while a holder runs it, before its own descriptor:
	// omitted (the creation window), not listed under the ancestor.
	c.holdLive(authoredHeader("seed-only", seeded(4)), identityView("ancestor label", 2))
	rows, err = c.children(c.lister(), "parent")
	expectRows(t, rows, err)
}

// L22: the provider named in the descriptor need not exist.
func TestL22UnknownProviderListed(t *testing.T) {
	c := newCatalog(t)
	c.author("orphan", childEvents(`{"version":2,"mode":"continuable","provider":"not-mounted","label":"orphan provider"}`).events)
	rows, err := c.children(c.lister(), "parent")
	expectRows(t, rows, err, `orphan continuable "orphan provider" inactive`)
}

// L23: any registered unit failing on a cold log makes that row corrupt;
// a healthy sibling is intact.
func TestL23HostileUnitColdCorrupt(t *testing.T) {
	c := newCatalog(t)
	healthy := c.startChild("parent", "healthy")
	c.author("poisoned", childEvents(desc("poison me")).events, created(c.tick()))
	l := c.lister()
	if err := l.Units.Register(hostileUnit{}); err != nil {
		t.Fatal(err)
	}
	rows, err := c.children(l, "parent")
	expectRows(t, rows, err, healthy+` continuable "healthy" inactive`, "poisoned diagnostic corrupt")
}

// L24 (later revision): for a live child only the `subagent` unit is
// consulted, so another unit's failure in the holder does not matter (in
// 0.1.0-rc.8 the poisoned live child was corrupt). The `subagent` unit
// itself failing in the holder is still corrupt.
func TestL24LaterRevisionLiveChildConsultsOnlySubagentUnit(t *testing.T) {
	c := newCatalog(t)
	c.holdLive(liveHeader("live-poisoned", "parent", 1), identityView("poison me", 1))
	c.holdLive(liveHeader("live-healthy", "parent", 2), identityView("live healthy", 1))
	c.holdLiveSnapshot(liveHeader("live-unit-failed", "parent", 3), "", "subagent view failed")
	lister := c.lister()
	if err := lister.Units.Register(hostileUnit{}); err != nil {
		t.Fatal(err)
	}
	rows, err := c.children(lister, "parent")
	expectRows(t, rows, err,
		`live-poisoned continuable "poison me" running`,
		`live-healthy continuable "live healthy" running`,
		"live-unit-failed diagnostic corrupt")
}

// L25: enumeration failing without a cancellation fails the whole listing
// with the original error. Through a failing header source, and through a
// real store whose sessions table cannot be read (the CLI exits 3).
func TestL25EnumerationFailureFailsListing(t *testing.T) {
	c := newCatalog(t)
	c.author("child", childEvents(desc("never shown")).events)
	backend := errors.New("backend listing failed")
	l := c.lister()
	l.Headers = &countingHeaders{HeaderSource: c.st, err: backend}
	rows, err := c.children(l, "parent")
	if !errors.Is(err, backend) || rows != nil {
		t.Fatalf("rows %v err %v, want the backend error", rows, err)
	}
	c.exec("ALTER TABLE sessions RENAME TO sessions_unreadable")
	rows, err = c.children(c.lister(), "parent")
	if err == nil || rows != nil || dsherr.CodeOf(err) != dsherr.StoreUnavailable {
		t.Fatalf("rows %v err %v (code %q), want a STORE_UNAVAILABLE failure", rows, err, dsherr.CodeOf(err))
	}
}

// L26: a child whose stored log cannot be read is unavailable, its sibling
// intact; nothing is remembered, so once the storage reads again the next
// listing shows the child.
func TestL26ReadFailureIsolatedAndNotMemoised(t *testing.T) {
	c := newCatalog(t)
	c.author("00000000-0000-4000-8000-00000000f1a7", childEvents(desc("flaky storage")).events)
	sibling := c.startChild("parent", "healthy")
	c.exec(`UPDATE events SET data = '{"content":' WHERE session_id = '00000000-0000-4000-8000-00000000f1a7' AND seq = 1`)
	l := c.lister()
	rows, err := c.children(l, "parent")
	expectRows(t, rows, err, "00000000-0000-4000-8000-00000000f1a7 diagnostic unavailable", sibling+` continuable "healthy" inactive`)
	res, _ := l.ResolveChildren(c.ctx, "parent")
	if !errors.Is(res[0].Cause, backend.ErrCorrupt) {
		t.Errorf("cause %v, want the store's ErrCorrupt", res[0].Cause)
	}
	c.exec(`UPDATE events SET data = ? WHERE session_id = '00000000-0000-4000-8000-00000000f1a7' AND seq = 1`, fmt.Sprintf(userMessage, 1))
	rows, err = c.children(l, "parent")
	expectRows(t, rows, err, `00000000-0000-4000-8000-00000000f1a7 continuable "flaky storage" inactive`, sibling+` continuable "healthy" inactive`)
}

// L27: a compaction replace in the log changes nothing about the identity;
// twins list identically apart from their ids, in createdAt order.
func TestL27CompactedTwin(t *testing.T) {
	c := newCatalog(t)
	c.author("00000000-0000-4000-8000-00000000c0de", childEvents(desc("twin child")).events)
	twin := childEvents(desc("twin child")).events
	replace := eventAt(4, session.TypeUserMessage, fmt.Sprintf(userMessage, 4))
	replace.SurfaceOp = []byte(`{"op":"replace","start":1,"end":1}`)
	replace.SourceEventSeqs, replace.HasSourceEventSeqs = []int64{1}, true
	c.author("00000000-0000-4000-8000-00000000c1de", append(twin, replace), created(2))
	rows, err := c.children(c.lister(), "parent")
	expectRows(t, rows, err,
		`00000000-0000-4000-8000-00000000c0de continuable "twin child" inactive`,
		`00000000-0000-4000-8000-00000000c1de continuable "twin child" inactive`)
}

// L28: hasChildren comes from headers: the grandchild's log is never read.
func TestL28HasChildrenFromHeadersOnly(t *testing.T) {
	c := newCatalog(t)
	child := c.startChild("parent", "direct child")
	c.author("grandchild", childEvents(desc("grandchild")).events, under(child))
	l := c.lister()
	rows, err := c.children(l, "parent")
	expectRows(t, rows, err, child+` continuable "direct child" inactive hasChildren`)
	if c.reads.count(child) != 1 || c.reads.count("grandchild") != 0 {
		t.Errorf("reads: child %d, grandchild %d; want 1 and 0", c.reads.count(child), c.reads.count("grandchild"))
	}
}

// L29: each cold child is read exactly once, a live child never.
func TestL29EachColdChildReadOnce(t *testing.T) {
	c := newCatalog(t)
	c.author("authored", childEvents(desc("authored")).events)
	started := c.startChild("parent", "started")
	c.holdLive(liveHeader("live", "parent", c.tick()), identityView("live", 0))
	l := c.lister()
	rows, err := c.children(l, "parent")
	expectRows(t, rows, err, `authored continuable "authored" inactive`, started+` continuable "started" inactive`, `live continuable "live" running`)
	if c.reads.count("authored") != 1 || c.reads.count(started) != 1 || c.reads.count("live") != 0 {
		t.Errorf("reads %v, want 1, 1 and none for the live child", c.reads.counts)
	}
}

// L30: a started child's checkpoint serves its row with zero log reads.
func TestL30StartedChildServedFromCache(t *testing.T) {
	c := newCatalog(t)
	id := c.startChild("parent", "cached child")
	rows, err := c.children(c.cachedLister(), "parent")
	expectRows(t, rows, err, id+` continuable "cached child" inactive`)
	if n := c.reads.total(); n != 0 {
		t.Errorf("%d reads, want 0", n)
	}
}

// L31: no record, or a record without the subagent row, is a miss.
func TestL31CacheMissReads(t *testing.T) {
	c := newCatalog(t)
	h := c.author("foreign", childEvents(desc("foreign child")).events)
	l := c.cachedLister()
	rows, err := c.children(l, "parent")
	expectRows(t, rows, err, `foreign continuable "foreign child" inactive`)
	c.putCheckpoint(h, 0, projcache.Checkpoint{})
	rows, err = c.children(l, "parent")
	expectRows(t, rows, err, `foreign continuable "foreign child" inactive`)
	if n := c.reads.count("foreign"); n != 2 {
		t.Errorf("read %d times, want 2", n)
	}
}

// L32: without a cache every cold child is read.
func TestL32NoCacheReads(t *testing.T) {
	c := newCatalog(t)
	c.author("plain", childEvents(desc("plain")).events)
	rows, err := c.children(c.lister(), "parent")
	expectRows(t, rows, err, `plain continuable "plain" inactive`)
	if n := c.reads.count("plain"); n != 1 {
		t.Errorf("read %d times, want 1", n)
	}
}

// L33: a cache that fails is a silent miss: the row comes from the log.
// Poisoned record bytes, and a checkpoint table that cannot be read at all.
func TestL33CacheFailureIsSilentMiss(t *testing.T) {
	c := newCatalog(t)
	h := c.author("recovered", childEvents(desc("recovered child")).events)
	c.putCheckpoint(h, 3, identityRow("recovered child", 2))
	c.exec("UPDATE projection_checkpoints SET rows = 'poisoned cache row' WHERE session_id = 'recovered'")
	rows, err := c.children(c.cachedLister(), "parent")
	expectRows(t, rows, err, `recovered continuable "recovered child" inactive`)
	if n := c.reads.count("recovered"); n != 1 {
		t.Errorf("poisoned record: read %d times, want 1", n)
	}
	c.exec("ALTER TABLE projection_checkpoints RENAME TO checkpoints_unreadable")
	rows, err = c.children(c.cachedLister(), "parent")
	expectRows(t, rows, err, `recovered continuable "recovered child" inactive`)
	if n := c.reads.count("recovered"); n != 1 {
		t.Errorf("unreadable cache: read %d times, want 1", n)
	}
}

// Rung 2 serves only records of the child's lifecycle at the unit's state
// version; anything else is a miss and the log is read.
func TestRung2RecordsNotServed(t *testing.T) {
	cases := []struct {
		name   string
		record func(c *catalogue, h session.Header)
	}{
		{"wrong state version", func(c *catalogue, h session.Header) {
			c.putCheckpoint(h, 3, projcache.Checkpoint{UnitKey: {Ver: 1, Seq: 2, Val: []byte(`{"identity":` + identityView("stale shape", 2) + `}`)}})
		}},
		{"foreign witness", func(c *catalogue, h session.Header) {
			h.CreatedAt++
			c.putCheckpoint(h, 3, identityRow("other lifecycle", 2))
		}},
		{"foreign cut", func(c *catalogue, h session.Header) {
			h.SeedLength = new(int64)
			c.putCheckpoint(h, 3, identityRow("other lifecycle", 2))
		}},
		{"view that fails the strict schema", func(c *catalogue, h session.Header) {
			c.putCheckpoint(h, 3, projcache.Checkpoint{UnitKey: {Ver: UnitStateVersion, Seq: 2, Val: []byte(`{"identity":{"mode":"continuable","seq":2}}`)}})
		}},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			c := newCatalog(t)
			h := c.author("child", childEvents(desc("from the log")).events)
			tt.record(c, h)
			rows, err := c.children(c.cachedLister(), "parent")
			expectRows(t, rows, err, `child continuable "from the log" inactive`)
			if n := c.reads.count("child"); n != 1 {
				t.Errorf("read %d times, want 1", n)
			}
		})
	}
}

// L34: an ordinary grandchild does not make hasChildren true.
func TestL34OrdinaryGrandchildNotCounted(t *testing.T) {
	c := newCatalog(t)
	child := c.startChild("parent", "child")
	c.author("ordinary-grandchild", nil, under(child), ordinary())
	rows, err := c.children(c.lister(), "parent")
	expectRows(t, rows, err, child+` continuable "child" inactive`)
}

// L35: a diagnostic grandchild still counts for hasChildren.
func TestL35DiagnosticGrandchildCounts(t *testing.T) {
	c := newCatalog(t)
	child := c.startChild("parent", "child")
	c.author("bad-grandchild", childEvents(`{"version":2,"mode":"continuable","provider":7}`).events, under(child))
	l := c.lister()
	rows, err := c.children(l, child)
	expectRows(t, rows, err, "bad-grandchild diagnostic corrupt")
	rows, err = c.children(l, "parent")
	expectRows(t, rows, err, child+` continuable "child" inactive hasChildren`)
}

func expectCancelled(t *testing.T, rows []Row, err error) {
	t.Helper()
	if rows != nil || dsherr.CodeOf(err) != dsherr.Cancelled || err.Error() != "subagent listing was cancelled" {
		t.Fatalf("rows %v err %v, want CANCELLED and no rows", rows, err)
	}
}

// L36 (and D10): a listing cancelled before it starts enumerates nothing.
func TestL36PreCancelled(t *testing.T) {
	c := newCatalog(t)
	c.author("child", childEvents(desc("child")).events)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, list := range []func(*Lister) ([]Row, error){
		func(l *Lister) ([]Row, error) { return l.ListChildren(ctx, "parent") },
		func(l *Lister) ([]Row, error) { return l.ListDescendants(ctx, "parent") },
	} {
		l := c.lister()
		headers := &countingHeaders{HeaderSource: c.st}
		l.Headers = headers
		rows, err := list(l)
		expectCancelled(t, rows, err)
		if headers.calls != 0 {
			t.Errorf("enumerated %d times after cancellation", headers.calls)
		}
	}
}

// L37: cancelled while enumerating: CANCELLED, whatever the store returned.
func TestL37CancelledDuringEnumeration(t *testing.T) {
	c := newCatalog(t)
	c.author("child", childEvents(desc("child")).events)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l := c.lister()
	l.Headers = &countingHeaders{HeaderSource: c.st, before: func(context.Context) { cancel() }}
	rows, err := l.ListChildren(ctx, "parent")
	expectCancelled(t, rows, err)
}

// L38–L40: cancelled during a cold read: CANCELLED whether the read then
// fails because of it (L38), succeeds (L39) or fails for another reason
// (L40) — never a row, never `unavailable`.
func TestL38to40CancelledDuringColdRead(t *testing.T) {
	cases := []struct {
		name   string
		before bool
		after  func(err error) error
	}{
		{"L38 read fails after the abort", true, func(err error) error { return err }},
		{"L39 read succeeds but the listing was aborted", false, func(err error) error { return err }},
		{"L40 read fails with its own error after the abort", false, func(error) error { return errors.New("backend read failed") }},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			c := newCatalog(t)
			c.author("child", childEvents(desc("child")).events)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			l := c.lister()
			if tt.before {
				c.reads.before = func(context.Context, string) { cancel() }
			}
			c.reads.after = func(_ context.Context, _ string, err error) error {
				cancel()
				return tt.after(err)
			}
			rows, err := l.ListChildren(ctx, "parent")
			expectCancelled(t, rows, err)
		})
	}
}

// L41a: a parent without children, and a parent nobody knows, list as [].
func TestL41aNoChildren(t *testing.T) {
	c := newCatalog(t)
	for _, parent := range []string{"parent", "no-such-parent"} {
		rows, err := c.children(c.lister(), parent)
		if err != nil || rows == nil || len(rows) != 0 {
			t.Errorf("%s: rows %#v err %v, want an empty list", parent, rows, err)
		}
	}
}

// L41b: the failure of a listing without its registry carries a stable code.
func TestL41bRegistryMissingIsCoded(t *testing.T) {
	c := newCatalog(t)
	l := c.lister()
	l.Units = nil
	_, err := l.ListChildren(c.ctx, "parent")
	var coded *dsherr.Error
	if !errors.As(err, &coded) || coded.Code != dsherr.Internal {
		t.Fatalf("err = %#v, want a coded error", err)
	}
}

// D1: pre-order with parentId and depth.
func TestD01PreOrder(t *testing.T) {
	c := newCatalog(t)
	c.author("00000000-0000-4000-8000-00000000aaa1", childEvents(desc("branch a")).events, created(1))
	c.author("00000000-0000-4000-8000-00000000aaa2", childEvents(desc("under a")).events, created(2), under("00000000-0000-4000-8000-00000000aaa1"))
	c.author("00000000-0000-4000-8000-00000000aaa3", childEvents(desc("branch b")).events, created(3))
	rows, err := c.descendants(c.lister(), "parent")
	expectRows(t, rows, err,
		`00000000-0000-4000-8000-00000000aaa1 continuable "branch a" inactive hasChildren parent=parent depth=1`,
		`00000000-0000-4000-8000-00000000aaa2 continuable "under a" inactive parent=00000000-0000-4000-8000-00000000aaa1 depth=2`,
		`00000000-0000-4000-8000-00000000aaa3 continuable "branch b" inactive parent=parent depth=1`)
}

// D2: a root without descendants.
func TestD02NoDescendants(t *testing.T) {
	c := newCatalog(t)
	rows, err := c.descendants(c.lister(), "parent")
	if err != nil || rows == nil || len(rows) != 0 {
		t.Errorf("rows %#v err %v, want an empty list", rows, err)
	}
}

// D3: an omitted node (running, no identity yet) still has its subtree
// walked.
func TestD03OmittedNodeWalked(t *testing.T) {
	c := newCatalog(t)
	c.holdLive(liveHeader("live-creation-window", "parent", 1), "")
	c.author("below", childEvents(desc("below the creation window")).events, created(2), under("live-creation-window"))
	rows, err := c.descendants(c.lister(), "parent")
	expectRows(t, rows, err, `below continuable "below the creation window" inactive parent=live-creation-window depth=2`)
}

// D4: a cycle in the parent links stops at the visited set; the root is
// never listed.
func TestD04Cycle(t *testing.T) {
	c := newCatalog(t)
	root := session.Header{ID: "cycle-root", CreatedAt: 2, Cwd: strp("/work"), ParentSession: strp("cycle-node")}
	if err := c.st.CreateSession(c.ctx, root, nil); err != nil {
		t.Fatal(err)
	}
	c.author("cycle-node", childEvents(desc("cycle child")).events, under("cycle-root"))
	rows, err := c.descendants(c.lister(), "cycle-root")
	expectRows(t, rows, err, `cycle-node continuable "cycle child" inactive parent=cycle-root depth=1`)
}

// D5: a chain of 9,999 ordinary sessions ending in a live subagent leaf is
// walked without recursion.
func TestD05DeepChainToLiveLeaf(t *testing.T) {
	c := newCatalog(t)
	parent := "parent"
	err := c.st.Update(c.ctx, func(tx backend.Store) error {
		for n := 1; n <= 9999; n++ {
			id := fmt.Sprintf("deep-ordinary-%d", n)
			if err := tx.CreateSession(c.ctx, authoredHeader(id, under(parent), ordinary(), created(int64(n))), nil); err != nil {
				return err
			}
			parent = id
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	c.holdLive(liveHeader("deep-subagent-leaf", parent, 10000), identityView("deep leaf", 1))
	rows, err := c.descendants(c.lister(), "parent")
	expectRows(t, rows, err, `deep-subagent-leaf continuable "deep leaf" running parent=deep-ordinary-9999 depth=10000`)
}

// D5 on a persisted corpus: a 10,000-deep chain of stored subagent sessions
// (each a corrupt node) lists every node at its depth.
func TestD05DeepStoredChain(t *testing.T) {
	c := newCatalog(t)
	const depth = 10000
	err := c.st.Update(c.ctx, func(tx backend.Store) error {
		parent := "parent"
		for n := 1; n <= depth; n++ {
			id := fmt.Sprintf("node-%05d", n)
			if err := tx.CreateSession(c.ctx, authoredHeader(id, under(parent)), nil); err != nil {
				return err
			}
			parent = id
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	rows, err := c.descendants(c.lister(), "parent")
	if err != nil || len(rows) != depth {
		t.Fatalf("%d rows, err %v; want %d", len(rows), err, depth)
	}
	last := rows[depth-1]
	if show(last) != fmt.Sprintf("node-%05d diagnostic corrupt parent=node-%05d depth=%d", depth, depth-1, depth) {
		t.Errorf("deepest row %s", show(last))
	}
}

// D6: ordinary forks and one-shot children are walked through; the fork is
// not a row, the one-shot is.
func TestD06WalkThroughForkAndOneShot(t *testing.T) {
	c := newCatalog(t)
	fork := session.Header{ID: "plain-fork", CreatedAt: 1, Cwd: strp("/work"), ParentSession: strp("parent"), SeedLength: new(int64)}
	if err := c.st.CreateSession(c.ctx, fork, []session.Event{eventAt(0, session.TypeEndSeed, `{}`)}); err != nil {
		t.Fatal(err)
	}
	c.author("under-fork", childEvents(desc("under the fork")).events, created(2), under("plain-fork"))
	label := "one-shot intermediate"
	once := c.startOneShot("parent", &label)
	c.author("under-one-shot", childEvents(desc("under the one-shot")).events, created(9_999_999_999_999), under(once))
	rows, err := c.descendants(c.lister(), "parent")
	expectRows(t, rows, err,
		`under-fork continuable "under the fork" inactive parent=plain-fork depth=2`,
		once+` one-shot "one-shot intermediate" inactive hasChildren parent=parent depth=1`,
		`under-one-shot continuable "under the one-shot" inactive parent=`+once+` depth=2`)
}

// D7 and D8: a diagnostic node's subtree is still walked.
func TestD07D08DiagnosticNodeWalked(t *testing.T) {
	for _, tt := range []struct{ name, log string }{
		{"D7 no descriptor", ""},
		{"D8 unsupported version", `{"version":999,"mode":"continuable","provider":"spawn","label":"x"}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := newCatalog(t)
			events := []session.Event{
				eventAt(0, session.TypeTurnStart, `{"turn":1}`),
				eventAt(1, session.TypeTurnEnd, `{"turn":1,"reason":{"kind":"completed"}}`),
			}
			if tt.log != "" {
				events = childEvents(tt.log).events
			}
			c.author("bare", events)
			c.author("below", childEvents(desc("below the bare node")).events, created(2), under("bare"))
			rows, err := c.descendants(c.lister(), "parent")
			expectRows(t, rows, err, "bare diagnostic corrupt parent=parent depth=1", `below continuable "below the bare node" inactive parent=bare depth=2`)
		})
	}
}

// D9: the lifecycle witness is checked on every cold node.
func TestD09WitnessInDescendants(t *testing.T) {
	c := newCatalog(t)
	c.author("moved", childEvents(desc("moved")).events)
	l := c.lister()
	c.reads.before = func(_ context.Context, id string) {
		c.exec("UPDATE sessions SET parent_session = 'someone-else' WHERE id = ?", id)
	}
	rows, err := c.descendants(l, "parent")
	expectRows(t, rows, err, "moved diagnostic corrupt parent=parent depth=1")
}

// ICU root collation orders ids with equal createdAt as JavaScript's
// localeCompare does: punctuation, then digits, then letters, case only as a
// tie-break (lowercase first).
func TestIDOrderIsLocaleCompare(t *testing.T) {
	c := newCatalog(t)
	ids := []string{"x", "B", "b", "ab", "a1", "a-b", "a_b", "A", "a", "1a", "-x", "_x",
		"f47ac10b-58cc-4372-a567-0e02b2c3d479", "123e4567-e89b-42d3-a456-426614174000"}
	for _, id := range ids {
		c.author(id, childEvents(desc(id)).events, created(7))
	}
	rows, err := c.children(c.lister(), "parent")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rows {
		got = append(got, r.ID)
	}
	want := "_x -x 123e4567-e89b-42d3-a456-426614174000 1a a A a_b a-b a1 ab b B f47ac10b-58cc-4372-a567-0e02b2c3d479 x"
	if strings.Join(got, " ") != want {
		t.Errorf("order\n got %s\nwant %s", strings.Join(got, " "), want)
	}
}

// Cold reads run concurrently up to the bound, and rows keep candidate order
// however the reads finish: here the first candidate's read finishes last.
func TestColdReadsBoundedAndOrdered(t *testing.T) {
	c := newCatalog(t)
	var want []string
	for i := range 9 {
		id := fmt.Sprintf("child-%d", i)
		c.author(id, childEvents(desc(id)).events, created(int64(i)))
		want = append(want, id+` continuable "`+id+`" inactive`)
	}
	l := c.lister()
	l.ColdConcurrency = 3
	var mu sync.Mutex
	inFlight, peak, done := 0, 0, 0
	othersDone := make(chan struct{})
	c.reads.before = func(_ context.Context, id string) {
		mu.Lock()
		inFlight++
		peak = max(peak, inFlight)
		mu.Unlock()
		if id == "child-0" {
			<-othersDone
		}
	}
	c.reads.after = func(_ context.Context, id string, err error) error {
		mu.Lock()
		inFlight--
		done++
		if done == 8 && id != "child-0" {
			close(othersDone)
		}
		mu.Unlock()
		return err
	}
	rows, err := c.children(l, "parent")
	expectRows(t, rows, err, want...)
	if peak > 3 {
		t.Errorf("%d reads in flight at once, bound is 3", peak)
	}
}

// A torn tail after the last turn/end is cut off by the read, not a failure.
func TestTornTailIsNotAFailure(t *testing.T) {
	c := newCatalog(t)
	events := childEvents(desc("torn but fine")).events
	if _, err := c.st.ImportSession(c.ctx, authoredHeader("torn"), events, &backend.TornTail{FromSeq: 4, Reason: "unexpected end of JSON input", Raw: []byte(`{"type":"turn/st`)}); err != nil {
		t.Fatal(err)
	}
	rows, err := c.children(c.lister(), "parent")
	expectRows(t, rows, err, `torn continuable "torn but fine" inactive`)
}

// A crashed holder's lease expires: the child is no longer running and is
// read from its log like any cold child.
func TestExpiredLeaseIsInactive(t *testing.T) {
	c := newCatalog(t)
	h := c.author("crashed", childEvents(desc("left behind")).events)
	crashed := backend.NewLeaseHolder(time.Minute)
	earlier := c.st.WithClock(func() time.Time { return time.Now().Add(-time.Hour) })
	if _, err := earlier.AcquireLease(c.ctx, h.ID, crashed); err != nil {
		t.Fatal(err)
	}
	rows, err := c.children(c.lister(), "parent")
	expectRows(t, rows, err, `crashed continuable "left behind" inactive`)
	if n := c.reads.count("crashed"); n != 1 {
		t.Errorf("read %d times, want 1", n)
	}
}

// A live record replaces the persisted one wholesale (DSH's accepted
// deviation #3): a live header naming another parent moves the child, and
// the stored header is not consulted.
func TestLiveHeaderWinsWholesale(t *testing.T) {
	c := newCatalog(t)
	c.root("other-parent")
	c.author("moving", childEvents(desc("stored")).events)
	l := c.lister()
	l.Live = liveHolders{"moving": {Holder: "elsewhere", Header: liveHeader("moving", "other-parent", 1), Subagent: []byte(identityView("live label", 2))}}
	rows, err := c.children(l, "parent")
	expectRows(t, rows, err)
	rows, err = c.children(l, "other-parent")
	expectRows(t, rows, err, `moving continuable "live label" running`)
}

// hasChildren answered in one lookup for a whole listing must still honour
// live records: a live record that moves a child's only subagent child
// elsewhere leaves the child without children, and a live-only subagent
// child gives another one children.
func TestHasChildrenWithLiveRecords(t *testing.T) {
	c := newCatalog(t)
	moved := c.startChild("parent", "loses its child")
	gains := c.startChild("parent", "gains a child")
	c.author("grandchild", childEvents(desc("grandchild")).events, under(moved))
	l := c.lister()
	l.Live = liveHolders{
		"grandchild": {Holder: "h", Header: liveHeader("grandchild", "parent", c.tick()), Subagent: []byte(identityView("moved", 2))},
		"newborn":    {Holder: "h", Header: liveHeader("newborn", gains, c.tick())},
	}
	rows, err := c.children(l, "parent")
	expectRows(t, rows, err,
		moved+` continuable "loses its child" inactive`,
		gains+` continuable "gains a child" inactive hasChildren`,
		`grandchild continuable "moved" running`)
}
