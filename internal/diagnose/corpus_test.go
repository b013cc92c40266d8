package diagnose

import (
	"fmt"
	"time"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/session"
)

// expectation is what the audit must say about one session of the damage
// corpus: its findings ("CODE@seq" in order) and its catalog row kind.
type expectation struct {
	findings string
	row      RowKind
}

// damageCorpus builds a store where every finding code occurs, each in a
// session of its own where possible, all written through the store's write
// paths (or its faithful import) and damaged with SQL where only damage can
// produce the case. It returns what diagnose must report per session id.
func damageCorpus(s *store) map[string]expectation {
	s.t.Helper()
	want := map[string]expectation{}
	s.root("parent")

	h := s.childOf("parent", "c01-ok")
	s.create(h, withDescriptor(continuable("fine")))
	s.checkpoint(h, withDescriptor(continuable("fine")))
	want[h.ID] = expectation{"", RowChild}

	s.create(s.childOf("parent", "c02-missing"), turn(0, 1))
	want["c02-missing"] = expectation{"DESCRIPTOR_MISSING", RowCorrupt}

	s.create(s.childOf("parent", "c03-malformed"), withDescriptor(`{"version":2,"mode":"continuable","provider":7,"label":"x"}`))
	want["c03-malformed"] = expectation{"DESCRIPTOR_MALFORMED@0", RowCorrupt}

	s.create(s.childOf("parent", "c04-unsupported"), withDescriptor(`{"version":4,"mode":"continuable","provider":"spawn","label":"future"}`))
	want["c04-unsupported"] = expectation{"DESCRIPTOR_UNSUPPORTED_VERSION@0", RowCorrupt}

	// Two valid descriptors: list shows the last, resume uses the first;
	// both are continuable, so resume accepts the child.
	s.create(s.childOf("parent", "c05-multiple"),
		append(withDescriptor(continuable("first")), append([]session.Event{ev(7, session.TypeDescriptor, continuable("second"))}, turn(8, 2)...)...))
	want["c05-multiple"] = expectation{"DESCRIPTOR_MULTIPLE@7", RowChild}

	// A one-shot descriptor first: list shows the later continuable one,
	// resume refuses.
	s.create(s.childOf("parent", "c06-oneshot-first"),
		append(withDescriptor(oneShot), append([]session.Event{ev(7, session.TypeDescriptor, continuable("later"))}, turn(8, 2)...)...))
	want["c06-oneshot-first"] = expectation{"NOT_RESUMABLE DESCRIPTOR_MULTIPLE@7", RowChild}

	// A fork child whose seed (7 events copied from the parent) holds the
	// ancestor's descriptor, and which died before writing its own.
	h = s.childOf("parent", "c07-ancestor-only")
	h.SeedLength = ptr(int64(7))
	s.create(h, append(withDescriptor(continuable("ancestor")), ev(7, session.TypeEndSeed, `{}`)))
	want[h.ID] = expectation{"DESCRIPTOR_ANCESTOR_ONLY@0", RowCorrupt}

	// A user/message without surfaceOp fails DSH's validation.
	events := withDescriptor(continuable("broken surface"))
	events[3].SurfaceOp = nil
	s.importLog(s.childOf("parent", "c08-unreadable"), events)
	want["c08-unreadable"] = expectation{"LOG_UNREADABLE@3", RowUnavailable}

	// A crash while writing the second turn: its last row is torn, and
	// the turn is left open.
	s.create(s.childOf("parent", "c09-torn"), append(withDescriptor(continuable("torn")), openTurn(7, 2)...))
	s.exec(`UPDATE events SET data = '{"turn":2,"st' WHERE session_id = 'c09-torn' AND seq = 11`)
	want["c09-torn"] = expectation{"TURN_INTERRUPTED@7 LOG_TORN_TAIL@11", RowChild}

	// A row deleted before the last turn/end: a gap, and a committed row
	// that breaks contiguity.
	s.create(s.childOf("parent", "c10-gap"), append(withDescriptor(continuable("gap")), turn(7, 2)...))
	s.exec(`DELETE FROM events WHERE session_id = 'c10-gap' AND seq = 3`)
	want["c10-gap"] = expectation{"SEQ_GAP@3 LOG_UNREADABLE@4", RowUnavailable}

	h = s.childOf("parent", "c11-depth")
	h.DelegationDepth = ptr(int64(3))
	s.create(h, withDescriptor(continuable("too deep")))
	want[h.ID] = expectation{"DEPTH_INCONSISTENT", RowChild}

	// A holder crashed mid-turn: its lease expired and the turn is open.
	s.create(s.childOf("parent", "c12-stale-lease"), append(withDescriptor(continuable("crashed")), openTurn(7, 2)...))
	s.lease("c12-stale-lease", "holder-crashed", -time.Minute, nil)
	want["c12-stale-lease"] = expectation{"LEASE_STALE TURN_INTERRUPTED@7", RowChild}

	// A checkpoint folded from another log: list serves its label.
	h = s.childOf("parent", "c13-cache-stale")
	s.create(h, withDescriptor(continuable("truth")))
	s.checkpoint(h, withDescriptor(continuable("lie")))
	want[h.ID] = expectation{"CACHE_STALE", RowChild}

	// A checkpoint of an earlier lifecycle of the same id.
	h = s.childOf("parent", "c14-cache-foreign")
	s.create(h, withDescriptor(continuable("reborn")))
	earlier := h
	earlier.CreatedAt -= 500
	s.checkpoint(earlier, withDescriptor(continuable("reborn")))
	want[h.ID] = expectation{"CACHE_FOREIGN", RowChild}

	h = s.childOf("parent", "c15-cache-poisoned")
	s.create(h, withDescriptor(continuable("poisoned")))
	s.checkpoint(h, withDescriptor(continuable("poisoned")))
	s.exec(`UPDATE projection_checkpoints SET rows = '{"subagent":' WHERE session_id = 'c15-cache-poisoned'`)
	want[h.ID] = expectation{"CACHE_POISONED", RowChild}

	// A child running its first turn, before its descriptor: omitted
	// from the catalog, and nothing is wrong with it.
	s.create(s.childOf("parent", "c16-running"), []session.Event{ev(0, session.TypeTurnStart, `{"turn":1}`)})
	s.lease("c16-running", "holder-live", time.Hour, published("null"))
	want["c16-running"] = expectation{"", RowOmitted}

	// A live holder whose projection unit failed.
	s.create(s.childOf("parent", "c17-unit-failed"), withDescriptor(continuable("poison me")))
	s.lease("c17-unit-failed", "holder-live", time.Hour, &backend.LiveSnapshot{UnitFailure: "view threw: poison me"})
	want["c17-unit-failed"] = expectation{"UNIT_FAILED", RowCorrupt}

	// The catalog serves a checkpoint of a log that has since been damaged:
	// list shows a continuable child resume cannot read.
	h = s.childOf("parent", "c18-unreadable-cached")
	s.create(h, withDescriptor(continuable("cached")))
	s.checkpoint(h, withDescriptor(continuable("cached")))
	s.exec(`UPDATE events SET surface_op = NULL WHERE session_id = 'c18-unreadable-cached' AND seq = 3`)
	want[h.ID] = expectation{"NOT_RESUMABLE LOG_UNREADABLE@3", RowChild}

	h = s.childOf("parent", "c19-mid")
	s.create(h, withDescriptor(continuable("middle")))
	want[h.ID] = expectation{"", RowChild}
	g := s.childOf("c19-mid", "g1-grandchild")
	g.DelegationDepth = ptr(int64(2))
	s.create(g, withDescriptor(continuable("leaf")))
	want[g.ID] = expectation{"", RowChild}

	s.create(s.childOf("ghost", "o1-orphan"), withDescriptor(continuable("orphan")))
	want["o1-orphan"] = expectation{"ORPHAN_PARENT", RowChild}

	fork := session.Header{ID: "f1-fork", CreatedAt: s.tick(), Cwd: ptr("/work"), ParentSession: ptr("parent"), SeedLength: ptr(int64(6))}
	s.create(fork, turn(0, 1))
	want[fork.ID] = expectation{"", RowNotListed}
	return want
}

// storeOrder is the order the default audit visits damageCorpus: parents
// in byte order ("c19-mid" < "ghost" < "parent"), children by createdAt.
var storeOrder = []string{
	"g1-grandchild", "o1-orphan",
	"c01-ok", "c02-missing", "c03-malformed", "c04-unsupported", "c05-multiple", "c06-oneshot-first",
	"c07-ancestor-only", "c08-unreadable", "c09-torn", "c10-gap", "c11-depth", "c12-stale-lease",
	"c13-cache-stale", "c14-cache-foreign", "c15-cache-poisoned", "c16-running", "c17-unit-failed",
	"c18-unreadable-cached", "c19-mid",
}

func describe(e expectation) string { return fmt.Sprintf("%s [%s]", e.findings, e.row) }
