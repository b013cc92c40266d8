package sqlitepersist

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/corpus"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/subagent"
)

// A resolved row is never read as current after a write dsh did not make:
// another tool (or an older dsh) editing a child's header, events, torn
// tail, damaged rest, checkpoint or cold verdicts leaves its row stale
// (migration 0014's triggers), and the listing is the ladder's. Its catalog
// view (migration 0017) goes stale the same way, a checkpoint aside (the
// 0.1.7 listing reads none), and no other session's view does.
func TestResolvedRowsVoidedByForeignWrites(t *testing.T) {
	ctx := context.Background()
	desc := func(seq int64, data string) session.Event {
		return session.Event{Type: session.TypeDescriptor, Seq: seq, Time: 1 + seq, Data: json.RawMessage(data)}
	}
	child := func(id string, at int64) session.Header {
		h := rootHeader(id)
		h.CreatedAt, h.ParentSession, h.Origin, h.DelegationDepth = at, ptr("p"), ptr(session.OriginSubagent), ptr(int64(1))
		return h
	}
	for name, edit := range map[string]string{ // each edits a, but "header moved" b
		"event inserted":       `INSERT INTO events (session_id, seq, type, time, data) VALUES ('a', 1, 'subagent/descriptor', 9, '{"version":2,"mode":"one-shot","provider":"spawn"}')`,
		"event data updated":   `UPDATE events SET data = '{"version":2,"mode":"one-shot","provider":"spawn"}' WHERE session_id = 'a' AND seq = 0`,
		"event deleted":        `DELETE FROM events WHERE session_id = 'a' AND seq = 0`,
		"header moved":         `UPDATE sessions SET created_at = 5 WHERE id = 'b'`,
		"parent changed":       `UPDATE sessions SET parent_session = 'b' WHERE id = 'a'`,
		"origin changed":       `UPDATE sessions SET origin = NULL WHERE id = 'a'`,
		"verdict recorded":     `UPDATE sessions SET read_failure = 'broken' WHERE id = 'a'`,
		"torn tail inserted":   `INSERT INTO torn_tails (session_id, from_seq, reason, raw) VALUES ('a', 1, 'unterminated line', X'7B')`,
		"damage inserted":      `INSERT INTO damaged_logs (session_id, from_seq, reason, encoding, raw) VALUES ('a', 0, 'bad', 'jsonl-text', X'7B')`,
		"checkpoint deleted":   `DELETE FROM projection_checkpoints WHERE session_id = 'a'`,
		"checkpoint rewritten": `UPDATE projection_checkpoints SET rows = '{}' WHERE session_id = 'a'`,
		"session deleted":      `DELETE FROM sessions WHERE id = 'a'`,
	} {
		t.Run(name, func(t *testing.T) {
			s, _ := openStore(t)
			if err := s.CreateSession(ctx, rootHeader("p"), nil); err != nil {
				t.Fatal(err)
			}
			for _, h := range []session.Header{child("a", 10), child("b", 20)} {
				if err := s.CreateSession(ctx, h, []session.Event{desc(0, `{"version":2,"mode":"continuable","provider":"spawn","label":"`+h.ID+`"}`)}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := subagent.StoreCheckpoints(s).Rebuild(ctx, []string{"a", "b"}, nil); err != nil {
				t.Fatal(err)
			}
			stamp := subagent.ResolvedRowsStamp(subagent.NewRegistry())
			current := func() map[string]bool {
				out := map[string]bool{}
				for _, parent := range []string{"p", "b"} {
					err := s.ResolvedRows(ctx, parent, func(r backend.ResolvedRow) error {
						out[r.ID] = r.Resolver == stamp
						return nil
					})
					if err != nil {
						t.Fatal(err)
					}
				}
				return out
			}
			if got := current(); !got["a"] || !got["b"] {
				t.Fatalf("after cache rebuild the rows are %v, want both current", got)
			}
			if err := subagent.RefreshResolvedRows(ctx, s, []string{"p"}); err != nil {
				t.Fatal(err)
			}
			views := func() map[string]bool {
				out := map[string]bool{}
				err := s.CatalogViews(ctx, []string{"p", "a", "b"}, subagent.CatalogViewsStamp(), func(v backend.CatalogView) error {
					out[v.ID] = true
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				return out
			}
			if got := views(); len(got) != 3 {
				t.Fatalf("after cache rebuild the catalog views current are %v, want p, a and b", got)
			}
			mustExec(t, s, edit)
			edited, other := "a", "b"
			if name == "header moved" {
				edited, other = "b", "a"
			}
			after := current()
			if after[edited] {
				t.Errorf("row %s is still current after the edit", edited)
			}
			if !after[other] {
				t.Errorf("row %s, not edited, is no longer current (%v)", other, after)
			}
			afterViews := views()
			if wantCurrent := strings.Contains(name, "checkpoint"); afterViews[edited] != wantCurrent {
				t.Errorf("after the edit the catalog view of %s is current=%v, want %v", edited, afterViews[edited], wantCurrent)
			}
			if !afterViews[other] || !afterViews["p"] {
				t.Errorf("catalog views not edited are no longer current: %v", afterViews)
			}
			for _, parent := range []string{"p", "b"} {
				c, err := corpus.Load(ctx, s, s)
				if err != nil {
					t.Fatal(err)
				}
				recs, err := c.Children(ctx, parent)
				if err != nil {
					t.Fatal(err)
				}
				l := subagent.NewStoreLister(s, s, 0)
				res, err := l.ResolveRecords(ctx, recs, corpus.ScopeChildren)
				if err != nil {
					t.Fatal(err)
				}
				var want []subagent.Row
				for _, r := range res {
					want = append(want, *r.Row)
				}
				if err := subagent.RefreshResolvedRows(ctx, s, []string{"a", "b"}); err != nil {
					t.Fatal(err)
				}
				got, err := l.ListChildren(ctx, parent)
				if err != nil {
					t.Fatal(err)
				}
				if len(got) != 0 || len(want) != 0 {
					if !reflect.DeepEqual(got, want) {
						t.Errorf("ListChildren(%s) after the edit, resolved again = %+v\nthe ladder gives %+v", parent, got, want)
					}
				}
			}
		})
	}
}
