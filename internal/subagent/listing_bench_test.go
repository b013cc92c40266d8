package subagent_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/dsh-project/dsh/internal/sqlitepersist"
	"github.com/dsh-project/dsh/internal/subagent"
	"github.com/dsh-project/dsh/scripts/gencorpus"
)

// Benchmark corpus: the mix at a size a benchmark run can generate
// (scripts/bench-list measures the full 10,000 children in 200,000 sessions).
const (
	benchChildren = 1000
	benchSessions = 5000
)

// benchStore generates the benchmark corpus into a fresh store, outside the
// timer.
func benchStore(b *testing.B, spec gencorpus.Spec) *sqlitepersist.Store {
	b.Helper()
	ctx := context.Background()
	st, err := sqlitepersist.Open(ctx, filepath.Join(b.TempDir(), "bench.db"), sqlitepersist.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	if _, err := gencorpus.Generate(ctx, st, spec); err != nil {
		b.Fatal(err)
	}
	return st
}

func benchListChildren(b *testing.B, st *sqlitepersist.Store) {
	ctx := context.Background()
	l := subagent.NewStoreLister(st, st, 0)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		rows, err := l.ListChildren(ctx, gencorpus.DefaultParent)
		if err != nil {
			b.Fatal(err)
		}
		if len(rows) != benchChildren {
			b.Fatalf("%d rows, want %d", len(rows), benchChildren)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchChildren, "ns/child")
}

// BenchmarkListChildrenWarm lists a parent whose children have checkpoint
// records: unseeded cold children are served from the cache.
func BenchmarkListChildrenWarm(b *testing.B) {
	st := benchStore(b, gencorpus.Spec{Children: benchChildren, Sessions: benchSessions})
	benchListChildren(b, st)
}

// BenchmarkListChildrenCold lists the same parent with an empty cache: every
// child is read from its log (descriptor rows only, for verified logs).
func BenchmarkListChildrenCold(b *testing.B) {
	st := benchStore(b, gencorpus.Spec{Children: benchChildren, Sessions: benchSessions, NoCheckpoints: true})
	benchListChildren(b, st)
}

// BenchmarkListChildrenUnverified lists the parent when every child's log
// was changed outside dsh: each read validates the whole log.
func BenchmarkListChildrenUnverified(b *testing.B) {
	st := benchStore(b, gencorpus.Spec{Children: benchChildren, Sessions: benchSessions, NoCheckpoints: true, Unverified: true})
	benchListChildren(b, st)
}

// BenchmarkFloorQuery is the physical floor in-process: the one SQL query
// returning every child's header, checkpoint record and hasChildren in DSH's
// order, through the same SQLite driver, rows scanned and nothing else done.
func BenchmarkFloorQuery(b *testing.B) {
	st := benchStore(b, gencorpus.Spec{Children: benchChildren, Sessions: benchSessions})
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		rows, err := st.Querier().QueryContext(ctx, floorQuery, gencorpus.DefaultParent)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for rows.Next() {
			var (
				id, cwd, parent, origin, preset, rowsText        sql.NullString
				version, created, seed, depth, asOf, hasChildren sql.NullInt64
			)
			if err := rows.Scan(&id, &version, &created, &cwd, &parent, &seed, &origin, &depth, &preset, &asOf, &rowsText, &hasChildren); err != nil {
				b.Fatal(err)
			}
			n++
		}
		if err := rows.Close(); err != nil || n != benchChildren {
			b.Fatalf("%d rows, %v", n, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchChildren, "ns/child")
}

// floorQuery is scripts/bench-list's floor query.
const floorQuery = `SELECT s.id, s.version, s.created_at, s.cwd, s.parent_session, s.seed_length, s.origin,
	s.delegation_depth, s.agent_preset, c.as_of_seq, c.rows,
	EXISTS (SELECT 1 FROM sessions g WHERE g.parent_session = s.id AND g.origin = 'subagent')
FROM sessions s LEFT JOIN projection_checkpoints c ON c.session_id = s.id
WHERE s.parent_session = ? AND s.origin = 'subagent'
ORDER BY s.created_at, s.id`
