package subagent_test

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/gencorpus"
	"github.com/dsh-project/dsh/internal/projcache"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/sqlitepersist"
	"github.com/dsh-project/dsh/internal/subagent"
)

// Checkpoints.Verify (chunks of sessions, each log read once in a batch and
// checked on several goroutines) reports exactly what checking every
// record and every recorded fold one session at a time reports, in the
// same order, on a store spanning several chunks with every kind of bad
// record: poisoned, foreign, orphaned, of an unreadable log, a wrong fold,
// a fold beside an unreadable log; and for explicit ids with duplicates
// and ids without a record. Rebuild then leaves nothing to find.
func TestVerifyEqualsOneSessionAtATime(t *testing.T) {
	ctx := context.Background()
	st, err := sqlitepersist.Open(ctx, filepath.Join(t.TempDir(), "verify.db"), sqlitepersist.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := gencorpus.Generate(ctx, st, gencorpus.Spec{Children: 600, Sessions: 700, MinEvents: 5, MaxEvents: 20, Seed: 9}); err != nil {
		t.Fatal(err)
	}
	var all, unreadable []string
	headers := map[string]session.Header{}
	if err := st.ListHeaders(ctx, func(h session.Header) error {
		all = append(all, h.ID)
		headers[h.ID] = h
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := st.Querier().ExecContext(ctx, q, args...); err != nil {
			t.Fatal(err)
		}
	}
	// A committed row that does not decode, and a log failing DSH's
	// validation (a user message without its surfaceOp).
	exec("UPDATE events SET data = 'not json' WHERE session_id = ? AND seq = 1", all[50])
	exec(`UPDATE events SET surface_op = NULL WHERE session_id = ? AND seq = (SELECT max(seq) FROM events WHERE session_id = ? AND type = ?)`, all[450], all[450], session.TypeUserMessage)
	for _, id := range all {
		if _, err := st.Inspect(ctx, id); err != nil {
			unreadable = append(unreadable, id)
		}
	}
	if len(unreadable) < 2 {
		t.Fatalf("the corpus has %d unreadable logs, want at least 2", len(unreadable))
	}
	var folded string
	var fold []byte
	if err := st.Querier().QueryRowContext(ctx, "SELECT id, registry_fold FROM sessions WHERE registry_fold IS NOT NULL ORDER BY id LIMIT 1").Scan(&folded, &fold); err != nil {
		t.Fatal(err)
	}
	// An unreadable log with a record, another with a recorded fold.
	if err := st.PutCheckpoint(ctx, backend.CheckpointRecord{Witness: headers[unreadable[0]], AsOfSeq: -1, Rows: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if err := st.RecordRegistryFold(ctx, unreadable[1], fold); err != nil {
		t.Fatal(err)
	}
	exec("UPDATE sessions SET registry_fold = replace(registry_fold, '\"mode\":\"', '\"mode\":\"not ') WHERE id = ?", folded)
	exec("UPDATE projection_checkpoints SET rows = 'not json' WHERE session_id = (SELECT session_id FROM projection_checkpoints ORDER BY session_id LIMIT 1 OFFSET 10)")
	exec("UPDATE projection_checkpoints SET created_at = created_at + 1 WHERE session_id = (SELECT session_id FROM projection_checkpoints ORDER BY session_id LIMIT 1 OFFSET 300)")
	orphan := headers[all[len(all)-1]]
	orphan.ID = "gone-session"
	if err := st.PutCheckpoint(ctx, backend.CheckpointRecord{Witness: orphan, AsOfSeq: -1, Rows: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}

	cp := subagent.StoreCheckpoints(st)
	oneAtATime := func(ids []string) subagent.VerifyReport {
		t.Helper()
		var want subagent.VerifyReport
		var err error
		if want.Records, err = cp.Cache.Verify(ctx, cp.Read, ids); err != nil {
			t.Fatal(err)
		}
		if ids == nil {
			if ids, err = cp.Cache.IDs(ctx); err != nil {
				t.Fatal(err)
			}
		}
		verdicts, err := st.ColdVerdicts(ctx, ids)
		if err != nil {
			t.Fatal(err)
		}
		reg := subagent.NewRegistry()
		for _, id := range ids {
			recorded := verdicts[id].RegistryFold
			// A fold recorded under this registry disagrees with any
			// unreadable log; one under another registry is not checked.
			if recorded == nil || subagent.FoldDisagreement(reg, recorded, nil, context.Canceled) == "" {
				continue
			}
			_, events, err := cp.Read(ctx, id)
			want.Folds.Checked++
			if why := subagent.FoldDisagreement(reg, recorded, events, err); why != "" {
				want.Folds.Findings = append(want.Folds.Findings, projcache.Finding{SessionID: id, Kind: projcache.KindFoldMismatch, Reason: why})
			}
		}
		return want
	}
	named := append([]string{all[3], all[3], "no-such-session", unreadable[1], orphan.ID}, all[100:400]...)
	for n, ids := range [][]string{nil, named} {
		want := oneAtATime(ids)
		var calls int
		got, err := cp.Verify(ctx, ids, func(done, total int) { calls++ })
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Verify(%d ids) =\n%+v\none session at a time:\n%+v", len(ids), got, want)
		}
		if len(want.Records.Findings) < 4-n || len(want.Folds.Findings) < 1 || calls < 2 {
			t.Errorf("Verify(%d ids): %d record findings, %d fold findings, %d progress calls: the corpus does not exercise the checks", len(ids), len(want.Records.Findings), len(want.Folds.Findings), calls)
		}
	}

	rep, err := cp.Rebuild(ctx, append(all, orphan.ID), nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Rewritten != len(all)-len(unreadable) || len(rep.Removed) != len(unreadable)+1 {
		t.Errorf("Rebuild rewrote %d and removed %d records; want %d and %d", rep.Rewritten, len(rep.Removed), len(all)-len(unreadable), len(unreadable)+1)
	}
	got, err := cp.Verify(ctx, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Records.Findings) != 0 || got.Records.Checked != rep.Rewritten {
		t.Errorf("after Rebuild, Verify checked %d records with findings %v; want %d and none", got.Records.Checked, got.Records.Findings, rep.Rewritten)
	}
}
