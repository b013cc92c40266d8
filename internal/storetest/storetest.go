// Package storetest is the conformance suite of the backend contract
// (package backend). Run checks one backend against what the contract's doc
// comments promise: header round trips keep absent fields absent, a stale
// writer is refused, a torn tail is cut by reads and repaired once by Load
// (a stored row at the cut included), children enumerate in DSH's order
// (ties in id order from the store itself), hasChildren answers from
// headers (in the one-query listings too, whose rows equal the listing's
// without them),
// every fast path (backend.Capabilities: SubtreeOf, ChildListing,
// SubtreeListing, ChildListingCold, InspectVerifiedTypes, InspectColdBatch,
// AuditEach, DescriptorsAt, CatalogSessions) gives what its slow path
// gives on a corpus of forks, nested children, createdAt ties, damaged,
// torn and gapped logs and checkpoints matching, stale and absent
// (fastpaths.go), the backend has every required capability,
// exactly one of many goroutines and processes gets a lease, leases expire
// by the backend's clock, checkpoint records are kept whole and judged by
// their witness, read-only opens write nothing, a cancelled context
// stops every call, and the change signal (backend.ChangeNotifier) wakes a
// read-only watcher for a commit in another connection or process, and
// only then, and the search index (backend.SearchReader) answers what the
// stored logs matched from scratch answer after every kind of write
// (search.go).
//
// Each backend runs it from its own tests (sqlitepersist against a file in
// a temporary directory; a server backend against a database it creates
// and drops), so the suite is what a new backend must pass.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/corpus"
	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/projcache"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/subagent"
)

// Target is how the suite makes and opens backends of one kind.
type Target struct {
	// New creates a fresh, empty store and returns the address Open takes
	// and a cleanup that removes everything New created. It must work in
	// a child process too (see the process lease race), so it takes no
	// testing.TB.
	New func(ctx context.Context) (addr string, cleanup func(), err error)
	// Open opens the store at addr, read-only when readOnly is set.
	Open func(ctx context.Context, addr string, readOnly bool) (backend.Backend, error)
	// Fingerprint, when set, describes everything stored at addr and
	// beside it (for a file: the directory's names, sizes and mtimes);
	// a read-only open must leave it unchanged.
	Fingerprint func(addr string) (string, error)
}

// childEnv carries the address a re-executed test binary races for a lease.
const childEnv = "DSH_STORETEST_LEASE_ADDR"

// Run runs the suite as subtests of t. Call it from a top-level test
// function: the process race re-executes the test binary with -test.run
// naming that function, and Run then acts as one racer.
func Run(t *testing.T, target Target) {
	if addr := os.Getenv(childEnv); addr != "" {
		raceChild(t, target, addr)
		return
	}
	if addr := os.Getenv(writerEnv); addr != "" {
		writeChild(t, target, addr)
		return
	}
	cases := []struct {
		name string
		fn   func(t *testing.T, e *env)
	}{
		{"HeaderRoundTrip", testHeaderRoundTrip},
		{"AppendAndStaleWriter", testAppendStaleWriter},
		{"TornTailCutThenRepairedOnce", testTornTail},
		{"DamagedLogKeptAndRefused", testDamagedLog},
		{"UnstorableTextRefusedAlike", testUnstorableText},
		{"ImportRefusalsRecorded", testRefusals},
		{"ColdVerdicts", testColdVerdicts},
		{"TextReplacedRecorded", testTextReplaced},
		{"ChildrenOrder", testChildrenOrder},
		{"HasChildren", testHasChildren},
		{"ListingsHasChildren", testListingsHasChildren},
		{"ChildListingTieOrder", testChildListingTieOrder},
		{"TornCutAtStoredRow", testTornCutAtRow},
		{"StreamEverySession", testStreamSessions},
		{"LeaseGoroutineRace", testLeaseGoroutines},
		{"LeaseProcessRace", testLeaseProcesses},
		{"LeaseExpiresByBackendClock", testLeaseExpiry},
		{"Checkpoints", testCheckpoints},
		{"DescriptorsAt", testDescriptorsAt},
		{"ReadOnlyWritesNothing", testReadOnly},
		{"Cancellation", testCancellation},
		{"ChangeSignal", testChangeSignal},
		{"Capabilities", testCapabilities},
		{"FastPathSubtreeOf", testSubtreeOfEqualsWalk},
		{"FastPathChildListing", testChildListingEqualsSlowPath},
		{"FastPathSubtreeListing", testSubtreeListingEqualsSlowPath},
		{"FastPathChildListingCold", testColdChildListingEqualsSlowPath},
		{"FastPathInspectVerifiedTypes", testVerifiedBatchEqualsInspectTypes},
		{"FastPathInspectColdBatch", testColdBatchEqualsSlowPath},
		{"FastPathAuditEach", testAuditEachEqualsAudit},
		{"FastPathDescriptorsAt", testDescriptorsAtEqualsLog},
		{"FastPathCatalogSessions", testCatalogSessionsCoverLogs},
		{"FastPathUsageOf", testUsage},
		{"SearchIndexExact", testSearch},
		{"FastPathResolvedRows", testResolvedRowsEqualLadder},
		{"FastPathHeadersOf", testHeadersOfEqualsHeader},
		{"FastPathUpdatePipelined", testUpdatePipelined},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.fn(t, newEnv(t, target)) })
	}
}

// env is one subtest's fresh store.
type env struct {
	t      *testing.T
	ctx    context.Context
	target Target
	addr   string
	b      backend.Backend
}

func newEnv(t *testing.T, target Target) *env {
	ctx := context.Background()
	addr, cleanup, err := target.New(ctx)
	if err != nil {
		t.Fatalf("new store: %v", err)
	}
	t.Cleanup(cleanup)
	e := &env{t: t, ctx: ctx, target: target, addr: addr}
	e.b = e.open(false)
	return e
}

func (e *env) open(readOnly bool) backend.Backend {
	e.t.Helper()
	b, err := e.target.Open(e.ctx, e.addr, readOnly)
	if err != nil {
		e.t.Fatalf("open %s (read-only %v): %v", e.addr, readOnly, err)
	}
	e.t.Cleanup(func() { b.Close() })
	return b
}

func ptr[T any](v T) *T { return &v }

func root(id string, createdAt int64) session.Header {
	return session.Header{ID: id, CreatedAt: createdAt, Cwd: ptr("/work/project")}
}

func child(id, parent string, createdAt int64) session.Header {
	h := root(id, createdAt)
	h.ParentSession, h.Origin, h.DelegationDepth = ptr(parent), ptr(session.OriginSubagent), ptr(int64(1))
	return h
}

// turn returns one completed turn (user message, one step, answer) whose
// first event has seq from and whose turn number is n.
func turn(from int64, n int) []session.Event {
	var out []session.Event
	add := func(typ, data string, surface bool) {
		ev := session.Event{Type: typ, Seq: from + int64(len(out)), Time: 1_700_000_000_000 + from + int64(len(out)), Data: json.RawMessage(data)}
		if surface {
			ev.SurfaceOp = json.RawMessage(`"append"`)
		}
		out = append(out, ev)
	}
	add(session.TypeTurnStart, fmt.Sprintf(`{"turn":%d}`, n), false)
	add(session.TypeUserMessage, fmt.Sprintf(`{"content":[{"type":"text","text":"q%d"}],"source":{"kind":"user"},"role":"user","id":"u-%d"}`, n, from), true)
	add(session.TypeStepStart, fmt.Sprintf(`{"turn":%d,"step":1}`, n), false)
	add(session.TypeAssistantMsg, fmt.Sprintf(`{"turn":%d,"step":1,"message":{"id":"a-%d","role":"assistant","content":[{"type":"text","text":"a%d"}],"source":{"kind":"model","provider":"echo","model":"echo-1"}}}`, n, from, n), true)
	add(session.TypeStepEnd, fmt.Sprintf(`{"turn":%d,"step":1}`, n), false)
	add(session.TypeTurnEnd, fmt.Sprintf(`{"turn":%d,"reason":{"kind":"completed"}}`, n), false)
	return out
}

func (e *env) create(h session.Header, events []session.Event) {
	e.t.Helper()
	if err := e.b.CreateSession(e.ctx, h, events); err != nil {
		e.t.Fatalf("create %s: %v", h.ID, err)
	}
}

func (e *env) inspect(b backend.LogReader, id string) *backend.Inspection {
	e.t.Helper()
	in, err := b.Inspect(e.ctx, id)
	if err != nil {
		e.t.Fatalf("inspect %s: %v", id, err)
	}
	return in
}

// dump renders what the contract lets a reader see of the store: every
// header with its log as Audit reads it, the leases and the checkpoint
// records.
func (e *env) dump(b backend.Backend) string {
	e.t.Helper()
	var sb strings.Builder
	audits := map[string]*backend.AuditRead{}
	err := b.ListHeaders(e.ctx, func(h session.Header) error {
		a, err := b.Audit(e.ctx, h.ID)
		if err != nil {
			return err
		}
		audits[h.ID] = a
		fmt.Fprintf(&sb, "%s %+v events=%d torn=%+v closers=%d gaps=%v err=%v\n", h.ID, headerString(h), len(a.Events), a.Torn, len(a.Closers), a.Gaps, a.ReadErr)
		return nil
	})
	if err != nil {
		e.t.Fatalf("dump sessions: %v", err)
	}
	e.sameBatchAudits(b, audits)
	leases, err := b.Leases(e.ctx)
	if err != nil {
		e.t.Fatalf("dump leases: %v", err)
	}
	fmt.Fprintf(&sb, "leases %+v\n", leases)
	err = b.EachCheckpoint(e.ctx, func(r backend.CheckpointRecord) error {
		fmt.Fprintf(&sb, "checkpoint %s %d %s\n", headerString(r.Witness), r.AsOfSeq, r.Rows)
		return nil
	})
	if err != nil {
		e.t.Fatalf("dump checkpoints: %v", err)
	}
	return sb.String()
}

// sameBatchAudits checks that a backend auditing in batches reads every
// log of want (Audit's results, by id) exactly as Audit does, in one batch.
func (e *env) sameBatchAudits(b backend.Backend, want map[string]*backend.AuditRead) {
	e.t.Helper()
	batch, ok := b.(backend.BatchAuditor)
	if !ok || len(want) == 0 {
		return
	}
	ids := make([]string, 0, len(want))
	for id := range want {
		ids = append(ids, id)
	}
	got := map[string]*backend.AuditRead{}
	err := batch.AuditEach(e.ctx, ids, func(a *backend.AuditRead) error {
		if got[a.Header.ID] != nil {
			return fmt.Errorf("%s audited twice", a.Header.ID)
		}
		got[a.Header.ID] = a
		return nil
	})
	if err != nil {
		e.t.Fatalf("AuditEach: %v", err)
	}
	for id, w := range want {
		g := got[id]
		if g == nil {
			e.t.Fatalf("AuditEach did not audit %s", id)
		}
		if fmt.Sprint(g.ReadErr) != fmt.Sprint(w.ReadErr) {
			e.t.Fatalf("AuditEach %s: ReadErr %v, Audit's %v", id, g.ReadErr, w.ReadErr)
		}
		gc, wc := *g, *w
		gc.ReadErr, wc.ReadErr = nil, nil
		if !reflect.DeepEqual(gc, wc) {
			e.t.Fatalf("AuditEach %s = %+v\nAudit gives %+v", id, gc, wc)
		}
	}
	if _, err := b.Header(e.ctx, "no-such-session"); errors.Is(err, backend.ErrNotFound) {
		err := batch.AuditEach(e.ctx, append(ids, "no-such-session"), func(*backend.AuditRead) error { return nil })
		if !errors.Is(err, backend.ErrNotFound) {
			e.t.Fatalf("AuditEach of an unknown id: %v, want ErrNotFound", err)
		}
	}
}

// headerString shows every field, telling an absent field from a zero one.
func headerString(h session.Header) string {
	s := func(p *string) string {
		if p == nil {
			return "<absent>"
		}
		return fmt.Sprintf("%q", *p)
	}
	i := func(p *int64) string {
		if p == nil {
			return "<absent>"
		}
		return fmt.Sprint(*p)
	}
	return fmt.Sprintf("{v%d %q %d cwd=%s parent=%s seed=%s origin=%s depth=%s preset=%s}", h.Version, h.ID, h.CreatedAt,
		s(h.Cwd), s(h.ParentSession), i(h.SeedLength), s(h.Origin), i(h.DelegationDepth), s(h.AgentPreset))
}

func testHeaderRoundTrip(t *testing.T, e *env) {
	absent := session.Header{ID: "absent", CreatedAt: 5}
	zero := session.Header{ID: "zero", CreatedAt: 0, Cwd: ptr(""), ParentSession: ptr("absent"), SeedLength: ptr(int64(0)),
		Origin: ptr(session.OriginSubagent), DelegationDepth: ptr(int64(0)), AgentPreset: ptr("")}
	full := session.Header{ID: "full ✓ \u0301 id", CreatedAt: 1_789_000_000_123, Cwd: ptr("/home/dev/p"), ParentSession: ptr("absent"),
		SeedLength: ptr(int64(6)), Origin: ptr("fork"), DelegationDepth: ptr(int64(3)), AgentPreset: ptr("reviewer")}
	for _, h := range []session.Header{absent, zero, full} {
		if _, err := e.b.ImportSession(e.ctx, h, nil, nil); err != nil {
			t.Fatalf("import %s: %v", h.ID, err)
		}
	}
	reopened := e.open(true)
	for _, h := range []session.Header{absent, zero, full} {
		for name, b := range map[string]backend.Backend{"same open": e.b, "read-only reopen": reopened} {
			got, err := b.Header(e.ctx, h.ID)
			if err != nil {
				t.Fatalf("%s: Header(%q): %v", name, h.ID, err)
			}
			if !reflect.DeepEqual(got, h) {
				t.Errorf("%s: Header(%q) =\n  %s\nwant\n  %s", name, h.ID, headerString(got), headerString(h))
			}
		}
	}
	var kids []string
	err := e.b.ChildrenOf(e.ctx, "absent", func(h session.Header) error {
		want := map[string]session.Header{zero.ID: zero, full.ID: full}[h.ID]
		if !reflect.DeepEqual(h, want) {
			t.Errorf("ChildrenOf header = %s, want %s", headerString(h), headerString(want))
		}
		kids = append(kids, h.ID)
		return nil
	})
	if err != nil || len(kids) != 2 {
		t.Errorf("ChildrenOf(absent) = %q, %v; want the two children", kids, err)
	}
	if _, err := e.b.Header(e.ctx, "nope"); !errors.Is(err, backend.ErrNotFound) {
		t.Errorf("Header(unknown) = %v, want ErrNotFound", err)
	}
}

func testAppendStaleWriter(t *testing.T, e *env) {
	h := root("s", 1)
	first := turn(0, 1)
	e.create(h, first)
	if err := e.b.CreateSession(e.ctx, h, nil); !errors.Is(err, backend.ErrDuplicate) {
		t.Fatalf("second CreateSession = %v, want ErrDuplicate", err)
	}
	second := turn(int64(len(first)), 2)
	if err := e.b.Append(e.ctx, "s", int64(len(first)), second); err != nil {
		t.Fatalf("Append: %v", err)
	}
	before := e.dump(e.b)
	// A writer that read the log before the second turn is stale.
	err := e.b.Append(e.ctx, "s", int64(len(first)), turn(int64(len(first)), 2))
	var stale *backend.StaleWriterError
	if !errors.As(err, &stale) || dsherr.CodeOf(err) != dsherr.StaleWriter ||
		stale.Expected != int64(len(first)) || stale.Stored != int64(len(first)+len(second)) {
		t.Fatalf("stale Append = %v, want STALE_WRITER expecting %d, stored %d", err, len(first), len(first)+len(second))
	}
	// An event that breaks DSH's rules (a surface event without its
	// surfaceOp) is refused, and the whole batch with it.
	bad := turn(int64(len(first)+len(second)), 3)
	bad[1].SurfaceOp = nil
	var invalid *session.ValidationError
	if err := e.b.Append(e.ctx, "s", int64(len(first)+len(second)), bad); !errors.As(err, &invalid) {
		t.Fatalf("invalid Append = %v, want a *session.ValidationError", err)
	}
	if after := e.dump(e.b); after != before {
		t.Fatalf("refused appends wrote:\n%s\nwant\n%s", after, before)
	}
	if err := e.b.Append(e.ctx, "s", 0, nil); err != nil {
		t.Errorf("empty Append = %v, want a no-op", err)
	}
	in := e.inspect(e.b, "s")
	if len(in.Events) != len(first)+len(second) || in.Torn != nil || len(in.Closers) != 0 {
		t.Fatalf("Inspect after appends: %d events, torn %+v, %d closers", len(in.Events), in.Torn, len(in.Closers))
	}
	for i, ev := range in.Events {
		want := append(append([]session.Event{}, first...), second...)[i]
		if ev.Seq != want.Seq || ev.Type != want.Type || string(ev.Data) != string(want.Data) {
			t.Fatalf("event %d = %+v, want %+v", i, ev, want)
		}
	}
	if err := e.b.Append(e.ctx, "nope", 0, turn(0, 1)); !errors.Is(err, backend.ErrNotFound) {
		t.Errorf("Append to unknown = %v, want ErrNotFound", err)
	}
}

func testTornTail(t *testing.T, e *env) {
	committed := turn(0, 1)
	open := turn(int64(len(committed)), 2)[:2] // turn/start and the user message
	events := append(append([]session.Event{}, committed...), open...)
	tail := &backend.TornTail{FromSeq: int64(len(events)), Reason: "unterminated line", Raw: []byte(`{"type":"step/st`)}
	res, err := e.b.ImportSession(e.ctx, root("torn", 1), events, tail)
	if err != nil {
		t.Fatalf("import: %v", err)
	}
	if res.Torn == nil || res.Verified {
		t.Fatalf("import result = %+v, want a torn, unverified log", res)
	}
	before := e.dump(e.b)
	for range 2 {
		in := e.inspect(e.b, "torn")
		if in.Torn == nil || in.Torn.FromSeq != tail.FromSeq || len(in.Events) != len(events) || len(in.Closers) == 0 {
			t.Fatalf("Inspect = %d events, torn %+v, %d closers; want %d events, the tail from %d, closers for the open turn",
				len(in.Events), in.Torn, len(in.Closers), len(events), tail.FromSeq)
		}
	}
	if after := e.dump(e.b); after != before {
		t.Fatalf("Inspect wrote:\n%s\nwant\n%s", after, before)
	}
	loaded, err := e.b.Load(e.ctx, "torn")
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if loaded.Torn == nil || len(loaded.Closers) == 0 {
		t.Fatalf("first Load = torn %+v, %d closers; want the tail removed and the turn closed", loaded.Torn, len(loaded.Closers))
	}
	repaired := e.dump(e.b)
	again, err := e.b.Load(e.ctx, "torn")
	if err != nil {
		t.Fatalf("second Load: %v", err)
	}
	if again.Torn != nil || len(again.Closers) != 0 || len(again.Events) != len(events)+len(loaded.Closers) {
		t.Fatalf("second Load = %d events, torn %+v, %d closers; want nothing left to repair", len(again.Events), again.Torn, len(again.Closers))
	}
	if after := e.dump(e.b); after != repaired {
		t.Fatalf("second Load wrote:\n%s\nwant\n%s", after, repaired)
	}
	in := e.inspect(e.b, "torn")
	if in.Torn != nil || len(in.Closers) != 0 || len(in.Events) != len(events)+len(loaded.Closers) {
		t.Fatalf("Inspect after repair = %d events, torn %+v", len(in.Events), in.Torn)
	}
	// The repaired log takes appends again.
	next := int64(len(in.Events))
	if err := e.b.Append(e.ctx, "torn", next, turn(next, 3)); err != nil {
		t.Fatalf("Append after repair: %v", err)
	}
}

// A log imported damaged inside its committed region is kept as given and
// never reads: Inspect and Load report corruption at the damage, Append is
// refused, Audit returns the kept data and the prefix, and nothing changes.
func testDamagedLog(t *testing.T, e *env) {
	prefix := turn(0, 1)[:2]
	damage := backend.DamagedLog{FromSeq: 2, Reason: "unparsable committed event at line 3", Encoding: "jsonl-text", Raw: []byte("{not json}\n{\"type\":\"turn/end\"}\n")}
	res, err := e.b.ImportDamagedSession(e.ctx, root("damaged", 1), prefix, damage)
	if err != nil {
		t.Fatalf("import: %v", err)
	}
	if res.Verified || !errors.Is(res.Invalid, backend.ErrCorrupt) || res.Events != len(prefix) {
		t.Fatalf("import result = %+v, want %d events read back as corruption", res, len(prefix))
	}
	before := e.dump(e.b)
	var row *backend.CorruptRowError
	if _, err := e.b.Inspect(e.ctx, "damaged"); !errors.As(err, &row) || row.Seq != damage.FromSeq || row.Reason != damage.Reason {
		t.Fatalf("Inspect: %v, want corruption at seq %d", err, damage.FromSeq)
	}
	if _, err := e.b.Load(e.ctx, "damaged"); !errors.Is(err, backend.ErrCorrupt) {
		t.Fatalf("Load: %v, want corruption", err)
	}
	if err := e.b.Append(e.ctx, "damaged", 2, turn(2, 2)); !errors.Is(err, backend.ErrCorrupt) {
		t.Fatalf("Append: %v, want corruption", err)
	}
	a, err := e.b.Audit(e.ctx, "damaged")
	if err != nil {
		t.Fatalf("Audit: %v", err)
	}
	if !errors.Is(a.ReadErr, backend.ErrCorrupt) || a.Damaged == nil || a.Damaged.FromSeq != damage.FromSeq ||
		a.Damaged.Reason != damage.Reason || a.Damaged.Encoding != damage.Encoding || string(a.Damaged.Raw) != string(damage.Raw) || len(a.Prefix) != len(prefix) {
		t.Fatalf("Audit = %+v (damaged %+v)", a, a.Damaged)
	}
	if after := e.dump(e.b); after != before {
		t.Fatalf("reading a damaged log wrote:\n%s\nwant\n%s", after, before)
	}
}

// Text no store can keep — U+0000 or bytes that are not UTF-8 in a header
// string, an event type, data or surfaceOp JSON text — refuses the write
// with INVALID_INPUT and writes nothing, on every backend alike (PostgreSQL
// text cannot hold it; SQLite must not keep what PostgreSQL refuses). An id
// no store can hold is unknown. A NUL escaped inside JSON text is kept as
// it is, and a reason dsh writes about a log keeps a NUL as U+FFFD.
func testUnstorableText(t *testing.T, e *env) {
	e.create(root("kept", 1), turn(0, 1))
	before := e.dump(e.b)
	nul, bad := "a\x00b", "a\xffb"
	withType := func(typ string) []session.Event {
		ev := turn(0, 1)
		ev[2].Type = typ
		return ev
	}
	withData := func(data string) []session.Event {
		ev := turn(0, 1)
		ev[2].Data = json.RawMessage(data)
		return ev
	}
	header := func(f func(h *session.Header)) session.Header {
		h := child("c", "kept", 2)
		f(&h)
		return h
	}
	cases := map[string]func() error{
		"import: NUL id": func() error {
			_, err := e.b.ImportSession(e.ctx, root(nul, 2), turn(0, 1), nil)
			return err
		},
		"import: id not UTF-8": func() error {
			_, err := e.b.ImportSession(e.ctx, root(bad, 2), turn(0, 1), nil)
			return err
		},
		"import: NUL cwd": func() error {
			_, err := e.b.ImportSession(e.ctx, header(func(h *session.Header) { h.Cwd = ptr(nul) }), nil, nil)
			return err
		},
		"import: parentSession not UTF-8": func() error {
			_, err := e.b.ImportSession(e.ctx, header(func(h *session.Header) { h.ParentSession = ptr(bad) }), nil, nil)
			return err
		},
		"import: NUL origin": func() error {
			_, err := e.b.ImportSession(e.ctx, header(func(h *session.Header) { h.Origin = ptr("sub\x00agent") }), nil, nil)
			return err
		},
		"import: NUL agentPreset": func() error {
			_, err := e.b.ImportSession(e.ctx, header(func(h *session.Header) { h.AgentPreset = ptr(nul) }), nil, nil)
			return err
		},
		"import: NUL event type": func() error {
			_, err := e.b.ImportSession(e.ctx, root("c", 2), withType("step/start\x00"), nil)
			return err
		},
		"import: data not UTF-8": func() error {
			_, err := e.b.ImportSession(e.ctx, root("c", 2), withData(`{"turn":1,"step":1,"x":"`+bad+`"}`), nil)
			return err
		},
		"import damaged: NUL id": func() error {
			_, err := e.b.ImportDamagedSession(e.ctx, root(nul, 2), turn(0, 1)[:2],
				backend.DamagedLog{FromSeq: 2, Reason: "damaged", Encoding: "jsonl-text", Raw: []byte("{")})
			return err
		},
		"create: NUL id": func() error { return e.b.CreateSession(e.ctx, root(nul, 2), turn(0, 1)) },
		"append: NUL event type": func() error {
			next := turn(6, 2)[:1]
			next[0].Type = "turn/start\x00"
			return e.b.Append(e.ctx, "kept", 6, next)
		},
	}
	for name, write := range cases {
		if err := write(); dsherr.CodeOf(err) != dsherr.InvalidInput {
			t.Errorf("%s: %v (code %q), want %s", name, err, dsherr.CodeOf(err), dsherr.InvalidInput)
		}
	}
	if after := e.dump(e.b); after != before {
		t.Fatalf("refused writes wrote:\n%s\nwant\n%s", after, before)
	}
	for _, id := range []string{nul, bad} {
		if _, err := e.b.Header(e.ctx, id); !errors.Is(err, backend.ErrNotFound) {
			t.Errorf("Header(%q) = %v, want not found", id, err)
		}
		if err := e.b.Append(e.ctx, id, 0, turn(0, 1)); !errors.Is(err, backend.ErrNotFound) {
			t.Errorf("Append(%q) = %v, want not found", id, err)
		}
	}
	// A NUL escaped in JSON text is text like any other.
	escaped := withData(`{"turn":1,"step":1,"note":"a\u0000b"}`)
	if _, err := e.b.ImportSession(e.ctx, root("escaped", 3), escaped, nil); err != nil {
		t.Fatalf("import with an escaped NUL in data: %v", err)
	}
	if got := e.inspect(e.b, "escaped").Events[2].Data; string(got) != string(escaped[2].Data) {
		t.Errorf("escaped NUL read back as %s, want %s", got, escaped[2].Data)
	}
	// A reason quoting damaged data keeps it readable, the same on every
	// backend.
	if _, err := e.b.ImportDamagedSession(e.ctx, root("damaged", 4), turn(0, 1)[:2],
		backend.DamagedLog{FromSeq: 2, Reason: "line 3: " + nul + " " + bad, Encoding: "jsonl-text", Raw: []byte(nul + bad)}); err != nil {
		t.Fatalf("import damaged with a NUL in its reason: %v", err)
	}
	a, err := e.b.Audit(e.ctx, "damaged")
	if err != nil {
		t.Fatal(err)
	}
	if want := "line 3: a\uFFFDb a\uFFFDb"; a.Damaged == nil || a.Damaged.Reason != want || string(a.Damaged.Raw) != nul+bad {
		t.Errorf("damaged log kept as %+v, want reason %q and the raw bytes as found", a.Damaged, want)
	}
}

// A store keeps a record of each session an import refused
// (RefusalRecorder): one per location and id, replaced by a second record of
// the same; a refusal with a header keeps it as a listed session every read
// of which fails with the refusal (its code, its seq); an id the store holds
// as a session is not recorded; ClearRefusals removes the records and the
// kept header, after which the id imports like any other.
func testRefusals(t *testing.T, e *env) {
	rec, reader := e.b, e.b
	e.create(root("p", 1), nil)
	e.create(root("held", 2), nil)
	seq := int64(3)
	v5 := child("v5", "p", 3)
	v5.Version = 5
	broken := child("broken", "p", 4)
	for _, r := range []backend.Refusal{
		{Location: "/src/a/session.jsonl", Code: backend.RefusedHeader, Reason: "cannot read session header"},
		{Location: "/src/b/session.jsonl", ID: "dup", Code: backend.RefusedHeader, Reason: "session id appears in 2 files"},
		{Location: "/src/c/session.jsonl", ID: "dup", Code: backend.RefusedHeader, Reason: "session id appears in 2 files"},
		{Location: "/src/v5/session.v5.jsonl", ID: "v5", Header: &v5, Code: backend.RefusedFormat, Reason: "unsupported DSH session format version 5"},
		{Location: "/src/v5/session.v5.jsonl", ID: "v5", Header: &v5, Code: backend.RefusedFormat, Reason: "unsupported DSH session format version 5 (again)"},
		{Location: "/src/broken.jsonl", ID: "broken", Header: &broken, Code: backend.RefusedLog, Seq: &seq, Reason: "unparsable line 5"},
		{Location: "/src/held.jsonl", ID: "held", Code: backend.RefusedHeader, Reason: "refused copy of a stored session"},
		{Location: "/src/nul.jsonl", ID: "n\x00l", Header: ptr(root("n\x00l", 5)), Code: backend.RefusedHeader, Reason: "NUL in the id"},
	} {
		if err := rec.RecordRefusal(e.ctx, r); err != nil {
			t.Fatalf("RecordRefusal(%+v): %v", r, err)
		}
	}
	var got []string
	if err := reader.Refusals(e.ctx, func(r backend.Refusal) error {
		s := "-"
		if r.Seq != nil {
			s = fmt.Sprint(*r.Seq)
		}
		got = append(got, fmt.Sprintf("%s|%s|%s|%s|%s|%v", r.Location, r.ID, r.Code, s, r.Reason, r.Listed))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"/src/a/session.jsonl||HEADER_UNREADABLE|-|cannot read session header|false",
		"/src/b/session.jsonl|dup|HEADER_UNREADABLE|-|session id appears in 2 files|false",
		"/src/broken.jsonl|broken|LOG_UNREADABLE|3|unparsable line 5|true",
		"/src/c/session.jsonl|dup|HEADER_UNREADABLE|-|session id appears in 2 files|false",
		"/src/nul.jsonl||HEADER_UNREADABLE|-|NUL in the id|false",
		"/src/v5/session.v5.jsonl|v5|UNSUPPORTED_FORMAT|-|unsupported DSH session format version 5 (again)|true",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("Refusals:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// A kept header lists under its parent and reads as its refusal.
	var kids []string
	if err := e.b.ChildrenOf(e.ctx, "p", func(h session.Header) error { kids = append(kids, h.ID); return nil }); err != nil {
		t.Fatal(err)
	}
	if strings.Join(kids, ",") != "v5,broken" {
		t.Errorf("children of p = %v, want the two kept headers", kids)
	}
	if h, err := e.b.Header(e.ctx, "v5"); err != nil || h.Version != 5 {
		t.Errorf("Header(v5) = %+v, %v", h, err)
	}
	if _, err := e.b.Inspect(e.ctx, "v5"); dsherr.CodeOf(err) != dsherr.UnsupportedFormat {
		t.Errorf("Inspect(v5) = %v, want UNSUPPORTED_FORMAT", err)
	}
	var row *backend.CorruptRowError
	if _, err := e.b.Inspect(e.ctx, "broken"); !errors.As(err, &row) || row.Seq != seq {
		t.Errorf("Inspect(broken) = %v, want corruption at seq %d", err, seq)
	}
	for _, id := range []string{"v5", "broken"} {
		a, err := e.b.Audit(e.ctx, id)
		var refused *backend.RefusedError
		if err != nil || !errors.As(a.ReadErr, &refused) || len(a.Events) != 0 {
			t.Errorf("Audit(%s) = %+v, %v; want the refusal as its read error", id, a, err)
		}
		if _, err := e.b.Load(e.ctx, id); err == nil {
			t.Errorf("Load(%s) succeeded on a refused header", id)
		}
		if err := e.b.Append(e.ctx, id, 0, turn(0, 1)); err == nil {
			t.Errorf("Append(%s) succeeded on a refused header", id)
		}
	}
	if cv, ok := e.b.(backend.ColdVerdictReader); ok {
		// A log refusal is recorded as a cold verdict; a format
		// refusal (a code a verdict does not keep) is read.
		verdicts, err := cv.ColdVerdicts(e.ctx, []string{"v5", "broken"})
		if _, v5 := verdicts["v5"]; err != nil || v5 || verdicts["broken"].ReadErr == nil {
			t.Errorf("ColdVerdicts = %+v, %v; want broken recorded unreadable, v5 not", verdicts, err)
		}
	}
	before := e.dump(e.b) // batch audits agree with Audit
	// Clearing v5 (its file now reads) removes its records and the kept
	// header; the id then imports as any other.
	if err := rec.ClearRefusals(e.ctx, "/src/v5/session.v5.jsonl", "v5"); err != nil {
		t.Fatal(err)
	}
	if refused, err := rec.RefusedOnly(e.ctx, "v5"); err != nil || refused {
		t.Errorf("RefusedOnly(v5) after clearing = %v, %v", refused, err)
	}
	if _, err := e.b.Header(e.ctx, "v5"); !errors.Is(err, backend.ErrNotFound) {
		t.Errorf("Header(v5) after clearing = %v, want not found", err)
	}
	if _, err := e.b.ImportSession(e.ctx, child("v5", "p", 3), turn(0, 1), nil); err != nil {
		t.Fatalf("import v5 after clearing: %v", err)
	}
	if refused, err := rec.RefusedOnly(e.ctx, "broken"); err != nil || !refused {
		t.Errorf("RefusedOnly(broken) = %v, %v; want true", refused, err)
	}
	if after := e.dump(e.b); after == before {
		t.Errorf("clearing and importing v5 changed nothing")
	}
}

// A store records, in the import that stores it, that a log cannot be read
// (failing validation, or damaged), with the error Inspect gives; a log that
// reads (valid, or torn with a valid prefix) and an unknown id carry no
// record, and asking writes nothing. A registry fold recorded beside a log
// is returned as given until the log changes (an append) or the cache is
// cleared.
// testTextReplaced: the record of replaced text (migration 0010) is kept
// per session, read back for the ids asked, cleared by nil, refused for an
// unknown id, and leaves the log's verification alone.
func testTextReplaced(t *testing.T, e *env) {
	rec := e.b
	if _, err := e.b.ImportSession(e.ctx, root("a", 1), turn(0, 1), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := e.b.ImportSession(e.ctx, root("b", 2), turn(0, 1), nil); err != nil {
		t.Fatal(err)
	}
	before, err := e.b.Audit(e.ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	want := backend.TextReplaced{FirstSeq: 1, Events: 2}
	if err := rec.RecordTextReplaced(e.ctx, "a", &want); err != nil {
		t.Fatal(err)
	}
	if err := rec.RecordTextReplaced(e.ctx, "nobody", &want); !errors.Is(err, backend.ErrNotFound) {
		t.Errorf("record for an unknown id: %v, want ErrNotFound", err)
	}
	read := func(b backend.Backend) map[string]backend.TextReplaced {
		t.Helper()
		got, err := b.TextReplacedOf(e.ctx, []string{"a", "b", "nobody"})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := read(e.open(true)); len(got) != 1 || got["a"] != want {
		t.Errorf("read-only TextReplacedOf = %v, want only a: %+v", got, want)
	}
	if after, err := e.b.Audit(e.ctx, "a"); err != nil || after.Verified != before.Verified {
		t.Errorf("recording changed the log's verification: %v -> %+v, %v", before.Verified, after, err)
	}
	if err := rec.RecordTextReplaced(e.ctx, "a", nil); err != nil {
		t.Fatal(err)
	}
	if got := read(e.b); len(got) != 0 {
		t.Errorf("after clearing: %v", got)
	}
}

func testColdVerdicts(t *testing.T, e *env) {
	cv, ok := e.b.(backend.ColdVerdictReader)
	if !ok {
		t.Fatalf("%T records no cold verdicts", e.b)
	}
	rf, ok := e.b.(backend.RegistryFoldRecorder)
	if !ok {
		t.Fatalf("%T records no registry folds", e.b)
	}
	invalid := turn(0, 1)
	invalid[1].SurfaceOp = nil
	if res, err := e.b.ImportSession(e.ctx, root("invalid", 1), invalid, nil); err != nil || res.Invalid == nil {
		t.Fatalf("import invalid: %+v, %v", res, err)
	}
	damage := backend.DamagedLog{FromSeq: 2, Reason: "unparsable committed event at line 3", Encoding: "jsonl-text", Raw: []byte("{not json}\n")}
	if res, err := e.b.ImportDamagedSession(e.ctx, root("damaged", 2), turn(0, 1)[:2], damage); err != nil || res.Invalid == nil {
		t.Fatalf("import damaged: %+v, %v", res, err)
	}
	tail := &backend.TornTail{FromSeq: 6, Reason: "unterminated line", Raw: []byte(`{"type":"step/st`)}
	if _, err := e.b.ImportSession(e.ctx, root("torn", 3), turn(0, 1), tail); err != nil {
		t.Fatalf("import torn: %v", err)
	}
	if _, err := e.b.ImportSession(e.ctx, root("imported", 4), turn(0, 1), nil); err != nil {
		t.Fatalf("import valid: %v", err)
	}
	e.create(root("created", 5), turn(0, 1))
	ids := []string{"invalid", "damaged", "torn", "imported", "created", "unknown"}
	before := e.dump(e.b)
	got, err := cv.ColdVerdicts(e.ctx, ids)
	if err != nil {
		t.Fatalf("ColdVerdicts: %v", err)
	}
	if len(got) != 2 {
		t.Errorf("ColdVerdicts = %v, want invalid and damaged only", got)
	}
	for _, id := range []string{"invalid", "damaged"} {
		_, readErr := e.b.Inspect(e.ctx, id)
		if readErr == nil || got[id].ReadErr == nil || got[id].ReadErr.Error() != readErr.Error() || got[id].RegistryFold != nil {
			t.Errorf("%s: recorded %+v, Inspect fails with %v", id, got[id], readErr)
		}
	}
	if after := e.dump(e.b); after != before {
		t.Fatalf("ColdVerdicts wrote:\n%s\nwant\n%s", after, before)
	}

	fold := func() []byte {
		t.Helper()
		got, err := cv.ColdVerdicts(e.ctx, []string{"created"})
		if err != nil {
			t.Fatalf("ColdVerdicts: %v", err)
		}
		if got["created"].ReadErr != nil {
			t.Fatalf("created: read failure %v recorded", got["created"].ReadErr)
		}
		return got["created"].RegistryFold
	}
	const recorded = "unit@1\n{\"seq\":3}"
	if err := rf.RecordRegistryFold(e.ctx, "created", []byte(recorded)); err != nil {
		t.Fatalf("RecordRegistryFold: %v", err)
	}
	if f := fold(); string(f) != recorded {
		t.Errorf("registry fold = %q, want %q", f, recorded)
	}
	if err := e.b.Append(e.ctx, "created", 6, turn(6, 2)); err != nil {
		t.Fatalf("Append: %v", err)
	}
	if f := fold(); f != nil {
		t.Errorf("registry fold %q survived an append", f)
	}
	if err := rf.RecordRegistryFold(e.ctx, "created", []byte(recorded)); err != nil {
		t.Fatalf("RecordRegistryFold: %v", err)
	}
	if _, err := e.b.ClearCheckpoints(e.ctx); err != nil {
		t.Fatalf("ClearCheckpoints: %v", err)
	}
	if f := fold(); f != nil {
		t.Errorf("registry fold %q survived ClearCheckpoints", f)
	}
	if err := rf.RecordRegistryFold(e.ctx, "unknown", []byte(recorded)); !errors.Is(err, backend.ErrNotFound) {
		t.Errorf("RecordRegistryFold(unknown) = %v, want ErrNotFound", err)
	}
}

func testChildrenOrder(t *testing.T, e *env) {
	e.create(root("p", 1), nil)
	// Inserted out of order; equal createdAt are ordered as JavaScript's
	// localeCompare orders the ids: punctuation, digits, then letters,
	// lowercase before uppercase, no numeric ordering.
	ids := []string{"b", "B", "9", "_x", "a", "10"}
	for _, id := range ids {
		e.create(child(id, "p", 50), nil)
	}
	e.create(child("late", "p", 90), nil)
	e.create(child("early", "p", 10), nil)
	var created []int64
	err := e.b.ChildrenOf(e.ctx, "p", func(h session.Header) error {
		created = append(created, h.CreatedAt)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(created); i++ {
		if created[i] < created[i-1] {
			t.Fatalf("ChildrenOf createdAt order = %v, want ascending", created)
		}
	}
	c, err := corpus.Load(e.ctx, e.b, nil)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := c.Children(e.ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range recs {
		got = append(got, r.Header.ID)
	}
	want := []string{"early", "_x", "10", "9", "a", "b", "B", "late"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("children in DSH order = %q, want %q", got, want)
	}
	testChildrenPages(t, e, c, "p")
}

// testChildrenPages: a parent's children walked a page at a time — the
// store resumed after each page's last key (backend.ChildrenPager), the
// corpus handing over only whole runs of tied createdAt — are the
// children read at once, in the same order, at every page size.
func testChildrenPages(t *testing.T, e *env, c *corpus.Corpus, parent string) {
	t.Helper()
	pager, ok := e.b.(backend.ChildrenPager)
	if !ok {
		t.Fatalf("%T does not resume a parent's children (backend.ChildrenPager)", e.b)
	}
	// An ordinary child and a grandchild: pages skip the one and carry
	// the other's hasChildren.
	ordinary := root("ordinary", 50)
	ordinary.ParentSession = ptr(parent)
	e.create(ordinary, nil)
	e.create(child("grandchild", "B", 60), nil)
	var all []string
	err := e.b.ChildrenOf(e.ctx, parent, func(h session.Header) error {
		all = append(all, h.ID)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	whole, err := c.Children(e.ctx, parent)
	if err != nil {
		t.Fatal(err)
	}
	for size := 1; size <= len(all)+1; size++ {
		var walked []string
		var after *backend.ChildKey
		for {
			n := 0
			err := pager.ChildrenAfter(e.ctx, parent, after, size, func(h session.Header) error {
				n++
				walked = append(walked, h.ID)
				after = &backend.ChildKey{CreatedAt: h.CreatedAt, ID: h.ID}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if n < size {
				break
			}
		}
		if !reflect.DeepEqual(walked, all) {
			t.Fatalf("ChildrenAfter pages of %d = %q, want ChildrenOf's %q", size, walked, all)
		}
		var paged []corpus.Record
		err := c.ChildrenPages(e.ctx, parent, size, func(recs []corpus.Record) error {
			paged = append(paged, recs...)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(paged, whole) {
			t.Fatalf("ChildrenPages of %d = %+v, want Children's %+v", size, paged, whole)
		}
	}
}

func testHasChildren(t *testing.T, e *env) {
	e.create(root("p", 1), nil)
	e.create(root("q", 1), nil)
	e.create(child("c", "p", 2), nil)
	ordinary := root("o", 2)
	ordinary.ParentSession = ptr("q")
	e.create(ordinary, nil)
	for id, want := range map[string]bool{"p": true, "q": false, "c": false, "o": false, "unknown": false} {
		got, err := e.b.HasSubagentChild(e.ctx, id)
		if err != nil || got != want {
			t.Errorf("HasSubagentChild(%q) = %v, %v; want %v", id, got, err, want)
		}
	}
	got, err := e.b.SubagentParents(e.ctx, []string{"p", "q", "c", "o", "unknown"})
	if err != nil || !reflect.DeepEqual(got, map[string]bool{"p": true}) {
		t.Errorf("SubagentParents = %v, %v; want only p", got, err)
	}
}

// The one-query listings (the optional ChildListing, ChildListingCold and
// SubtreeListing) answer hasChildren as HasSubagentChild does: only a
// subagent-origin child counts, so a child whose only child is an ordinary
// fork has none. The listing with the checkpoint cache (which takes the
// one-query path) gives the rows the listing without it gives.
func testListingsHasChildren(t *testing.T, e *env) {
	// Every subagent child has a descriptor, so that each lists as a child
	// row (which is the row that shows hasChildren).
	desc := []session.Event{{Type: session.TypeDescriptor, Seq: 0, Time: 3, Data: json.RawMessage(`{"version":2,"mode":"continuable","provider":"spawn","label":"w"}`)}}
	e.create(root("p", 1), nil)
	e.create(child("forked", "p", 2), desc)
	e.create(child("delegating", "p", 3), desc)
	e.create(child("leaf", "p", 4), desc)
	fork := root("fork", 5)
	fork.ParentSession, fork.SeedLength = ptr("forked"), ptr(int64(0))
	e.create(fork, nil)
	e.create(child("grandchild", "delegating", 6), desc)
	want := map[string]bool{}
	for _, id := range []string{"forked", "delegating", "leaf", "fork", "grandchild"} {
		has, err := e.b.HasSubagentChild(e.ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		want[id] = has
	}
	if !want["delegating"] || want["forked"] || want["leaf"] {
		t.Fatalf("HasSubagentChild = %v; want only delegating", want)
	}
	check := func(what string, ids []string) func(backend.ListedChild) error {
		return func(c backend.ListedChild) error {
			if c.HasChildren != want[c.Header.ID] {
				t.Errorf("%s: %s hasChildren %v, HasSubagentChild %v", what, c.Header.ID, c.HasChildren, want[c.Header.ID])
			}
			return nil
		}
	}
	if src, ok := e.b.(backend.ChildListingReader); ok {
		if err := src.ChildListing(e.ctx, "p", check("ChildListing", nil)); err != nil {
			t.Fatal(err)
		}
	}
	if src, ok := e.b.(backend.ColdChildListingReader); ok {
		if err := src.ChildListingCold(e.ctx, "p", []string{session.TypeDescriptor}, "", check("ChildListingCold", nil)); err != nil {
			t.Fatal(err)
		}
	}
	if src, ok := e.b.(backend.SubtreeListingReader); ok {
		if err := src.SubtreeListing(e.ctx, "p", check("SubtreeListing", nil)); err != nil {
			t.Fatal(err)
		}
	}
	st := e.b
	cached := subagent.NewStoreLister(st, e.b, 0)
	uncached := subagent.NewStoreLister(st, e.b, 0)
	uncached.Cache = nil
	for _, scope := range []corpus.Scope{corpus.ScopeChildren, corpus.ScopeDescendants} {
		list := func(l *subagent.Lister) []subagent.Row {
			t.Helper()
			var (
				rows []subagent.Row
				err  error
			)
			if scope == corpus.ScopeDescendants {
				rows, err = l.ListDescendants(e.ctx, "p")
			} else {
				rows, err = l.ListChildren(e.ctx, "p")
			}
			if err != nil {
				t.Fatalf("%s: %v", scope, err)
			}
			return rows
		}
		got, slow := list(cached), list(uncached)
		if !reflect.DeepEqual(got, slow) {
			t.Errorf("%s with the cache = %+v\nwithout it %+v", scope, got, slow)
		}
		if len(got) == 0 || !slices.ContainsFunc(got, func(r subagent.Row) bool { return r.HasChildren }) {
			t.Errorf("%s = %+v; want delegating's row with hasChildren", scope, got)
		}
		for _, r := range got {
			if r.HasChildren != want[r.ID] {
				t.Errorf("%s: row %s hasChildren %v, want %v", scope, r.ID, r.HasChildren, want[r.ID])
			}
		}
	}
}

// ChildrenOf and the one-query child listings give ties in createdAt in id
// order themselves (the caller's localeCompare re-sort must not be what
// hides a missing tie-break): see ChildTieOrder.
func testChildListingTieOrder(t *testing.T, e *env) {
	ChildTieOrder(e.ctx, t, e.b)
}

// ChildTieOrder creates, in the empty store b, a parent whose subagent
// children share a createdAt, created in reverse id order so that neither
// insertion order nor an index that happens to hold id gives the order for
// free, and checks that ChildrenOf and the one-query child listings return
// them in (createdAt, id) order themselves. A server backend runs it again
// with its planner steered away from its index (pgstore's
// TestChildTieOrderOnEveryPlan): the order must hold on every plan.
func ChildTieOrder(ctx context.Context, t *testing.T, b backend.Backend) {
	t.Helper()
	create := func(h session.Header) {
		t.Helper()
		if err := b.CreateSession(ctx, h, nil); err != nil {
			t.Fatalf("create %s: %v", h.ID, err)
		}
	}
	create(root("p", 1))
	var want []string
	for i := 40; i >= 0; i-- {
		id := fmt.Sprintf("c%02d", i)
		create(child(id, "p", 50))
		want = append([]string{id}, want...)
	}
	create(child("zz-early", "p", 10))
	create(child("aa-late", "p", 90))
	want = append(append([]string{"zz-early"}, want...), "aa-late")
	var got []string
	if err := b.ChildrenOf(ctx, "p", func(h session.Header) error { got = append(got, h.ID); return nil }); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ChildrenOf order = %q\nwant (createdAt, id) %q", got, want)
	}
	listed := func(what string, each func(fn func(backend.ListedChild) error) error) {
		t.Helper()
		var got []string
		if err := each(func(c backend.ListedChild) error { got = append(got, c.Header.ID); return nil }); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s order = %q\nwant (createdAt, id) %q", what, got, want)
		}
	}
	if src, ok := b.(backend.ChildListingReader); ok {
		listed("ChildListing", func(fn func(backend.ListedChild) error) error { return src.ChildListing(ctx, "p", fn) })
	}
	if src, ok := b.(backend.ColdChildListingReader); ok {
		listed("ChildListingCold", func(fn func(backend.ListedChild) error) error {
			return src.ChildListingCold(ctx, "p", []string{session.TypeDescriptor}, "", fn)
		})
	}
}

// A torn tail whose cut is a stored row (here a row whose seq breaks
// contiguity, which the store's own read finds) is removed whole by the
// repairing Load, that row included: the repaired log is the committed
// prefix plus the closers, it reads back so, and takes appends.
func testTornCutAtRow(t *testing.T, e *env) {
	committed := turn(0, 1)
	open := turn(int64(len(committed)), 2)[:2] // turn/start and the user message
	events := append(append([]session.Event{}, committed...), open...)
	cut := int64(len(events)) + 1
	stray := turn(cut, 2)[2] // a step/start one seq past the next
	stray.Seq = cut
	res, err := e.b.ImportSession(e.ctx, root("gap", 1), append(events, stray), nil)
	if err != nil {
		t.Fatalf("import: %v", err)
	}
	if res.Torn == nil || res.Torn.FromSeq != cut {
		t.Fatalf("import result = %+v, want a torn tail from %d", res, cut)
	}
	if in := e.inspect(e.b, "gap"); in.Torn == nil || in.Torn.FromSeq != cut || len(in.Events) != len(events) {
		t.Fatalf("Inspect = %d events, torn %+v; want %d events, the tail from %d", len(in.Events), in.Torn, len(events), cut)
	}
	loaded, err := e.b.Load(e.ctx, "gap")
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if loaded.Torn == nil || len(loaded.Closers) == 0 {
		t.Fatalf("Load = torn %+v, %d closers; want the tail cut and the turn closed", loaded.Torn, len(loaded.Closers))
	}
	want := append(append([]session.Event{}, events...), loaded.Closers...)
	for range 2 {
		in := e.inspect(e.b, "gap")
		if in.Torn != nil || len(in.Closers) != 0 || !reflect.DeepEqual(in.Events, want) {
			t.Fatalf("Inspect after Load = %d events (torn %+v, %d closers); want the %d committed events and %d closers alone",
				len(in.Events), in.Torn, len(in.Closers), len(events), len(loaded.Closers))
		}
		a, err := e.b.Audit(e.ctx, "gap")
		if err != nil || a.Torn != nil || len(a.Events) != len(want) {
			t.Fatalf("Audit after Load = %+v, %v; want %d events, no tail", a, err, len(want))
		}
		if again, err := e.b.Load(e.ctx, "gap"); err != nil || again.Torn != nil || len(again.Closers) != 0 {
			t.Fatalf("second Load = %+v, %v; want nothing left to repair", again, err)
		}
	}
	next := int64(len(want))
	if err := e.b.Append(e.ctx, "gap", next, turn(next, 3)); err != nil {
		t.Fatalf("Append after repair: %v", err)
	}
}

func testStreamSessions(t *testing.T, e *env) {
	if has, err := e.b.HasSessions(e.ctx); err != nil || has {
		t.Errorf("HasSessions = %v, %v on an empty store; want false", has, err)
	}
	e.create(root("r2", 2), nil)
	e.create(root("r1", 1), nil)
	e.create(child("c1", "r1", 3), nil)
	e.create(child("c2", "r1", 4), nil)
	ordinary := root("o", 5)
	ordinary.ParentSession = ptr("r2")
	e.create(ordinary, nil)
	if has, err := e.b.HasSessions(e.ctx); err != nil || !has {
		t.Errorf("HasSessions = %v, %v on a store with sessions; want true", has, err)
	}
	var all []string
	if err := e.b.ListHeaders(e.ctx, func(h session.Header) error { all = append(all, h.ID); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(all) != 5 {
		t.Errorf("ListHeaders = %q, want 5 sessions", all)
	}
	for sub, want := range map[bool]int{false: 5, true: 2} {
		if n, err := e.b.CountSessions(e.ctx, sub); err != nil || n != want {
			t.Errorf("CountSessions(subagentOnly=%v) = %d, %v; want %d", sub, n, err, want)
		}
	}
	for sub, want := range map[bool][]string{false: {"r1", "r2"}, true: {"r1"}} {
		var parents []string
		if err := e.b.EachParent(e.ctx, sub, func(p string) error { parents = append(parents, p); return nil }); err != nil || !reflect.DeepEqual(parents, want) {
			t.Errorf("EachParent(subagentOnly=%v) = %q, %v; want %q", sub, parents, err, want)
		}
	}
	var roots []string
	if err := e.b.RootHeaders(e.ctx, false, func(h session.Header) error { roots = append(roots, h.ID); return nil }); err != nil || !reflect.DeepEqual(roots, []string{"r1", "r2"}) {
		t.Errorf("RootHeaders = %q, %v; want r1, r2 by createdAt", roots, err)
	}
	// CatalogSessions names the sessions holding a catalog fact, whatever
	// their origin and whether or not any child exists, once each, in id
	// order; a descriptor alone does not count.
	fact := func(seq int64, child string) session.Event {
		return session.Event{Type: session.TypeCatalog, Seq: seq, Time: 1_700_000_000_000 + seq,
			Data: json.RawMessage(`{"version":0,"childId":"` + child + `","childCreatedAt":9,"mode":"continuable","label":"x"}`)}
	}
	v4 := func(h session.Header) session.Header { h.Version = 4; return h }
	e.create(v4(root("z-cat", 6)), []session.Event{fact(0, "gone"), fact(1, "gone-too")})
	e.create(v4(child("c-cat", "r1", 7)), []session.Event{
		{Type: "subagent/descriptor", Seq: 0, Time: 1_700_000_000_000, Data: json.RawMessage(`{"version":3,"mode":"continuable","provider":"spawn","label":"x"}`)},
		fact(1, "gone"),
	})
	e.create(v4(child("d-only", "r1", 8)), []session.Event{
		{Type: "subagent/descriptor", Seq: 0, Time: 1_700_000_000_000, Data: json.RawMessage(`{"version":3,"mode":"continuable","provider":"spawn","label":"x"}`)},
	})
	var cataloged []string
	if err := e.b.CatalogSessions(e.ctx, func(id string) error { cataloged = append(cataloged, id); return nil }); err != nil || !reflect.DeepEqual(cataloged, []string{"c-cat", "z-cat"}) {
		t.Errorf("CatalogSessions = %q, %v; want c-cat, z-cat", cataloged, err)
	}
}

func holder(id string, ttl time.Duration) backend.LeaseHolder {
	return backend.LeaseHolder{ID: id, PID: os.Getpid(), Host: "storetest", TTL: ttl}
}

func testLeaseGoroutines(t *testing.T, e *env) {
	e.create(root("p", 1), nil)
	e.create(child("c", "p", 2), nil)
	const racers = 8
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		winners  []string
		failures []error
	)
	start := make(chan struct{})
	for i := range racers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("g%d", i)
			<-start
			_, err := e.b.AcquireLease(e.ctx, "c", holder(id, time.Minute))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				winners = append(winners, id)
			case !errors.Is(err, backend.ErrLeaseHeld):
				failures = append(failures, err)
			}
		}()
	}
	close(start)
	wg.Wait()
	if len(winners) != 1 || len(failures) != 0 {
		t.Fatalf("winners %q, other failures %v; want exactly one holder and ErrLeaseHeld for the rest", winners, failures)
	}
	ls, err := e.b.Leases(e.ctx)
	if err != nil || len(ls) != 1 || ls[0].Holder != winners[0] {
		t.Fatalf("Leases = %+v, %v; want the one winner %s", ls, err, winners[0])
	}
}

// raceResult is what a racing process prints.
const raceResult = "storetest-lease-race: "

func testLeaseProcesses(t *testing.T, e *env) {
	e.create(root("p", 1), nil)
	e.create(child("c", "p", 2), nil)
	const racers = 4
	outs := make([]strings.Builder, racers)
	cmds := make([]*exec.Cmd, racers)
	top, _, _ := strings.Cut(t.Name(), "/")
	for i := range cmds {
		cmd := exec.CommandContext(e.ctx, os.Args[0], "-test.run=^"+top+"$", "-test.count=1")
		cmd.Env = append(os.Environ(), childEnv+"="+e.addr)
		cmd.Stdout, cmd.Stderr = &outs[i], &outs[i]
		cmds[i] = cmd
	}
	for _, cmd := range cmds {
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
	}
	won, held := 0, 0
	for i, cmd := range cmds {
		err := cmd.Wait()
		out := outs[i].String()
		switch {
		case err != nil:
			t.Errorf("racer %d: %v\n%s", i, err, out)
		case strings.Contains(out, raceResult+"acquired"):
			won++
		case strings.Contains(out, raceResult+"held"):
			held++
		default:
			t.Errorf("racer %d printed no result:\n%s", i, out)
		}
	}
	if won != 1 || held != racers-1 {
		t.Fatalf("%d processes acquired and %d were refused; want exactly one holder", won, held)
	}
}

// raceChild is Run in a re-executed test binary: open the store, take the
// lease on "c" once, print the outcome.
func raceChild(t *testing.T, target Target, addr string) {
	ctx := context.Background()
	b, err := target.Open(ctx, addr, false)
	if err != nil {
		t.Fatalf("racer: open %s: %v", addr, err)
	}
	defer b.Close()
	_, err = b.AcquireLease(ctx, "c", holder(fmt.Sprintf("pid-%d", os.Getpid()), time.Minute))
	switch {
	case err == nil:
		fmt.Println(raceResult + "acquired")
	case errors.Is(err, backend.ErrLeaseHeld):
		fmt.Println(raceResult + "held")
	default:
		t.Fatalf("racer: AcquireLease: %v", err)
	}
}

func testLeaseExpiry(t *testing.T, e *env) {
	e.create(root("p", 1), nil)
	e.create(child("c", "p", 2), nil)
	const ttl = 300 * time.Millisecond
	first := holder("first", ttl)
	before, err := e.b.Now(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.b.AcquireLease(e.ctx, "c", first); err != nil {
		t.Fatal(err)
	}
	after, _ := e.b.Now(e.ctx)
	ls, err := e.b.Leases(e.ctx)
	if err != nil || len(ls) != 1 {
		t.Fatalf("Leases = %+v, %v", ls, err)
	}
	l := ls[0]
	if l.AcquiredAt < before.UnixMilli() || l.AcquiredAt > after.UnixMilli() || l.ExpiresAt != l.AcquiredAt+ttl.Milliseconds() {
		t.Fatalf("lease times %+v: want acquired between %d and %d by the backend's clock, expiring %s later",
			l, before.UnixMilli(), after.UnixMilli(), ttl)
	}
	live, err := e.b.LiveSessions(e.ctx)
	if _, ok := live["c"]; err != nil || !ok {
		t.Fatalf("LiveSessions before expiry = %v, %v; want c", live, err)
	}
	if _, err := e.b.AcquireLease(e.ctx, "c", holder("second", ttl)); !errors.Is(err, backend.ErrLeaseHeld) {
		t.Fatalf("acquire of a live lease = %v, want ErrLeaseHeld", err)
	}
	for {
		now, err := e.b.Now(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		if now.UnixMilli() >= l.ExpiresAt {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	live, err = e.b.LiveSessions(e.ctx)
	if _, ok := live["c"]; err != nil || ok {
		t.Fatalf("LiveSessions after expiry = %v, %v; want c gone", live, err)
	}
	replaced, err := e.b.AcquireLease(e.ctx, "c", holder("second", time.Minute))
	if err != nil || replaced == nil || replaced.Holder != "first" {
		t.Fatalf("takeover = %+v, %v; want first's expired lease replaced", replaced, err)
	}
	if err := e.b.HeartbeatLease(e.ctx, "c", first, nil); !errors.Is(err, backend.ErrLeaseLost) {
		t.Errorf("old holder's heartbeat = %v, want ErrLeaseLost", err)
	}
	if err := e.b.ReleaseLease(e.ctx, "c", first); !errors.Is(err, backend.ErrLeaseLost) {
		t.Errorf("old holder's release = %v, want ErrLeaseLost", err)
	}
	snap := &backend.LiveSnapshot{Subagent: json.RawMessage(`{"mode":"continuable","label":"x","seq":0}`), AsOfSeq: 0}
	if err := e.b.HeartbeatLease(e.ctx, "c", holder("second", time.Minute), snap); err != nil {
		t.Fatalf("heartbeat with snapshot: %v", err)
	}
	live, err = e.b.LiveSessions(e.ctx)
	if got := live["c"]; err != nil || got.Holder != "second" || string(got.Subagent) != string(snap.Subagent) {
		t.Fatalf("LiveSessions = %+v, %v; want second's published snapshot", live, err)
	}
	if err := e.b.ReleaseLease(e.ctx, "c", holder("second", time.Minute)); err != nil {
		t.Fatalf("release: %v", err)
	}
	if ls, err := e.b.Leases(e.ctx); err != nil || len(ls) != 0 {
		t.Fatalf("Leases after release = %+v, %v", ls, err)
	}
}

func testCheckpoints(t *testing.T, e *env) {
	e.create(root("p", 1), nil)
	h := child("c", "p", 2)
	desc := session.Event{Type: session.TypeDescriptor, Seq: 0, Time: 3, Data: json.RawMessage(`{"version":2,"mode":"continuable","provider":"spawn","label":"w"}`)}
	e.create(h, []session.Event{desc})
	reg := subagent.NewRegistry()
	fold := reg.NewFold()
	fold.Apply(desc)
	cp, err := fold.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	cache := projcache.NewCache(e.b, reg)
	if err := cache.Put(e.ctx, h, 0, cp); err != nil {
		t.Fatal(err)
	}
	rec, found, err := e.b.Checkpoint(e.ctx, "c")
	if err != nil || !found || !reflect.DeepEqual(rec.Witness, h) || rec.AsOfSeq != 0 {
		t.Fatalf("Checkpoint = %s %d %v, %v; want the witness as written", headerString(rec.Witness), rec.AsOfSeq, found, err)
	}
	if l, err := cache.Lookup(e.ctx, h); err != nil || l.Status != projcache.Hit || l.Values[subagent.UnitKey] == nil {
		t.Fatalf("Lookup = %+v, %v; want a hit with the subagent view", l, err)
	}
	// The witness: an absent field is not a zero one.
	other := h
	other.DelegationDepth = nil
	if l, err := cache.Lookup(e.ctx, other); err != nil || l.Status != projcache.Foreign {
		t.Errorf("Lookup with delegationDepth absent = %v, %v; want foreign", l.Status, err)
	}
	// A row at another state version is discarded, not served.
	old := backend.CheckpointRecord{Witness: h, AsOfSeq: 0, Rows: []byte(`{"subagent":{"ver":999,"seq":0,"val":null}}`)}
	if err := e.b.PutCheckpoint(e.ctx, old); err != nil {
		t.Fatal(err)
	}
	if l, err := cache.Lookup(e.ctx, h); err != nil || l.Status != projcache.Hit || l.Values[subagent.UnitKey] != nil || l.Dropped[subagent.UnitKey] == "" {
		t.Errorf("Lookup of a row at another version = %+v, %v; want it dropped", l, err)
	}
	// A record is replaced whole: nothing of the older one survives.
	whole := backend.CheckpointRecord{Witness: other, AsOfSeq: 7, Rows: []byte(`{}`)}
	if err := e.b.PutCheckpoint(e.ctx, whole); err != nil {
		t.Fatal(err)
	}
	if rec, found, err := e.b.Checkpoint(e.ctx, "c"); err != nil || !found || !reflect.DeepEqual(rec, whole) {
		t.Fatalf("Checkpoint after replace = %+v, %v, %v; want %+v", rec, found, err, whole)
	}
	// Enumeration: by parent, by ids, every record.
	h2 := child("d", "p", 3)
	e.create(h2, []session.Event{desc})
	if err := e.b.PutCheckpoint(e.ctx, backend.CheckpointRecord{Witness: h2, AsOfSeq: 0, Rows: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	collect := func(each func(fn func(backend.CheckpointRecord) error) error) []string {
		var ids []string
		if err := each(func(r backend.CheckpointRecord) error { ids = append(ids, r.Witness.ID); return nil }); err != nil {
			t.Fatal(err)
		}
		return ids
	}
	if ids := collect(func(fn func(backend.CheckpointRecord) error) error { return e.b.EachCheckpoint(e.ctx, fn) }); !reflect.DeepEqual(ids, []string{"c", "d"}) {
		t.Errorf("EachCheckpoint = %q, want c, d", ids)
	}
	if ids := collect(func(fn func(backend.CheckpointRecord) error) error { return e.b.ChildCheckpoints(e.ctx, "p", fn) }); len(ids) != 2 {
		t.Errorf("ChildCheckpoints(p) = %q, want c and d", ids)
	}
	if ids := collect(func(fn func(backend.CheckpointRecord) error) error {
		return e.b.CheckpointsOf(e.ctx, []string{"d", "nope"}, fn)
	}); !reflect.DeepEqual(ids, []string{"d"}) {
		t.Errorf("CheckpointsOf(d, nope) = %q, want d", ids)
	}
	if err := e.b.DeleteCheckpoint(e.ctx, "d"); err != nil {
		t.Fatal(err)
	}
	if err := e.b.DeleteCheckpoint(e.ctx, "d"); err != nil {
		t.Errorf("deleting a missing record = %v, want no error", err)
	}
	if _, found, err := e.b.Checkpoint(e.ctx, "d"); err != nil || found {
		t.Errorf("Checkpoint after delete: found %v, %v", found, err)
	}
	if n, err := e.b.ClearCheckpoints(e.ctx); err != nil || n != 1 {
		t.Errorf("ClearCheckpoints = %d, %v; want 1", n, err)
	}
}

func testReadOnly(t *testing.T, e *env) {
	e.create(root("p", 1), turn(0, 1))
	e.create(child("c", "p", 2), nil)
	if _, err := e.b.ImportSession(e.ctx, root("torn", 3), turn(0, 1)[:3], &backend.TornTail{FromSeq: 3, Reason: "cut", Raw: []byte("{")}); err != nil {
		t.Fatal(err)
	}
	if err := e.b.Close(); err != nil {
		t.Fatal(err)
	}
	fingerprint := func() string {
		if e.target.Fingerprint == nil {
			return ""
		}
		f, err := e.target.Fingerprint(e.addr)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	beforeFiles := fingerprint()
	ro := e.open(true)
	if !ro.ReadOnly() {
		t.Fatal("a read-only open says it is writable")
	}
	before := e.dump(ro)
	e.inspect(ro, "torn")
	if _, err := ro.InspectTypes(e.ctx, "p", session.TypeTurnEnd); err != nil {
		t.Fatal(err)
	}
	writes := map[string]func() error{
		"CreateSession": func() error { return ro.CreateSession(e.ctx, root("new", 1), nil) },
		"Append":        func() error { return ro.Append(e.ctx, "p", 6, turn(6, 2)) },
		"Load":          func() error { _, err := ro.Load(e.ctx, "torn"); return err },
		"ImportSession": func() error { _, err := ro.ImportSession(e.ctx, root("imp", 1), nil, nil); return err },
		"AcquireLease":  func() error { _, err := ro.AcquireLease(e.ctx, "c", holder("h", time.Minute)); return err },
		"PutCheckpoint": func() error {
			return ro.PutCheckpoint(e.ctx, backend.CheckpointRecord{Witness: root("p", 1), AsOfSeq: -1, Rows: []byte(`{}`)})
		},
		"ClearCheckpoints": func() error { _, err := ro.ClearCheckpoints(e.ctx); return err },
		"Update":           func() error { return ro.Update(e.ctx, func(backend.Store) error { return nil }) },
	}
	for name, write := range writes {
		if err := write(); err == nil {
			t.Errorf("%s on a read-only open succeeded", name)
		}
	}
	if after := e.dump(ro); after != before {
		t.Errorf("read-only open changed the store:\n%s\nwant\n%s", after, before)
	}
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}
	if afterFiles := fingerprint(); afterFiles != beforeFiles {
		t.Errorf("read-only open changed what is stored:\n%s\nwant\n%s", afterFiles, beforeFiles)
	}
}

func testCancellation(t *testing.T, e *env) {
	e.create(root("p", 1), turn(0, 1))
	e.create(child("c", "p", 2), nil)
	ctx, cancel := context.WithCancel(e.ctx)
	cancel()
	calls := map[string]func() error{
		"Header":     func() error { _, err := e.b.Header(ctx, "p"); return err },
		"ChildrenOf": func() error { return e.b.ChildrenOf(ctx, "p", func(session.Header) error { return nil }) },
		"ListHeaders": func() error {
			return e.b.ListHeaders(ctx, func(session.Header) error { return nil })
		},
		"Inspect":       func() error { _, err := e.b.Inspect(ctx, "p"); return err },
		"Audit":         func() error { _, err := e.b.Audit(ctx, "p"); return err },
		"CreateSession": func() error { return e.b.CreateSession(ctx, root("new", 1), nil) },
		"Append":        func() error { return e.b.Append(ctx, "p", 6, turn(6, 2)) },
		"AcquireLease":  func() error { _, err := e.b.AcquireLease(ctx, "c", holder("h", time.Minute)); return err },
		"LiveSessions":  func() error { _, err := e.b.LiveSessions(ctx); return err },
		"Now":           func() error { _, err := e.b.Now(ctx); return err },
		"View":          func() error { return e.b.View(ctx, func(backend.Store) error { return nil }) },
		"Update":        func() error { return e.b.Update(ctx, func(backend.Store) error { return nil }) },
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a cancelled context = %v, want context.Canceled", name, err)
		}
	}
	in := e.inspect(e.b, "p")
	if len(in.Events) != 6 {
		t.Errorf("cancelled calls changed p: %d events", len(in.Events))
	}
	if _, err := e.b.Header(e.ctx, "new"); !errors.Is(err, backend.ErrNotFound) {
		t.Errorf("a cancelled CreateSession stored the session: %v", err)
	}
}

// DescriptorsAt gives the data of the event at each named seq when that
// event is a version-3 descriptor, bytes as stored, and never for another
// event type, a seq past the log or an unknown session; a descriptor of
// another version it may leave out, but if given it is given as stored.
func testDescriptorsAt(t *testing.T, e *env) {
	r := e.b
	e.create(root("p", 1), turn(0, 1))
	v3 := `{"version":3,  "mode":"continuable","provider":"spawn","label":"later"}`
	events := []session.Event{
		{Type: session.TypeDescriptor, Seq: 0, Time: 1, Data: json.RawMessage(`{"version":2,"mode":"continuable","provider":"spawn","label":"first"}`)},
		{Type: session.TypeDescriptor, Seq: 1, Time: 2, Data: json.RawMessage(v3)},
	}
	e.create(child("c", "p", 2), append(events, turn(2, 1)...))
	e.create(child("d", "p", 3), turn(0, 1))
	got, err := r.DescriptorsAt(e.ctx, map[string]int64{"c": 1, "d": 0, "p": 0, "ghost": 0})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || string(got["c"]) != v3 {
		t.Fatalf("DescriptorsAt = %q, want only c's event at seq 1 as stored", got)
	}
	got, err = r.DescriptorsAt(e.ctx, map[string]int64{"c": 0})
	if d, ok := got["c"]; err != nil || len(got) > 1 || (ok && !strings.Contains(string(d), `"first"`)) {
		t.Fatalf("DescriptorsAt c@0 = %q, %v", got, err)
	}
	if got, err := r.DescriptorsAt(e.ctx, map[string]int64{"c": 9}); err != nil || len(got) != 0 {
		t.Fatalf("seq past the log: %q, %v", got, err)
	}
}
