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

// Audit gives Inspect's verdict without losing what Inspect hides: the seq
// holes, the valid prefix of a log that fails validation, and the failing
// seq and rule.
func TestAuditKeepsInspectVerdictAndReportsGaps(t *testing.T) {
	ctx := context.Background()
	base := newLog().completeTurn("one").completeTurn("two").turnStart().user("three").stepStart()
	cases := []struct {
		name    string
		damage  func(t *testing.T, s *Store)
		gaps    []backend.SeqGap
		torn    int64 // -1: none
		corrupt int64 // -1: not a corrupt row
		rule    string
		ruleSeq int64
		closers bool
	}{
		{name: "intact, open turn", damage: func(*testing.T, *Store) {}, torn: -1, corrupt: -1, closers: true},
		{
			name: "gap before the last turn/end",
			damage: func(t *testing.T, s *Store) {
				mustExec(t, s, "DELETE FROM events WHERE session_id = 's' AND seq IN (2, 3, 4)")
			},
			gaps: []backend.SeqGap{{From: 2, To: 4}}, torn: -1, corrupt: 5,
		},
		{
			name: "gap in the open turn",
			damage: func(t *testing.T, s *Store) {
				mustExec(t, s, "DELETE FROM events WHERE session_id = 's' AND seq = 13")
			},
			gaps: []backend.SeqGap{{From: 13, To: 13}}, torn: 14, corrupt: -1, closers: true,
		},
		{
			name: "two gaps and a missing start",
			damage: func(t *testing.T, s *Store) {
				mustExec(t, s, "DELETE FROM events WHERE session_id = 's' AND seq IN (0, 1, 7, 13)")
			},
			gaps: []backend.SeqGap{{From: 0, To: 1}, {From: 7, To: 7}, {From: 13, To: 13}}, torn: -1, corrupt: 2,
		},
		{
			name: "user/message without surfaceOp",
			damage: func(t *testing.T, s *Store) {
				mustExec(t, s, "UPDATE events SET surface_op = NULL WHERE session_id = 's' AND seq = 7")
			},
			torn: -1, corrupt: -1, rule: session.RuleSurfaceOpRequired, ruleSeq: 7,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, _ := openStore(t)
			if err := s.CreateSession(ctx, rootHeader("s"), base.events); err != nil {
				t.Fatal(err)
			}
			c.damage(t, s)
			before := dumpSession(t, s, "s")
			got, err := s.Audit(ctx, "s")
			if err != nil {
				t.Fatalf("Audit: %v", err)
			}
			if dumpSession(t, s, "s") != before {
				t.Error("Audit wrote")
			}
			_, inspectErr := s.Inspect(ctx, "s")
			if (inspectErr == nil) != (got.ReadErr == nil) || (inspectErr != nil && inspectErr.Error() != got.ReadErr.Error()) {
				t.Errorf("ReadErr %v, Inspect says %v", got.ReadErr, inspectErr)
			}
			if !reflect.DeepEqual(got.Gaps, c.gaps) {
				t.Errorf("gaps %v, want %v", got.Gaps, c.gaps)
			}
			switch {
			case c.torn < 0 && got.Torn != nil:
				t.Errorf("torn tail %+v, want none", got.Torn)
			case c.torn >= 0 && (got.Torn == nil || got.Torn.FromSeq != c.torn):
				t.Errorf("torn tail %+v, want from seq %d", got.Torn, c.torn)
			}
			var cr *backend.CorruptRowError
			if isCorrupt := errors.As(got.ReadErr, &cr); isCorrupt != (c.corrupt >= 0) || (isCorrupt && cr.Seq != c.corrupt) {
				t.Errorf("ReadErr %v, want a corrupt row at seq %d", got.ReadErr, c.corrupt)
			}
			var ve *session.ValidationError
			if c.rule != "" {
				if !errors.As(got.ReadErr, &ve) || ve.Rule != c.rule || ve.Seq != c.ruleSeq {
					t.Errorf("ReadErr %v, want rule %s at seq %d", got.ReadErr, c.rule, c.ruleSeq)
				}
				if len(got.Events) != len(base.events) {
					t.Errorf("%d events kept for a log failing validation, want the %d decodable ones", len(got.Events), len(base.events))
				}
			}
			if (len(got.Closers) > 0) != c.closers {
				t.Errorf("closers %v, want some: %v", types(got.Closers), c.closers)
			}
			if got.Header.ID != "s" {
				t.Errorf("header %+v", got.Header)
			}
		})
	}
}

func TestAuditUnknownSessionIsNotFound(t *testing.T) {
	s, _ := openStore(t)
	if _, err := s.Audit(context.Background(), "nope"); !errors.Is(err, backend.ErrNotFound) {
		t.Fatalf("Audit of an unknown id: %v", err)
	}
}

// EachParent visits every distinct parent once, in byte order, across page
// boundaries, and may query the store from its callback.
func TestEachParentPagesInByteOrder(t *testing.T) {
	ctx := context.Background()
	s, _ := openStore(t)
	var want, wantSub []string
	err := s.update(ctx, func(tx *Store) error {
		for i := 0; i < 1300; i++ {
			parent := fmt.Sprintf("p%04d", i)
			if i == 0 {
				parent = "" // an empty parent id is still a parent id
			}
			h := rootHeader(fmt.Sprintf("c%04d", i))
			h.ParentSession = ptr(parent)
			if i%3 == 0 {
				h.Origin = ptr(session.OriginSubagent)
				wantSub = append(wantSub, parent)
			}
			want = append(want, parent)
			if err := tx.CreateSession(ctx, h, nil); err != nil {
				return err
			}
			// A second child of the same parent must not repeat it.
			h.ID += "-b"
			if err := tx.CreateSession(ctx, h, nil); err != nil {
				return err
			}
		}
		return tx.CreateSession(ctx, rootHeader("root"), nil)
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, subagentOnly := range []bool{false, true} {
		var got []string
		err := s.view(ctx, func(view *Store) error {
			return view.EachParent(ctx, subagentOnly, func(p string) error {
				if _, err := view.Header(ctx, "root"); err != nil {
					return err
				}
				got = append(got, p)
				return nil
			})
		})
		if err != nil {
			t.Fatal(err)
		}
		w := want
		if subagentOnly {
			w = wantSub
		}
		if !reflect.DeepEqual(got, w) {
			t.Errorf("subagentOnly=%v: %d parents (first %q), want %d", subagentOnly, len(got), got[:min(3, len(got))], len(w))
		}
	}
	n, err := s.CountSessions(ctx, false)
	if err != nil || n != 2601 {
		t.Errorf("CountSessions = %d, %v; want 2601", n, err)
	}
	n, err = s.CountSessions(ctx, true)
	if err != nil || n != 2*len(wantSub) {
		t.Errorf("CountSessions(subagent) = %d, %v; want %d", n, err, 2*len(wantSub))
	}
}

func TestRootHeadersInCreationOrder(t *testing.T) {
	ctx := context.Background()
	s, _ := openStore(t)
	for i, id := range []string{"b", "a", "c", "child"} {
		h := rootHeader(id)
		h.CreatedAt = int64(10 - i%2)
		if id == "c" {
			h.Origin = ptr(session.OriginSubagent)
		}
		if id == "child" {
			h.ParentSession = ptr("a")
		}
		if err := s.CreateSession(ctx, h, nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		subagentOnly bool
		want         []string
	}{{false, []string{"a", "b", "c"}}, {true, []string{"c"}}} {
		var got []string
		if err := s.RootHeaders(ctx, c.subagentOnly, func(h session.Header) error {
			got = append(got, h.ID)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("subagentOnly=%v: %v, want %v", c.subagentOnly, got, c.want)
		}
	}
}
