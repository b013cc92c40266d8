package sqlitepersist

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/storedlog"
)

func TestCreateInspectRoundTripKeepsAbsentAndEmptyApart(t *testing.T) {
	ctx := context.Background()
	s, _ := openStore(t)
	h := session.Header{
		Version: 0, ID: "full", CreatedAt: 1_700_000_000_123, Cwd: ptr("/w"),
		ParentSession: ptr("p"), SeedLength: ptr(int64(0)), Origin: ptr(session.OriginSubagent),
		DelegationDepth: ptr(int64(2)), AgentPreset: ptr("reviewer"),
	}
	b := newLog().add(session.TypeEndSeed, `{}`).turnStart().user("q").stepStart()
	b.assistant("a")
	// An empty sourceEventSeqs is allowed on assistant/message and means
	// something other than an absent one.
	b.events[len(b.events)-1].SourceEventSeqs, b.events[len(b.events)-1].HasSourceEventSeqs = []int64{}, true
	b.assistant("b")
	b.events[len(b.events)-1].SourceEventSeqs, b.events[len(b.events)-1].HasSourceEventSeqs = []int64{2, 3}, true
	b.add("plugin/custom", `{"x":[1,2,{"k":"v"}]}`)
	b.events[len(b.events)-1].Ignorable = true
	// Data is kept byte for byte, whitespace and key order included.
	b.add("todo/write", `{ "todos" : [ {"status":"pending","content":"é\u00e9"} ] }`)
	b.stepEnd().turnEnd()
	if err := s.CreateSession(ctx, h, b.events); err != nil {
		t.Fatal(err)
	}

	got, err := s.Header(ctx, "full")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, h) {
		t.Errorf("Header = %+v, want %+v", got, h)
	}
	ins, err := s.Inspect(ctx, "full")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(ins.Events, b.events) {
		t.Errorf("Inspect events differ:\n got %+v\nwant %+v", ins.Events, b.events)
	}
	if !ins.Verified || ins.Torn != nil || len(ins.Closers) != 0 {
		t.Errorf("Inspect: verified %v, torn %v, closers %v", ins.Verified, ins.Torn, ins.Closers)
	}

	bare := session.Header{ID: "bare", CreatedAt: 5}
	if err := s.CreateSession(ctx, bare, nil); err != nil {
		t.Fatal(err)
	}
	got, err = s.Header(ctx, "bare")
	if err != nil || !reflect.DeepEqual(got, bare) {
		t.Errorf("unseeded header = %+v, %v; want %+v (nil optionals stay nil)", got, err, bare)
	}
	ins, err = s.Inspect(ctx, "bare")
	if err != nil || len(ins.Events) != 0 || len(ins.Closers) != 0 {
		t.Errorf("empty session: %+v, %v", ins, err)
	}
}

func TestUnknownSessionIsNotFound(t *testing.T) {
	ctx := context.Background()
	s, _ := openStore(t)
	_, errHeader := s.Header(ctx, "ghost")
	_, errInspect := s.Inspect(ctx, "ghost")
	_, errTypes := s.InspectTypes(ctx, "ghost", session.TypeDescriptor)
	_, errLoad := s.Load(ctx, "ghost")
	errAppend := s.Append(ctx, "ghost", 0, newLog().turnStart().events)
	for name, err := range map[string]error{"Header": errHeader, "Inspect": errInspect, "InspectTypes": errTypes, "Load": errLoad, "Append": errAppend} {
		if !errors.Is(err, backend.ErrNotFound) || dsherr.CodeOf(err) != dsherr.NotFound || !strings.Contains(err.Error(), `"ghost"`) {
			t.Errorf("%s: %v, want backend.ErrNotFound naming the id", name, err)
		}
	}
}

func TestCreateDuplicateRefusedWithoutTouchingOriginal(t *testing.T) {
	ctx := context.Background()
	s, _ := openStore(t)
	if err := s.CreateSession(ctx, rootHeader("s"), newLog().completeTurn("one").events); err != nil {
		t.Fatal(err)
	}
	before := dumpSession(t, s, "s")
	other := rootHeader("s")
	other.Cwd = ptr("/elsewhere")
	err := s.CreateSession(ctx, other, newLog().turnStart().events)
	if !errors.Is(err, backend.ErrDuplicate) || dsherr.CodeOf(err) != dsherr.AlreadyExists {
		t.Fatalf("duplicate create: %v, want backend.ErrDuplicate / ALREADY_EXISTS", err)
	}
	if after := dumpSession(t, s, "s"); after != before {
		t.Errorf("duplicate create changed the original:\n%s\n%s", before, after)
	}
}

func TestCreateRefusesInvalidHeaderOrSeed(t *testing.T) {
	ctx := context.Background()
	s, _ := openStore(t)
	relative := rootHeader("rel")
	relative.Cwd = ptr("relative/dir")
	gap := newLog().turnStart().events
	gap[0].Seq = 1
	for name, c := range map[string]struct {
		h      session.Header
		events []session.Event
		rule   string
	}{
		"relative cwd":    {relative, nil, session.RuleHeaderCwd},
		"newer version":   {session.Header{Version: 99, ID: "v99"}, nil, session.RuleFormatVersion},
		"seed with a gap": {rootHeader("gap"), gap, session.RuleSeqContiguous},
	} {
		err := s.CreateSession(ctx, c.h, c.events)
		var ve *session.ValidationError
		if !errors.As(err, &ve) || ve.Rule != c.rule {
			t.Errorf("%s: %v, want rule %s", name, err, c.rule)
		}
		if _, err := s.Header(ctx, c.h.ID); !errors.Is(err, backend.ErrNotFound) {
			t.Errorf("%s: refused session was stored (%v)", name, err)
		}
	}
}

func TestAppendSingleAndBatchedRoundTrip(t *testing.T) {
	ctx := context.Background()
	s, _ := openStore(t)
	if err := s.CreateSession(ctx, rootHeader("s"), nil); err != nil {
		t.Fatal(err)
	}
	b := newLog().completeTurn("batched")
	if err := s.Append(ctx, "s", 0, b.events); err != nil {
		t.Fatal(err)
	}
	// Then event by event, the way a live turn is written.
	before := len(b.events)
	b.turnStart().user("single").stepStart().assistant("calling", "c1").toolCall("c1").toolResult("c1", "out").stepEnd().turnEnd()
	for i, e := range b.events[before:] {
		if err := s.Append(ctx, "s", int64(before+i), []session.Event{e}); err != nil {
			t.Fatalf("append seq %d: %v", e.Seq, err)
		}
	}
	if err := s.Append(ctx, "s", int64(len(b.events)), nil); err != nil {
		t.Fatalf("empty append: %v", err)
	}
	ins, err := s.Inspect(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(ins.Events, b.events) {
		t.Errorf("log after appends:\n got %v\nwant %v", types(ins.Events), types(b.events))
	}
	var revision int64
	s.Querier().QueryRowContext(ctx, "SELECT revision FROM sessions WHERE id = 's'").Scan(&revision)
	if want := int64(1 + 1 + len(b.events) - before); revision != want {
		t.Errorf("revision %d, want %d (one per committed write)", revision, want)
	}
}

func TestAppendNeverRewritesEarlierRows(t *testing.T) {
	ctx := context.Background()
	s, _ := openStore(t)
	b := newLog().completeTurn("one")
	if err := s.CreateSession(ctx, rootHeader("s"), b.events); err != nil {
		t.Fatal(err)
	}
	rowsBefore := rowDump(t, s, "s")
	n := len(b.events)
	b.completeTurn("two")
	if err := s.Append(ctx, "s", int64(n), b.events[n:]); err != nil {
		t.Fatal(err)
	}
	if rowsAfter := rowDump(t, s, "s"); !strings.HasPrefix(rowsAfter, rowsBefore) {
		t.Errorf("earlier rows changed by append:\n%s\n%s", rowsBefore, rowsAfter)
	}
}

// rowDump renders the events rows with their rowids.
func rowDump(t *testing.T, s *Store, id string) string {
	var sb strings.Builder
	dumpQuery(t, context.Background(), s, &sb, "SELECT rowid, * FROM events WHERE session_id = ? ORDER BY seq", id)
	return sb.String()
}

func TestAppendRejectsStaleWriter(t *testing.T) {
	ctx := context.Background()
	s, _ := openStore(t)
	b := newLog().completeTurn("one")
	if err := s.CreateSession(ctx, rootHeader("s"), b.events); err != nil {
		t.Fatal(err)
	}
	stored := int64(len(b.events))
	next := continueFrom(b.events).turnStart().events
	before := dumpSession(t, s, "s")
	for _, expected := range []int64{stored - 1, stored + 1, 0} {
		err := s.Append(ctx, "s", expected, next)
		var stale *backend.StaleWriterError
		if !errors.As(err, &stale) || stale.Expected != expected || stale.Stored != stored || dsherr.CodeOf(err) != dsherr.StaleWriter {
			t.Errorf("expected %d: %v, want backend.StaleWriterError{%d, %d}", expected, err, expected, stored)
		}
	}
	if after := dumpSession(t, s, "s"); after != before {
		t.Errorf("stale append wrote:\n%s\n%s", before, after)
	}
	// Two writers that both read next = stored: the second one loses.
	if err := s.Append(ctx, "s", stored, next); err != nil {
		t.Fatal(err)
	}
	var stale *backend.StaleWriterError
	if err := s.Append(ctx, "s", stored, next); !errors.As(err, &stale) || stale.Stored != stored+1 {
		t.Errorf("second writer: %v, want stale with stored %d", err, stored+1)
	}
}

// TestAppendRefusesInvalidBatch appends, for each family of DSH's rules, a
// batch whose last event breaks it; the whole batch is refused and the stored
// log and bookkeeping stay byte-identical.
func TestAppendRefusesInvalidBatch(t *testing.T) {
	ctx := context.Background()
	base := newLog().turnStart().user("q").stepStart().assistant("calling", "c1").toolCall("c1").toolResult("c1", "first output")
	cases := []struct {
		name string
		rule string
		bad  func(b *logBuilder)
	}{
		{"seq gap", session.RuleSeqContiguous, func(b *logBuilder) { b.next++; b.stepEnd() }},
		{"repeated seq", session.RuleSeqContiguous, func(b *logBuilder) { b.next--; b.stepEnd() }},
		{"surface event without surfaceOp", session.RuleSurfaceOpRequired, func(b *logBuilder) {
			b.user("x")
			b.events[len(b.events)-1].SurfaceOp = nil
		}},
		{"surfaceOp on a log-only event", session.RuleSurfaceOpForbidden, func(b *logBuilder) {
			b.stepEnd()
			b.events[len(b.events)-1].SurfaceOp = json.RawMessage(`"append"`)
		}},
		{"user message without id", session.RuleUserMessageShape, func(b *logBuilder) {
			b.addSurface(session.TypeUserMessage, `{"content":[],"source":{"kind":"user"},"role":"user"}`)
		}},
		{"assistant message without model source", session.RuleAssistantMessageShape, func(b *logBuilder) {
			b.addSurface(session.TypeAssistantMsg, `{"turn":1,"step":1,"message":{"id":"m","role":"assistant","content":[],"source":{"kind":"user"}}}`)
		}},
		{"replace of a range that is not on the surface", session.RuleReplaceRange, func(b *logBuilder) {
			b.user("summary")
			e := &b.events[len(b.events)-1]
			e.SurfaceOp = json.RawMessage(`{"op":"replace","start":2,"end":2}`)
			e.SourceEventSeqs, e.HasSourceEventSeqs = []int64{2}, true
		}},
		{"sourceEventSeqs naming a later seq", session.RuleSourceSeqsNotEarlier, func(b *logBuilder) {
			b.user("x")
			e := &b.events[len(b.events)-1]
			e.SourceEventSeqs, e.HasSourceEventSeqs = []int64{e.Seq}, true
		}},
		{"tool/result replacement changing more than the output", session.RuleToolResultReplaceDiff, func(b *logBuilder) {
			b.addSurface(session.TypeToolResult, `{"turn":1,"step":1,"message":{"id":"r-other","role":"user","source":{"kind":"tool","callId":"c1"},"content":[{"type":"tool-result","toolCallId":"c1","content":[]}]}}`)
			e := &b.events[len(b.events)-1]
			e.SurfaceOp = json.RawMessage(`{"op":"replace","start":5,"end":5}`)
			e.SourceEventSeqs, e.HasSourceEventSeqs = []int64{5}, true
		}},
		{"unknown type not marked ignorable", session.RuleUnknownType, func(b *logBuilder) { b.add("future/thing", `{}`) }},
		{"unknown envelope key", session.RuleEnvelopeKeys, func(b *logBuilder) {
			b.stepEnd()
			b.events[len(b.events)-1].UnknownKeys = []string{"extra"}
		}},
		{"data absent", session.RuleEnvelopeData, func(b *logBuilder) { b.stepEnd(); b.events[len(b.events)-1].Data = nil }},
		{"request/header without model", session.RuleRequestHeaderShape, func(b *logBuilder) {
			b.add("request/header", `{"header":{"config":{"provider":"p"}},"reason":"change"}`)
		}},
		{"legacy vocabulary", session.RuleLegacyVocabulary, func(b *logBuilder) { b.add("mode/set", `{}`) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, _ := openStore(t)
			if err := s.CreateSession(ctx, rootHeader("s"), base.events); err != nil {
				t.Fatal(err)
			}
			before := dumpSession(t, s, "s")
			b := continueFrom(base.events)
			b.step = 1
			b.chunk("valid first event of the batch")
			c.bad(b)
			err := s.Append(ctx, "s", int64(len(base.events)), b.events)
			var ve *session.ValidationError
			if !errors.As(err, &ve) || ve.Rule != c.rule {
				t.Fatalf("Append: %v, want a ValidationError with rule %s", err, c.rule)
			}
			if dsherr.CodeOf(err) == "" {
				t.Errorf("refusal carries no dsherr code: %v", err)
			}
			if after := dumpSession(t, s, "s"); after != before {
				t.Errorf("refused batch changed the store:\n%s\n%s", before, after)
			}
		})
	}
}

// truncateRowData truncates the data of one row the way a torn
// write would leave it.
func truncateRowData(t *testing.T, s *Store, id string, seq int64) {
	t.Helper()
	mustExec(t, s, `UPDATE events SET data = '{"trunc' WHERE session_id = ? AND seq = ?`, id, seq)
}

func TestTornTailInspectCutsLoadRepairsOnce(t *testing.T) {
	ctx := context.Background()
	s, path := openStore(t)
	b := newLog().completeTurn("one").turnStart().user("two").stepStart().chunk("par").chunk("tial")
	if err := s.CreateSession(ctx, rootHeader("s"), b.events); err != nil {
		t.Fatal(err)
	}
	last := b.events[len(b.events)-1].Seq
	truncateRowData(t, s, "s", last)
	s.Close()

	before := dbFiles(t, path)
	ro := openRO(t, path)
	ins, err := ro.Inspect(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	ro.Close()
	if after := dbFiles(t, path); after != before {
		t.Fatal("Inspect of a torn log changed the database or its WAL")
	}
	if !reflect.DeepEqual(ins.Events, b.events[:last]) {
		t.Errorf("Inspect events %v, want the prefix before seq %d", types(ins.Events), last)
	}
	if ins.Torn == nil || ins.Torn.FromSeq != last || string(ins.Torn.Raw) != `{"trunc` || !strings.Contains(ins.Torn.Reason, "JSON") {
		t.Errorf("Torn = %+v, want from seq %d with the stored bytes", ins.Torn, last)
	}
	if ins.Verified {
		t.Error("a log changed behind dsh's back is still reported verified")
	}
	wantClosers := []string{session.TypeStepEnd, session.TypeTurnEnd}
	if got := types(ins.Closers); !reflect.DeepEqual(got, wantClosers) || ins.Closers[0].Seq != last {
		t.Errorf("Closers %v starting at %d, want %v from seq %d", got, ins.Closers[0].Seq, wantClosers, last)
	}

	// The read-write store's Inspect does not write either.
	rw := reopen(t, path)
	before = dbFiles(t, path)
	if _, err := rw.Inspect(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if after := dbFiles(t, path); after != before {
		t.Fatal("Inspect through a read-write store changed the files")
	}

	loaded, err := rw.Load(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	if loaded.Torn == nil || loaded.Torn.FromSeq != last || !reflect.DeepEqual(loaded.Closers, ins.Closers) || !reflect.DeepEqual(loaded.Events, ins.Events) {
		t.Errorf("Load = %+v, want the repair Inspect announced", loaded)
	}
	after, err := rw.Inspect(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	want := append(append([]session.Event{}, ins.Events...), ins.Closers...)
	if !reflect.DeepEqual(after.Events, want) || after.Torn != nil || len(after.Closers) != 0 || !after.Verified {
		t.Errorf("after Load: %v torn %v closers %v verified %v", types(after.Events), after.Torn, after.Closers, after.Verified)
	}

	stored := dumpSession(t, rw, "s")
	again, err := rw.Load(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	if again.Torn != nil || len(again.Closers) != 0 || !reflect.DeepEqual(again.Events, want) {
		t.Errorf("second Load repaired again: %+v", again)
	}
	if dumpSession(t, rw, "s") != stored {
		t.Error("second Load wrote")
	}
	// The repaired log continues at the next seq, on the saved validator state.
	next := continueFrom(want).turnStart().events
	if err := rw.Append(ctx, "s", int64(len(want)), next); err != nil {
		t.Fatalf("append after repair: %v", err)
	}
}

func TestDamageBeforeLastTurnEndIsCorruption(t *testing.T) {
	ctx := context.Background()
	b := newLog().completeTurn("one").completeTurn("two").turnStart()
	damaged := int64(3) // assistant/message of turn one
	for name, damage := range map[string]func(t *testing.T, s *Store){
		"undecodable data": func(t *testing.T, s *Store) { truncateRowData(t, s, "s", damaged) },
		"seq gap": func(t *testing.T, s *Store) {
			mustExec(t, s, "DELETE FROM events WHERE session_id = 's' AND seq = ?", damaged-1)
		},
		"bad source seqs": func(t *testing.T, s *Store) {
			mustExec(t, s, `UPDATE events SET source_event_seqs = '[1,' WHERE session_id = 's' AND seq = ?`, damaged)
		},
	} {
		t.Run(name, func(t *testing.T) {
			s, _ := openStore(t)
			if err := s.CreateSession(ctx, rootHeader("s"), b.events); err != nil {
				t.Fatal(err)
			}
			damage(t, s)
			before := dumpSession(t, s, "s")
			_, errInspect := s.Inspect(ctx, "s")
			_, errLoad := s.Load(ctx, "s")
			errAppend := s.Append(ctx, "s", int64(len(b.events)), continueFrom(b.events).user("x").events)
			for op, err := range map[string]error{"Inspect": errInspect, "Load": errLoad, "Append": errAppend} {
				var c *backend.CorruptRowError
				if !errors.Is(err, backend.ErrCorrupt) || !errors.As(err, &c) || dsherr.CodeOf(err) != dsherr.InvalidLog {
					t.Errorf("%s: %v, want backend.ErrCorrupt", op, err)
					continue
				}
				if c.Seq != damaged {
					t.Errorf("%s names seq %d, want %d", op, c.Seq, damaged)
				}
			}
			if dumpSession(t, s, "s") != before {
				t.Error("a refused read wrote")
			}
		})
	}
}

func TestGapAfterLastTurnEndIsTorn(t *testing.T) {
	ctx := context.Background()
	s, _ := openStore(t)
	b := newLog().completeTurn("one").turnStart().user("two").stepStart().chunk("a").chunk("b")
	if err := s.CreateSession(ctx, rootHeader("s"), b.events); err != nil {
		t.Fatal(err)
	}
	gap := b.events[len(b.events)-2].Seq
	mustExec(t, s, "DELETE FROM events WHERE session_id = 's' AND seq = ?", gap)
	ins, err := s.Inspect(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	if ins.Torn == nil || ins.Torn.FromSeq != gap+1 || len(ins.Events) != int(gap) {
		t.Fatalf("torn %+v with %d events, want torn from %d after %d events", ins.Torn, len(ins.Events), gap+1, gap)
	}
	if _, err := s.Load(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	var maxSeq int64
	s.Querier().QueryRowContext(ctx, "SELECT max(seq) FROM events WHERE session_id = 's'").Scan(&maxSeq)
	if want := gap - 1 + 2; maxSeq != want { // prefix, then step/end and turn/end closers
		t.Errorf("after repair the last seq is %d, want %d", maxSeq, want)
	}
}

func TestAppendRefusesTornTailUntilLoaded(t *testing.T) {
	ctx := context.Background()
	s, _ := openStore(t)
	b := newLog().completeTurn("one").turnStart().user("two")
	if err := s.CreateSession(ctx, rootHeader("s"), b.events); err != nil {
		t.Fatal(err)
	}
	last := b.events[len(b.events)-1].Seq
	truncateRowData(t, s, "s", last)
	before := dumpSession(t, s, "s")
	err := s.Append(ctx, "s", last+1, continueFrom(b.events).stepStart().events)
	if err == nil || dsherr.CodeOf(err) != dsherr.InvalidLog || !strings.Contains(err.Error(), "torn tail") {
		t.Fatalf("append to a torn log: %v", err)
	}
	if dumpSession(t, s, "s") != before {
		t.Error("refused append wrote")
	}
}

func TestInterruptedTurnIsReportedByInspectAndClosedByLoad(t *testing.T) {
	ctx := context.Background()
	s, _ := openStore(t)
	// c1 was recorded as a tool/call, c2 only announced; the step is open.
	b := newLog().completeTurn("one").turnStart().user("two").stepStart().assistant("two calls", "c1", "c2").toolCall("c1")
	if err := s.CreateSession(ctx, rootHeader("s"), b.events); err != nil {
		t.Fatal(err)
	}
	callSeq := b.events[len(b.events)-1].Seq
	before := dumpSession(t, s, "s")
	ins, err := s.Inspect(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	if dumpSession(t, s, "s") != before {
		t.Fatal("Inspect wrote closers")
	}
	want := []string{session.TypeToolResult, session.TypeToolResult, session.TypeStepEnd, session.TypeTurnEnd}
	if got := types(ins.Closers); !reflect.DeepEqual(got, want) {
		t.Fatalf("closers %v, want %v", got, want)
	}
	for i, c := range ins.Closers {
		if c.Seq != int64(len(b.events)+i) {
			t.Errorf("closer %d has seq %d, want %d", i, c.Seq, len(b.events)+i)
		}
	}
	if !bytesContain(ins.Closers[0].Data, "TOOL_OUTCOME_UNKNOWN") || !reflect.DeepEqual(ins.Closers[0].SourceEventSeqs, []int64{callSeq}) {
		t.Errorf("recorded call closer: %s %v", ins.Closers[0].Data, ins.Closers[0].SourceEventSeqs)
	}
	if !bytesContain(ins.Closers[1].Data, "TOOL_NOT_STARTED") || ins.Closers[1].HasSourceEventSeqs {
		t.Errorf("unrecorded call closer: %s", ins.Closers[1].Data)
	}
	if !bytesContain(ins.Closers[3].Data, `"interrupted"`) {
		t.Errorf("turn/end closer: %s", ins.Closers[3].Data)
	}

	loaded, err := s.Load(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	if loaded.Torn != nil || !reflect.DeepEqual(loaded.Closers, ins.Closers) {
		t.Errorf("Load closers %v, want %v", types(loaded.Closers), types(ins.Closers))
	}
	after, err := s.Inspect(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	if len(after.Closers) != 0 || !reflect.DeepEqual(after.Events, append(append([]session.Event{}, b.events...), ins.Closers...)) {
		t.Errorf("after Load: %v + closers %v", types(after.Events), types(after.Closers))
	}
	next := int64(len(after.Events))
	if err := s.Append(ctx, "s", next, continueFrom(after.Events).turnStart().events); err != nil {
		t.Errorf("resume after closing: %v", err)
	}
}

func bytesContain(b []byte, sub string) bool { return strings.Contains(string(b), sub) }

func TestForkSeedsRecordTheExactInheritedCut(t *testing.T) {
	ctx := context.Background()
	s, _ := openStore(t)
	parent := newLog().completeTurn("one").completeTurn("two").turnStart().user("still running")
	if err := s.CreateSession(ctx, rootHeader("parent"), parent.events); err != nil {
		t.Fatal(err)
	}
	pins, err := s.Inspect(ctx, "parent")
	if err != nil {
		t.Fatal(err)
	}
	seed := session.ForkPrefix(pins.Events)
	cut := int64(len(seed))
	child := rootHeader("fork")
	child.ParentSession, child.SeedLength = ptr("parent"), ptr(cut)
	childLog := continueFrom(seed).add(session.TypeEndSeed, `{}`).completeTurn("own work")
	initial := append(append([]session.Event{}, seed...), childLog.events...)
	if err := s.CreateSession(ctx, child, initial); err != nil {
		t.Fatal(err)
	}
	empty := rootHeader("empty-fork")
	empty.ParentSession, empty.SeedLength = ptr("parent"), ptr(int64(0))
	if err := s.CreateSession(ctx, empty, newLog().add(session.TypeEndSeed, `{}`).events); err != nil {
		t.Fatal(err)
	}

	ins, err := s.Inspect(ctx, "fork")
	if err != nil {
		t.Fatal(err)
	}
	if ins.Header.SeedLength == nil || *ins.Header.SeedLength != cut {
		t.Fatalf("seedLength %v, want %d", ins.Header.SeedLength, cut)
	}
	if !reflect.DeepEqual(ins.Events[:cut], seed) || ins.Events[cut].Type != session.TypeEndSeed {
		t.Errorf("child log does not start with the parent's prefix and an end-seed: %v", types(ins.Events))
	}
	eh, err := s.Header(ctx, "empty-fork")
	if err != nil || eh.SeedLength == nil || *eh.SeedLength != 0 || !eh.IsSeeded() {
		t.Errorf("empty fork header %+v (%v): want seeded with cut 0", eh, err)
	}
	var children []string
	if err := s.ChildrenOf(ctx, "parent", func(h session.Header) error { children = append(children, h.ID); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(children) != 2 {
		t.Errorf("ChildrenOf(parent) = %v", children)
	}
}

func TestTriggersClearVerifiedOnOutsideChanges(t *testing.T) {
	ctx := context.Background()
	b := newLog().completeTurn("one").descriptor("c").completeTurn("two")
	changes := map[string]string{
		"update event data":    `UPDATE events SET data = '{"turn":1,"reason":{"kind":"blocked"}}' WHERE session_id = 's' AND seq = 5`,
		"insert a row":         `INSERT INTO events (session_id, seq, type, time, data) VALUES ('s', 100, 'step/end', 0, '{}')`,
		"delete a row":         `DELETE FROM events WHERE session_id = 's' AND seq = 12`,
		"update header":        `UPDATE sessions SET cwd = '/moved' WHERE id = 's'`,
		"tamper with next_seq": `UPDATE sessions SET next_seq = 99 WHERE id = 's'`,
		"insert a torn tail":   `INSERT INTO torn_tails VALUES ('s', 14, 'x', x'00')`,
	}
	for name, change := range changes {
		t.Run(name, func(t *testing.T) {
			s, _ := openStore(t)
			if err := s.CreateSession(ctx, rootHeader("s"), b.events); err != nil {
				t.Fatal(err)
			}
			if err := s.CreateSession(ctx, rootHeader("other"), b.events); err != nil {
				t.Fatal(err)
			}
			mustExec(t, s, change)
			if verifiedFlag(t, s, "s") {
				t.Errorf("verified still set after %q", change)
			}
			if !verifiedFlag(t, s, "other") {
				t.Error("another session lost its verified flag")
			}
			assertInspectTypesMatches(t, s, "s")
		})
	}
}

func verifiedFlag(t *testing.T, s *Store, id string) bool {
	t.Helper()
	var v int
	if err := s.Querier().QueryRowContext(context.Background(), "SELECT verified FROM sessions WHERE id = ?", id).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v == 1
}

// assertInspectTypesMatches checks, for several type sets, that InspectTypes
// returns exactly what Inspect returns filtered to those types (or the same
// error).
func assertInspectTypesMatches(t *testing.T, s *Store, id string) {
	t.Helper()
	ctx := context.Background()
	full, fullErr := s.Inspect(ctx, id)
	for _, set := range [][]string{
		{session.TypeDescriptor},
		{session.TypeTurnEnd},
		{session.TypeToolResult, session.TypeStepEnd},
		{session.TypeUserMessage, session.TypeDescriptor},
		{"no/such-type"},
		// The catalog index's types (migration 0008), all and some.
		{session.TypeCatalog, session.TypeEndSeed, session.TypeDescriptor},
		{session.TypeEndSeed, session.TypeDescriptor},
	} {
		got, err := s.InspectTypes(ctx, id, set...)
		if fullErr != nil {
			if err == nil || err.Error() != fullErr.Error() {
				t.Errorf("InspectTypes%v error %v, Inspect error %v", set, err, fullErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("InspectTypes%v: %v (Inspect succeeded)", set, err)
			continue
		}
		want := &backend.Inspection{Header: full.Header, Events: storedlog.FilterTypes(full.Events, set), Torn: full.Torn,
			Closers: storedlog.FilterTypes(full.Closers, set), Verified: full.Verified}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("InspectTypes%v =\n %+v\nwant\n %+v", set, got, want)
		}
	}
}

func TestInspectTypesFastPathMatchesInspect(t *testing.T) {
	ctx := context.Background()
	s, _ := openStore(t)
	logs := map[string][]session.Event{
		"balanced with descriptors": newLog().completeTurn("a").descriptor("c1").completeTurn("b").descriptor("c2").events,
		"open turn with calls":      newLog().completeTurn("a").turnStart().descriptor("c").user("x").stepStart().assistant("t", "k1", "k2").toolCall("k1").toolResult("k1", "o").events,
		"open turn, closed step":    newLog().turnStart().user("x").stepStart().assistant("t", "k1").stepEnd().events,
		"no turns at all":           newLog().user("x").descriptor("c").events,
		"empty":                     nil,
	}
	for name, events := range logs {
		if err := s.CreateSession(ctx, rootHeader(name), events); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !verifiedFlag(t, s, name) {
			t.Fatalf("%s: not verified after CreateSession", name)
		}
		t.Run(name, func(t *testing.T) { assertInspectTypesMatches(t, s, name) })
	}

	var plan strings.Builder
	dumpQuery(t, ctx, s, &plan, "EXPLAIN QUERY PLAN SELECT "+eventColumns+" FROM events WHERE session_id = ? AND type = '"+session.TypeDescriptor+"' ORDER BY seq", "x")
	if !strings.Contains(plan.String(), "events_descriptors") {
		t.Errorf("descriptor query does not use the partial index:\n%s", plan.String())
	}
	// A 0.1.7 listing's reads (catalog facts, end-seed, descriptors) are a
	// range of the catalog index, one session at a time and in a batch.
	catalogTypes := []string{session.TypeCatalog, session.TypeEndSeed, session.TypeDescriptor}
	for _, types := range [][]string{catalogTypes, {session.TypeCatalog}} {
		cond, args := typeCondition(types)
		query := "SELECT " + eventColumns + " FROM events WHERE session_id = ? AND " + cond + " ORDER BY seq"
		plan.Reset()
		dumpQuery(t, ctx, s, &plan, "EXPLAIN QUERY PLAN "+query, append([]any{"x"}, args...)...)
		if !strings.Contains(plan.String(), "events_catalog") {
			t.Errorf("%v: the query does not use the catalog index:\n%s", types, plan.String())
		}
		filter, fargs := joinedTypeFilter(types)
		plan.Reset()
		dumpQuery(t, ctx, s, &plan, "EXPLAIN QUERY PLAN SELECT e.seq FROM json_each(?1) j JOIN sessions s ON s.id = j.value LEFT JOIN events e ON e.session_id = s.id AND "+filter, append([]any{`["x"]`}, fargs...)...)
		if !strings.Contains(plan.String(), "events_catalog") {
			t.Errorf("%v: the batch does not use the catalog index:\n%s", types, plan.String())
		}
	}
}

func TestUnverifiedButValidLogAcceptsAppendAndIsReverified(t *testing.T) {
	ctx := context.Background()
	s, _ := openStore(t)
	b := newLog().completeTurn("one")
	if err := s.CreateSession(ctx, rootHeader("s"), b.events); err != nil {
		t.Fatal(err)
	}
	mustExec(t, s, `UPDATE events SET data = '{"turn":1}' WHERE session_id = 's' AND seq = 0`)
	if verifiedFlag(t, s, "s") {
		t.Fatal("still verified")
	}
	var stale *backend.StaleWriterError
	if err := s.Append(ctx, "s", 99, continueFrom(b.events).turnStart().events); !errors.As(err, &stale) || stale.Stored != int64(len(b.events)) {
		t.Fatalf("stale check on the slow path: %v", err)
	}
	if err := s.Append(ctx, "s", int64(len(b.events)), continueFrom(b.events).turnStart().events); err != nil {
		t.Fatal(err)
	}
	if !verifiedFlag(t, s, "s") {
		t.Error("append after full revalidation did not record the log as verified")
	}
}

func TestImportSessionIsFaithful(t *testing.T) {
	ctx := context.Background()
	s, _ := openStore(t)

	valid := newLog().completeTurn("one").events
	res, err := s.ImportSession(ctx, rootHeader("valid"), valid, nil)
	if err != nil || !res.Verified || res.Invalid != nil || res.Events != len(valid) {
		t.Fatalf("import of a valid log: %+v, %v", res, err)
	}
	if err := s.Append(ctx, "valid", int64(len(valid)), continueFrom(valid).turnStart().events); err != nil {
		t.Errorf("append to an imported verified log: %v", err)
	}

	// Invalid logs are stored as given and read back with the same verdict.
	invalid := newLog().completeTurn("one").completeTurn("two").events
	invalid[3].UnknownKeys = []string{"legacyField"}
	res, err = s.ImportSession(ctx, rootHeader("invalid"), invalid, nil)
	if err != nil {
		t.Fatal(err)
	}
	var ve *session.ValidationError
	if res.Verified || !errors.As(res.Invalid, &ve) || ve.Rule != session.RuleEnvelopeKeys {
		t.Fatalf("import result %+v, want unverified with an envelope-keys failure", res)
	}
	_, inspectErr := s.Inspect(ctx, "invalid")
	if inspectErr == nil || inspectErr.Error() != res.Invalid.Error() {
		t.Errorf("Inspect error %v, import reported %v", inspectErr, res.Invalid)
	}
	var n int
	s.Querier().QueryRowContext(ctx, "SELECT count(*) FROM events WHERE session_id = 'invalid'").Scan(&n)
	if n != len(invalid) {
		t.Errorf("%d rows stored, want %d", n, len(invalid))
	}

	// A torn tail is kept byte for byte until Load drops it.
	tornLog := newLog().completeTurn("one").turnStart().events
	tail := &backend.TornTail{FromSeq: int64(len(tornLog)), Reason: "unterminated line", Raw: []byte(`{"type":"user/mess`)}
	res, err = s.ImportSession(ctx, rootHeader("torn"), tornLog, tail)
	if err != nil || res.Verified || res.Invalid != nil || !reflect.DeepEqual(res.Torn, tail) {
		t.Fatalf("import with torn tail: %+v, %v", res, err)
	}
	ins, err := s.Inspect(ctx, "torn")
	if err != nil || !reflect.DeepEqual(ins.Torn, tail) || !reflect.DeepEqual(ins.Events, tornLog) || ins.Verified {
		t.Fatalf("Inspect of imported torn log: %+v, %v", ins, err)
	}
	if _, err := s.Load(ctx, "torn"); err != nil {
		t.Fatal(err)
	}
	ins, err = s.Inspect(ctx, "torn")
	if err != nil || ins.Torn != nil || !ins.Verified || len(ins.Events) != len(tornLog)+1 {
		t.Errorf("after Load: %+v, %v", ins, err)
	}

	if _, err := s.ImportSession(ctx, rootHeader("valid"), valid, nil); !errors.Is(err, backend.ErrDuplicate) {
		t.Errorf("re-import: %v, want backend.ErrDuplicate", err)
	}
	dup := newLog().turnStart().turnStart().events
	dup[1].Seq = 0
	if _, err := s.ImportSession(ctx, rootHeader("dupseq"), dup, nil); dsherr.CodeOf(err) != dsherr.InvalidInput || !strings.Contains(err.Error(), "seq 0") {
		t.Errorf("import with a repeated seq: %v, want INVALID_INPUT naming seq 0", err)
	}
	if _, err := s.Header(ctx, "dupseq"); !errors.Is(err, backend.ErrNotFound) {
		t.Errorf("failed import left a session behind: %v", err)
	}
}

// A read failure recorded by an import (migration 0007) is voided by every
// change that could change what a read of the log gives, as verified is;
// another session's record stays.
func TestTriggersClearReadFailureOnOutsideChanges(t *testing.T) {
	ctx := context.Background()
	invalid := newLog().completeTurn("one").descriptor("c").completeTurn("two").events
	for i := range invalid {
		if invalid[i].Type == session.TypeUserMessage {
			invalid[i].SurfaceOp = nil
			break
		}
	}
	changes := map[string]struct{ id, sql string }{
		"update event data":    {"s", `UPDATE events SET data = '{"turn":1,"reason":{"kind":"blocked"}}' WHERE session_id = 's' AND seq = 5`},
		"insert a row":         {"s", `INSERT INTO events (session_id, seq, type, time, data) VALUES ('s', 100, 'step/end', 0, '{}')`},
		"delete a row":         {"s", `DELETE FROM events WHERE session_id = 's' AND seq = 1`},
		"update header":        {"s", `UPDATE sessions SET cwd = '/moved' WHERE id = 's'`},
		"update the torn tail": {"s", `UPDATE torn_tails SET from_seq = 5 WHERE session_id = 's'`},
		"delete the torn tail": {"s", `DELETE FROM torn_tails WHERE session_id = 's'`},
		"update damaged rest":  {"d", `UPDATE damaged_logs SET raw = x'00' WHERE session_id = 'd'`},
		"delete damaged rest":  {"d", `DELETE FROM damaged_logs WHERE session_id = 'd'`},
	}
	for name, change := range changes {
		t.Run(name, func(t *testing.T) {
			s, _ := openStore(t)
			tail := &backend.TornTail{FromSeq: int64(len(invalid)), Reason: "unterminated line", Raw: []byte(`{"type":"st`)}
			if _, err := s.ImportSession(ctx, rootHeader("s"), invalid, tail); err != nil {
				t.Fatal(err)
			}
			if _, err := s.ImportSession(ctx, rootHeader("other"), invalid, nil); err != nil {
				t.Fatal(err)
			}
			damage := backend.DamagedLog{FromSeq: 2, Reason: "unparsable committed event at line 3", Encoding: "jsonl-text", Raw: []byte("{not json}\n")}
			if _, err := s.ImportDamagedSession(ctx, rootHeader("d"), invalid[:2], damage); err != nil {
				t.Fatal(err)
			}
			ids := []string{"s", "other", "d"}
			if got, err := s.ColdVerdicts(ctx, ids); err != nil || len(got) != 3 {
				t.Fatalf("ColdVerdicts before the change = %v, %v; want all three", got, err)
			}
			mustExec(t, s, change.sql)
			got, err := s.ColdVerdicts(ctx, ids)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := got[change.id]; ok {
				t.Errorf("%s's read failure still recorded after %q", change.id, change.sql)
			}
			if _, ok := got["other"]; !ok {
				t.Error("another session lost its recorded read failure")
			}
		})
	}
}
