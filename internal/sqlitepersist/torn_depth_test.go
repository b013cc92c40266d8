package sqlitepersist

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/session"
)

// Damage at every depth of a log: one undecodable row, every row from one
// on undecodable, one row missing (a seq gap). DSH's commit rule decides the
// outcome from the first bad seq alone: at or before the last decodable
// turn/end it is corruption naming that seq; after it, a torn tail from that
// seq, which Inspect cuts off (returning the prefix before the damage and the
// closers of the interrupted turn) and the repairing Load deletes, appending
// the closers in its place. Damage deeper than the last row is what tells a
// scan that stops at the first bad row from one that goes on.
func TestTornTailAtEveryDepth(t *testing.T) {
	ctx := context.Background()
	b := newLog().completeTurn("one").turnStart().user("two").stepStart().chunk("a").chunk("b").chunk("c")
	n := int64(len(b.events))

	type damage struct {
		name string
		// apply damages seq k; prefix is how many events precede the
		// damage, firstBad the first seq the scan cannot accept.
		apply    func(t *testing.T, s *Store, k int64)
		prefix   func(k int64) int64
		firstBad func(k int64) int64
		// deepest is the largest k the damage makes sense for.
		deepest int64
	}
	damages := []damage{
		{
			name:     "undecodable row",
			apply:    func(t *testing.T, s *Store, k int64) { truncateRowData(t, s, "s", k) },
			prefix:   func(k int64) int64 { return k },
			firstBad: func(k int64) int64 { return k },
			deepest:  n - 1,
		},
		{
			name: "undecodable rows to the end",
			apply: func(t *testing.T, s *Store, k int64) {
				mustExec(t, s, `UPDATE events SET data = '{"trunc' WHERE session_id = 's' AND seq >= ?`, k)
			},
			prefix:   func(k int64) int64 { return k },
			firstBad: func(k int64) int64 { return k },
			deepest:  n - 1,
		},
		{
			// A missing last row only shortens the log; a gap needs a row
			// after it.
			name: "seq gap",
			apply: func(t *testing.T, s *Store, k int64) {
				mustExec(t, s, "DELETE FROM events WHERE session_id = 's' AND seq = ?", k)
			},
			prefix:   func(k int64) int64 { return k },
			firstBad: func(k int64) int64 { return k + 1 },
			deepest:  n - 2,
		},
	}
	for _, d := range damages {
		for k := int64(0); k <= d.deepest; k++ {
			t.Run(fmt.Sprintf("%s/seq %d (depth %d)", d.name, k, n-k), func(t *testing.T) {
				s, _ := openStore(t)
				if err := s.CreateSession(ctx, rootHeader("s"), b.events); err != nil {
					t.Fatal(err)
				}
				d.apply(t, s, k)
				firstBad, prefix := d.firstBad(k), b.events[:d.prefix(k)]
				if firstBad <= lastIntactTurnEnd(b.events, d.name, k) {
					checkCorruptAt(ctx, t, s, firstBad)
					return
				}
				checkTornFrom(ctx, t, s, firstBad, prefix)
			})
		}
	}
}

// lastIntactTurnEnd is the seq of the last turn/end the damage of seq k
// leaves decodable, -1 when none is.
func lastIntactTurnEnd(events []session.Event, damage string, k int64) int64 {
	for i := len(events) - 1; i >= 0; i-- {
		e := events[i]
		if e.Type != session.TypeTurnEnd {
			continue
		}
		switch {
		case damage == "undecodable rows to the end" && e.Seq >= k,
			damage != "undecodable rows to the end" && e.Seq == k:
			continue
		}
		return e.Seq
	}
	return -1
}

func checkCorruptAt(ctx context.Context, t *testing.T, s *Store, seq int64) {
	t.Helper()
	before := dumpSession(t, s, "s")
	_, errInspect := s.Inspect(ctx, "s")
	_, errLoad := s.Load(ctx, "s")
	for op, err := range map[string]error{"Inspect": errInspect, "Load": errLoad} {
		var c *backend.CorruptRowError
		if !errors.Is(err, backend.ErrCorrupt) || !errors.As(err, &c) {
			t.Errorf("%s: %v, want corruption at seq %d", op, err, seq)
			continue
		}
		if c.Seq != seq {
			t.Errorf("%s names seq %d, want %d", op, c.Seq, seq)
		}
	}
	if dumpSession(t, s, "s") != before {
		t.Error("a refused read wrote")
	}
}

func checkTornFrom(ctx context.Context, t *testing.T, s *Store, from int64, prefix []session.Event) {
	t.Helper()
	closers := session.InterruptedTurnClosers(prefix)
	in, err := s.Inspect(ctx, "s")
	if err != nil {
		t.Fatalf("Inspect: %v", err)
	}
	if in.Torn == nil || in.Torn.FromSeq != from {
		t.Errorf("Inspect reports torn tail %+v, want from seq %d", in.Torn, from)
	}
	if !reflect.DeepEqual(in.Events, prefix) {
		t.Errorf("Inspect returns events %v (%d), want the %d before the damage", types(in.Events), len(in.Events), len(prefix))
	}
	if !reflect.DeepEqual(in.Closers, closers) {
		t.Errorf("Inspect announces closers %v, want %v", types(in.Closers), types(closers))
	}

	loaded, err := s.Load(ctx, "s")
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if loaded.Torn == nil || loaded.Torn.FromSeq != from {
		t.Errorf("Load repaired torn tail %+v, want from seq %d", loaded.Torn, from)
	}
	// What is left in the table is the prefix and the closers: every row
	// from the damage on was deleted.
	want := append(append([]session.Event{}, prefix...), closers...)
	stored := storedRows(ctx, t, s, "s")
	if !reflect.DeepEqual(stored, rowsOf(want)) {
		t.Errorf("after Load the table holds\n%v\nwant\n%v", stored, rowsOf(want))
	}
	after, err := s.Inspect(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	if after.Torn != nil || len(after.Closers) != 0 || !reflect.DeepEqual(after.Events, want) {
		t.Errorf("after Load: %v torn %+v closers %v", types(after.Events), after.Torn, types(after.Closers))
	}
}

// storedRows is a session's rows as seq, type and data.
func storedRows(ctx context.Context, t *testing.T, s *Store, id string) []string {
	t.Helper()
	rows, err := s.Querier().QueryContext(ctx, "SELECT seq, type, data FROM events WHERE session_id = ? ORDER BY seq", id)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var seq int64
		var typ, data string
		if err := rows.Scan(&seq, &typ, &data); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%d %s %s", seq, typ, data))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func rowsOf(events []session.Event) []string {
	var out []string
	for _, e := range events {
		out = append(out, fmt.Sprintf("%d %s %s", e.Seq, e.Type, e.Data))
	}
	return out
}
