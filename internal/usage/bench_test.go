package usage_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/jsjson"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/sqlitepersist"
	"github.com/dsh-project/dsh/internal/subagent"
	"github.com/dsh-project/dsh/internal/usage"
)

const benchChildren = 10_000

// benchStore writes a parent with benchChildren children of three model
// calls each (and a few other events) into a new SQLite file; with
// withoutUsage the usage triggers are dropped first, to measure what they
// cost an import.
func benchStore(b *testing.B, withoutUsage bool) (path string, ids []string, took time.Duration) {
	b.Helper()
	ctx := context.Background()
	path = filepath.Join(b.TempDir(), "dsh.db")
	st, err := sqlitepersist.Open(ctx, path, sqlitepersist.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	if withoutUsage {
		db, err := sql.Open("sqlite", path)
		if err != nil {
			b.Fatal(err)
		}
		for _, tr := range []string{"events_usage_insert", "events_usage_delete", "events_usage_update"} {
			if _, err := db.Exec("DROP TRIGGER " + tr); err != nil {
				b.Fatal(err)
			}
		}
		db.Close()
	}
	parent := "bench-parent"
	ids = append(ids, parent)
	start := time.Now()
	err = st.Update(ctx, func(tx backend.Store) error {
		if _, err := tx.ImportSession(ctx, session.Header{ID: parent, CreatedAt: 1}, nil, nil); err != nil {
			return err
		}
		for i := range benchChildren {
			id := fmt.Sprintf("child-%05d", i)
			origin := session.OriginSubagent
			h := session.Header{ID: id, CreatedAt: int64(2 + i), ParentSession: &parent, Origin: &origin}
			var events []session.Event
			for k := range int64(3) {
				events = append(events,
					ev(2*k, "step/start", `{"turn":1,"step":`+strconv.FormatInt(k+1, 10)+`}`),
					validMessage(2*k+1, "model-"+strconv.Itoa(int(k)), 100+k, 10+k))
			}
			if _, err := tx.ImportSession(ctx, h, events, nil); err != nil {
				return err
			}
			ids = append(ids, id)
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return path, ids, time.Since(start)
}

// BenchmarkRollup10k: the usage of a parent and its 10,000 children, rolled
// up along their tree (usage.Read over the stored totals, then Walk's
// rollup), against a floor that sums the same stored table with one
// statement and scans its rows; ratio = rollup / floor, in one run. It
// also reports what the totals cost: the import of the same corpus with
// and without migration 0012's triggers (import-ratio) and the file's
// bytes per counted event.
func BenchmarkRollup10k(b *testing.B) {
	ctx := context.Background()
	path, ids, with := benchStore(b, false)
	barePath, _, without := benchStore(b, true)
	st, err := sqlitepersist.OpenReadOnly(ctx, path, sqlitepersist.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	rows := make([]subagent.Row, 0, len(ids)-1)
	for _, id := range ids[1:] {
		rows = append(rows, subagent.Row{Kind: subagent.KindChild, ID: id, ParentID: ids[0], Depth: 1})
	}
	list := jsjson.StringArray(ids)
	floor := func() int64 {
		r, err := db.QueryContext(ctx, `SELECT session_id, model, messages, input_tokens, output_tokens, cache_read_tokens, reasoning_tokens
			FROM session_usage WHERE session_id IN (SELECT value FROM json_each(?)) ORDER BY session_id, model`, list)
		if err != nil {
			b.Fatal(err)
		}
		defer r.Close()
		var sum int64
		for r.Next() {
			var id, model string
			var n [5]int64
			if err := r.Scan(&id, &model, &n[0], &n[1], &n[2], &n[3], &n[4]); err != nil {
				b.Fatal(err)
			}
			sum += n[1]
		}
		return sum
	}
	want := floor()
	var floorTime, rollupTime time.Duration
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		if floor() != want {
			b.Fatal("floor changed")
		}
		t1 := time.Now()
		tree, err := usage.Walk(ctx, rows, st, ids[0])
		if err != nil {
			b.Fatal(err)
		}
		rollupTime += time.Since(t1)
		floorTime += t1.Sub(t0)
		if tree.Nodes[0].Subtree.InputTokens != want {
			b.Fatalf("rollup %d, floor %d", tree.Nodes[0].Subtree.InputTokens, want)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(rollupTime.Nanoseconds())/float64(b.N), "rollup-ns/op")
	b.ReportMetric(float64(floorTime.Nanoseconds())/float64(b.N), "floor-ns/op")
	b.ReportMetric(float64(rollupTime)/float64(floorTime), "ratio")
	b.ReportMetric(float64(with)/float64(without), "import-ratio")
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	bare, err := os.Stat(barePath)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(fi.Size()-bare.Size())/float64(3*benchChildren), "usage-bytes/event")
	b.ReportMetric(float64(fi.Size()), "db-bytes")
}
