package gencorpus_test

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/dsh-project/dsh/internal/gencorpus"
	"github.com/dsh-project/dsh/internal/pgstore"
	"github.com/dsh-project/dsh/internal/pgtest"
	"github.com/dsh-project/dsh/internal/sqlitepersist"
	"github.com/dsh-project/dsh/internal/subagent"
)

// Writing with several workers writes the same corpus as writing with one:
// the same counts and the same listing of the parent, on both stores.
func TestWorkersWriteTheSameCorpus(t *testing.T) {
	ctx := context.Background()
	spec := gencorpus.Spec{Children: 120, Sessions: 400, MinEvents: 5, MaxEvents: 20, Seed: 7, Batch: 25}
	generate := func(t *testing.T, st gencorpus.Target, workers int) (gencorpus.Result, []subagent.Row) {
		t.Helper()
		s := spec
		s.Workers = workers
		var last int
		s.Progress = func(done, _ int) { last = max(last, done) }
		res, err := gencorpus.Generate(ctx, st, s)
		if err != nil {
			t.Fatal(err)
		}
		if last != res.Sessions {
			t.Errorf("%d workers: progress ends at %d of %d sessions", workers, last, res.Sessions)
		}
		rows, err := subagent.NewStoreLister(st, st, 0).ListDescendants(ctx, gencorpus.DefaultParent)
		if err != nil {
			t.Fatal(err)
		}
		return res, rows
	}
	compare := func(t *testing.T, open func() gencorpus.Target) {
		res1, rows1 := generate(t, open(), 1)
		res4, rows4 := generate(t, open(), 4)
		if !reflect.DeepEqual(res1, res4) {
			t.Errorf("4 workers write %+v, 1 writes %+v", res4, res1)
		}
		if len(rows1) != spec.Children || !reflect.DeepEqual(rows1, rows4) {
			t.Errorf("4 workers' corpus lists %d rows, 1 worker's %d (of %d children), or differently", len(rows4), len(rows1), spec.Children)
		}
	}
	t.Run("sqlite", func(t *testing.T) {
		compare(t, func() gencorpus.Target {
			st, err := sqlitepersist.Open(ctx, filepath.Join(t.TempDir(), "corpus.db"), sqlitepersist.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		})
	})
	t.Run("postgres", func(t *testing.T) {
		compare(t, func() gencorpus.Target {
			st, err := pgstore.Open(ctx, pgtest.NewDatabase(t))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		})
	})
}
