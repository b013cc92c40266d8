package sqlitepersist

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/session"
)

// InspectVerifiedTypes returns, for every verified untorn log, exactly what
// InspectTypes returns (a log without events of those types included), and
// leaves out logs changed outside dsh, torn logs and unknown ids.
func TestInspectVerifiedTypesMatchesInspectTypes(t *testing.T) {
	ctx := context.Background()
	st, _ := openStore(t)
	descriptor := `{"version":2,"mode":"continuable","provider":"spawn","label":"x"}`
	for _, id := range []string{"a", "b", "changed", "torn"} {
		h := rootHeader(id)
		if err := st.CreateSession(ctx, h, newLog().add("subagent/descriptor", descriptor).add("turn/start", `{"turn":1}`).add("subagent/descriptor", descriptor).events); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.CreateSession(ctx, rootHeader("plain"), newLog().add("turn/start", `{"turn":1}`).events); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Querier().ExecContext(ctx, `UPDATE events SET time = time + 1 WHERE session_id = 'changed' AND seq = 1`); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Querier().ExecContext(ctx, `UPDATE events SET data = '{"trunc' WHERE session_id = 'torn' AND seq = 2`); err != nil {
		t.Fatal(err)
	}
	for _, types := range [][]string{{"subagent/descriptor"}, {"subagent/descriptor", "turn/start"}} {
		got, err := st.InspectVerifiedTypes(ctx, []string{"a", "b", "changed", "torn", "plain", "missing"}, types)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 3 || got["a"] == nil || got["b"] == nil || got["plain"] == nil {
			t.Fatalf("%v: batch served %v, want exactly a, b and plain", types, keys(got))
		}
		for _, id := range []string{"a", "b", "plain"} {
			one, err := st.InspectTypes(ctx, id, types...)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got[id].Header, one.Header) || !reflect.DeepEqual(got[id].Events, one.Events) {
				t.Errorf("%v: %s: batch %+v, one at a time %+v", types, id, got[id], one)
			}
		}
		if n := len(got["a"].Events); n != len(types)+1 {
			t.Errorf("%v: a: %d events, want %d", types, n, len(types)+1)
		}
	}
	if _, err := st.InspectVerifiedTypes(ctx, []string{"a"}, []string{"turn/end"}); err == nil {
		t.Error("a closer type was accepted")
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// InspectColdBatch answers in one statement what ColdVerdicts and then
// InspectVerifiedTypes of the ids without a verdict answer: read failures,
// registry folds (a verified log with a fold is answered by its fold), and
// the typed events of the other verified untorn logs; nothing else.
func TestInspectColdBatchMatchesVerdictsThenVerified(t *testing.T) {
	ctx := context.Background()
	st, _ := openStore(t)
	invalid := newLog().completeTurn("one").descriptor("c").completeTurn("two").events
	for i := range invalid {
		if invalid[i].Type == session.TypeUserMessage {
			invalid[i].SurfaceOp = nil
			break
		}
	}
	if _, err := st.ImportSession(ctx, rootHeader("invalid"), invalid, nil); err != nil {
		t.Fatal(err)
	}
	valid := newLog().completeTurn("one").descriptor("c").completeTurn("two").descriptor("d").events
	tail := &backend.TornTail{FromSeq: int64(len(valid)), Reason: "unterminated line", Raw: []byte(`{"type":"st`)}
	if _, err := st.ImportSession(ctx, rootHeader("torn"), valid, tail); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"folded", "plain", "changed"} {
		if err := st.CreateSession(ctx, rootHeader(id), valid); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.RecordRegistryFold(ctx, "folded", []byte("unit@1\n{}")); err != nil {
		t.Fatal(err)
	}
	mustExec(t, st, `UPDATE events SET time = time + 1 WHERE session_id = 'changed' AND seq = 1`)
	ids := []string{"invalid", "torn", "folded", "plain", "changed", "unknown"}
	for _, types := range [][]string{{session.TypeDescriptor}, {session.TypeDescriptor, session.TypeTurnStart}} {
		recorded, logs, err := st.InspectColdBatch(ctx, ids, types)
		if err != nil {
			t.Fatal(err)
		}
		wantRecorded, err := st.ColdVerdicts(ctx, ids)
		if err != nil {
			t.Fatal(err)
		}
		var rest []string
		for _, id := range ids {
			if _, ok := wantRecorded[id]; !ok {
				rest = append(rest, id)
			}
		}
		wantLogs, err := st.InspectVerifiedTypes(ctx, rest, types)
		if err != nil {
			t.Fatal(err)
		}
		if len(recorded) != 2 || len(logs) != 1 || logs["plain"] == nil {
			t.Fatalf("%v: verdicts for %v, logs of %v; want invalid and folded, then plain", types, keys(recorded), keys(logs))
		}
		for id, v := range wantRecorded {
			got := recorded[id]
			if fmt.Sprint(got.ReadErr) != fmt.Sprint(v.ReadErr) || string(got.RegistryFold) != string(v.RegistryFold) || (got.RegistryFold == nil) != (v.RegistryFold == nil) {
				t.Errorf("%v: %s: verdict %+v, ColdVerdicts %+v", types, id, got, v)
			}
		}
		if !reflect.DeepEqual(logs, wantLogs) {
			t.Errorf("%v: logs %+v, InspectVerifiedTypes %+v", types, logs, wantLogs)
		}
	}
}

// ChildListingCold lists exactly ChildListing's children, and gives each
// child without a checkpoint record what InspectColdBatch gives it (nothing
// when the batch leaves it out); a child with a record gets no cold read.
func TestChildListingColdMatchesListingThenBatch(t *testing.T) {
	ctx := context.Background()
	st, _ := openStore(t)
	if err := st.CreateSession(ctx, rootHeader("p"), nil); err != nil {
		t.Fatal(err)
	}
	valid := newLog().completeTurn("one").descriptor("c").completeTurn("two").descriptor("d").events
	invalid := newLog().completeTurn("one").descriptor("c").completeTurn("two").events
	for i := range invalid {
		if invalid[i].Type == session.TypeUserMessage {
			invalid[i].SurfaceOp = nil
			break
		}
	}
	if _, err := st.ImportSession(ctx, childHeader("invalid", "p", 1, true), invalid, nil); err != nil {
		t.Fatal(err)
	}
	tail := &backend.TornTail{FromSeq: int64(len(valid)), Reason: "unterminated line", Raw: []byte(`{"type":"st`)}
	if _, err := st.ImportSession(ctx, childHeader("torn", "p", 2, true), valid, tail); err != nil {
		t.Fatal(err)
	}
	for k, id := range []string{"folded", "plain", "changed", "recorded"} {
		if err := st.CreateSession(ctx, childHeader(id, "p", int64(3+k), true), valid); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.CreateSession(ctx, childHeader("bare", "p", 3, true), nil); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateSession(ctx, childHeader("grandchild", "plain", 9, true), nil); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateSession(ctx, childHeader("fork", "p", 9, false), valid); err != nil {
		t.Fatal(err)
	}
	if err := st.RecordRegistryFold(ctx, "folded", []byte("unit@1\n{}")); err != nil {
		t.Fatal(err)
	}
	mustExec(t, st, `UPDATE events SET time = time + 1 WHERE session_id = 'changed' AND seq = 1`)
	recordedHeader := childHeader("recorded", "p", 6, true)
	if err := st.PutCheckpoint(ctx, backend.CheckpointRecord{Witness: recordedHeader, AsOfSeq: 3, Rows: []byte(`{"served":1}`)}); err != nil {
		t.Fatal(err)
	}
	// A record without the mark is one the caller cannot serve its child
	// from: that child is read cold too.
	unserved := childHeader("unserved", "p", 11, true)
	if err := st.CreateSession(ctx, unserved, valid); err != nil {
		t.Fatal(err)
	}
	if err := st.PutCheckpoint(ctx, backend.CheckpointRecord{Witness: unserved, AsOfSeq: 3, Rows: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	const mark = `"served"`
	// A seeded child is read cold even with a record: a listing never
	// serves it from one.
	seeded := childHeader("seeded", "p", 10, true)
	seeded.SeedLength = ptr(int64(1))
	if err := st.CreateSession(ctx, seeded, valid); err != nil {
		t.Fatal(err)
	}
	if err := st.PutCheckpoint(ctx, backend.CheckpointRecord{Witness: seeded, AsOfSeq: 3, Rows: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	for _, types := range [][]string{{session.TypeDescriptor}, {session.TypeDescriptor, session.TypeTurnStart}} {
		var want, got []ListedChild
		if err := st.ChildListing(ctx, "p", func(c ListedChild) error { want = append(want, c); return nil }); err != nil {
			t.Fatal(err)
		}
		if err := st.ChildListingCold(ctx, "p", types, mark, func(c ListedChild) error { got = append(got, c); return nil }); err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, c := range want {
			if c.Checkpoint == nil || c.Header.IsSeeded() || !bytes.Contains(c.Checkpoint, []byte(mark)) {
				ids = append(ids, c.Header.ID)
			}
		}
		recorded, logs, err := st.InspectColdBatch(ctx, ids, types)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%v: %d children, ChildListing %d", types, len(got), len(want))
		}
		for k, c := range got {
			w := want[k]
			cold := c.Cold
			c.Cold = nil
			if !reflect.DeepEqual(c, w) {
				t.Errorf("%v: child %d: %+v, ChildListing %+v", types, k, c, w)
			}
			id := w.Header.ID
			var wantCold *backend.ListedColdRead
			readCold := w.Checkpoint == nil || w.Header.IsSeeded() || !bytes.Contains(w.Checkpoint, []byte(mark))
			if v, ok := recorded[id]; ok && readCold {
				wantCold = &backend.ListedColdRead{Verdict: &v}
			} else if in, ok := logs[id]; ok && readCold {
				wantCold = &backend.ListedColdRead{Log: in}
			}
			switch kind := describeCold(cold); {
			case id == "plain" || id == "bare" || id == "seeded" || id == "unserved":
				if cold == nil || cold.Log == nil {
					t.Errorf("%v: %s: cold read %s, want its log", types, id, kind)
				}
			case id == "invalid" || id == "folded":
				if cold == nil || cold.Verdict == nil {
					t.Errorf("%v: %s: cold read %s, want its verdict", types, id, kind)
				}
			case kind != "none":
				t.Errorf("%v: %s: cold read %s, want none", types, id, kind)
			}
			if !sameCold(cold, wantCold) {
				t.Errorf("%v: %s: cold read %s, batch %s", types, id, describeCold(cold), describeCold(wantCold))
			}
		}
	}
}

// sameCold compares two cold reads, errors by their text.
func sameCold(a, b *backend.ListedColdRead) bool {
	switch {
	case a == nil || b == nil:
		return a == b
	case (a.Verdict == nil) != (b.Verdict == nil):
		return false
	case a.Verdict != nil:
		return describeCold(a) == describeCold(b)
	}
	return reflect.DeepEqual(a.Log, b.Log)
}

// describeCold renders a cold read for a failure message.
func describeCold(c *backend.ListedColdRead) string {
	switch {
	case c == nil:
		return "none"
	case c.Verdict != nil:
		return fmt.Sprintf("verdict err=%v fold=%q nilfold=%v", c.Verdict.ReadErr, c.Verdict.RegistryFold, c.Verdict.RegistryFold == nil)
	case c.Log != nil:
		return fmt.Sprintf("log %+v", *c.Log)
	}
	return "empty"
}
