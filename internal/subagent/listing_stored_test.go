package subagent_test

import (
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/dsh-project/dsh/internal/corpus"
	"github.com/dsh-project/dsh/internal/gencorpus"
	"github.com/dsh-project/dsh/internal/projcache"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/sqlitepersist"
	"github.com/dsh-project/dsh/internal/subagent"
)

// headersOnly hides every optional capability of a header source, so the
// listing takes its general path (ChildrenOf, SubagentParents, LookupMany).
type headersOnly struct{ corpus.HeaderSource }

// The one-query listings (ChildListing, SubtreeListing) resolve every
// candidate exactly as the general path does, rung and placement included,
// on a corpus of every kind of child (forks of forks too) with a filled
// cache and with an emptied one.
func TestChildListingResolvesAsTheGeneralPath(t *testing.T) {
	ctx := context.Background()
	for _, spec := range []gencorpus.Spec{
		{Children: 400, Sessions: 800, MinEvents: 10, MaxEvents: 40, Seed: 5},
		{Children: 400, Sessions: 800, MinEvents: 10, MaxEvents: 40, Seed: 5, NoCheckpoints: true},
	} {
		st, err := sqlitepersist.Open(ctx, filepath.Join(t.TempDir(), "stored.db"), sqlitepersist.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		if _, err := gencorpus.Generate(ctx, st, spec); err != nil {
			t.Fatal(err)
		}
		fast := subagent.NewStoreLister(st, st, 0)
		general := subagent.NewStoreLister(st, st, 0)
		general.Headers = headersOnly{st}
		general.Snapshot = nil
		rungs := map[subagent.Rung]int{}
		for _, scope := range []string{"children", "descendants"} {
			resolve := func(l *subagent.Lister) ([]subagent.Resolution, error) {
				if scope == "descendants" {
					return l.ResolveDescendants(ctx, gencorpus.DefaultParent)
				}
				return l.ResolveChildren(ctx, gencorpus.DefaultParent)
			}
			want, err := resolve(general)
			if err != nil {
				t.Fatal(err)
			}
			got, err := resolve(fast)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) < spec.Children || len(got) != len(want) {
				t.Fatalf("%s: %d resolutions, general path %d, want at least %d", scope, len(got), len(want), spec.Children)
			}
			for i := range got {
				rungs[got[i].Rung]++
				if !reflect.DeepEqual(got[i].Row, want[i].Row) || got[i].Rung != want[i].Rung {
					t.Errorf("%s candidate %d: %+v (rung %s), general path %+v (rung %s)", scope, i, got[i].Row, got[i].Rung, want[i].Row, want[i].Rung)
				}
			}
		}
		if !spec.NoCheckpoints && rungs[subagent.RungCache] == 0 || rungs[subagent.RungRead] == 0 {
			t.Errorf("rungs %v: the corpus does not exercise both rungs", rungs)
		}
	}
}

// The registry folds recorded beside the logs (by the corpus generator, as
// by dsh's turn writer) resolve every child exactly as reading its log does:
// forks (seeded), malformed and identity-less children included, for both
// scopes; and they are what the listing used.
func TestRecordedRegistryFoldsResolveAsTheLogRead(t *testing.T) {
	ctx := context.Background()
	st, err := sqlitepersist.Open(ctx, filepath.Join(t.TempDir(), "folds.db"), sqlitepersist.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := gencorpus.Generate(ctx, st, gencorpus.Spec{Children: 400, Sessions: 800, MinEvents: 10, MaxEvents: 40, Seed: 9}); err != nil {
		t.Fatal(err)
	}
	var folds int
	if err := st.Querier().QueryRowContext(ctx, "SELECT count(*) FROM sessions WHERE registry_fold IS NOT NULL").Scan(&folds); err != nil {
		t.Fatal(err)
	}
	if folds == 0 {
		t.Fatal("the generator recorded no registry folds")
	}
	resolveBoth := func() [2][]subagent.Resolution {
		t.Helper()
		l := subagent.NewStoreLister(st, st, 0)
		children, err := l.ResolveChildren(ctx, gencorpus.DefaultParent)
		if err != nil {
			t.Fatal(err)
		}
		descendants, err := l.ResolveDescendants(ctx, gencorpus.DefaultParent)
		if err != nil {
			t.Fatal(err)
		}
		return [2][]subagent.Resolution{children, descendants}
	}
	fromFolds := resolveBoth()
	if _, err := st.Querier().ExecContext(ctx, "UPDATE sessions SET registry_fold = NULL"); err != nil {
		t.Fatal(err)
	}
	fromLogs := resolveBoth()
	for scope := range fromFolds {
		got, want := fromFolds[scope], fromLogs[scope]
		if len(got) != len(want) {
			t.Fatalf("scope %d: %d resolutions from folds, %d from logs", scope, len(got), len(want))
		}
		for i := range got {
			if !reflect.DeepEqual(got[i].Row, want[i].Row) || got[i].Rung != want[i].Rung || !reflect.DeepEqual(got[i].Identity, want[i].Identity) {
				t.Errorf("scope %d candidate %d: from the fold %+v (rung %s), from the log %+v (rung %s)", scope, i, got[i].Row, got[i].Rung, want[i].Row, want[i].Rung)
			}
		}
	}
}

// `dsh cache rebuild` records the registry fold of every log it refolds, so
// a store filled by import and rebuild lists forks and identity-less
// children from folds as one written by dsh's writers does, with the same
// rows as reading their logs.
func TestCacheRebuildRecordsRegistryFolds(t *testing.T) {
	ctx := context.Background()
	st, err := sqlitepersist.Open(ctx, filepath.Join(t.TempDir(), "rebuild.db"), sqlitepersist.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := gencorpus.Generate(ctx, st, gencorpus.Spec{Children: 200, Sessions: 300, MinEvents: 10, MaxEvents: 30, Seed: 3, NoCheckpoints: true}); err != nil {
		t.Fatal(err)
	}
	l := subagent.NewStoreLister(st, st, 0)
	before, err := l.ListChildren(ctx, gencorpus.DefaultParent)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	if err := st.ListHeaders(ctx, func(h session.Header) error { ids = append(ids, h.ID); return nil }); err != nil {
		t.Fatal(err)
	}
	rep, err := subagent.StoreCheckpoints(st).Rebuild(ctx, ids, nil)
	if err != nil {
		t.Fatal(err)
	}
	var folds int
	if err := st.Querier().QueryRowContext(ctx, "SELECT count(*) FROM sessions WHERE registry_fold IS NOT NULL").Scan(&folds); err != nil {
		t.Fatal(err)
	}
	if folds != rep.Rewritten || folds == 0 {
		t.Errorf("%d registry folds recorded, %d records rewritten", folds, rep.Rewritten)
	}
	after, err := l.ListChildren(ctx, gencorpus.DefaultParent)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(after, before) {
		t.Error("the listing after the rebuild differs from the cold one")
	}
}

// cache verify's fold check: the folds the writers recorded agree with
// their logs; one changed behind dsh's back is reported.
func TestVerifyFoldsReportsAWrongFold(t *testing.T) {
	ctx := context.Background()
	st, err := sqlitepersist.Open(ctx, filepath.Join(t.TempDir(), "verify.db"), sqlitepersist.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := gencorpus.Generate(ctx, st, gencorpus.Spec{Children: 100, Sessions: 150, MinEvents: 10, MaxEvents: 30, Seed: 4}); err != nil {
		t.Fatal(err)
	}
	cp := subagent.StoreCheckpoints(st)
	findings, err := cp.VerifyFolds(ctx, nil)
	if err != nil || len(findings) != 0 {
		t.Fatalf("VerifyFolds = %v, %v; want no findings", findings, err)
	}
	var id, fold string
	if err := st.Querier().QueryRowContext(ctx, `SELECT id, registry_fold FROM sessions
		WHERE registry_fold LIKE '%"label"%' LIMIT 1`).Scan(&id, &fold); err != nil {
		t.Fatal(err)
	}
	wrong := strings.Replace(fold, `"label":"`, `"label":"not `, 1)
	if _, err := st.Querier().ExecContext(ctx, "UPDATE sessions SET registry_fold = ? WHERE id = ?", wrong, id); err != nil {
		t.Fatal(err)
	}
	findings, err = cp.VerifyFolds(ctx, nil)
	if err != nil || len(findings) != 1 || findings[0].SessionID != id || findings[0].Kind != projcache.KindFoldMismatch {
		t.Fatalf("VerifyFolds = %v, %v; want one fold-mismatch for %s", findings, err, id)
	}
}
