package search_test

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/jsjson"
	"github.com/dsh-project/dsh/internal/search"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/sqlitepersist"
)

// The benchmark corpus: benchSessions sessions of benchEvents message
// events each (100,000 events), each message 12 to 40 words drawn from a
// vocabulary of benchWords with a skewed (Zipf-like) frequency.
const (
	benchSessions = 1_000
	benchEvents   = 100
	benchWords    = 20_000
)

func benchWord(i int) string {
	syllables := []string{"ka", "lo", "mi", "nu", "pe", "ra", "si", "to", "vu", "ze", "an", "or"}
	var b strings.Builder
	for n := i + 1; n > 0; n /= len(syllables) {
		b.WriteString(syllables[n%len(syllables)])
	}
	return b.String()
}

// benchSearchStore writes the corpus into a new SQLite file; with
// withoutIndex migration 0013's triggers are dropped first, to measure
// what the index costs an import and the file.
func benchSearchStore(b *testing.B, withoutIndex bool) (path string, took time.Duration) {
	b.Helper()
	ctx := context.Background()
	path = filepath.Join(b.TempDir(), "dsh.db")
	st, err := sqlitepersist.Open(ctx, path, sqlitepersist.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	if withoutIndex {
		db, err := sql.Open("sqlite", path)
		if err != nil {
			b.Fatal(err)
		}
		for _, tr := range []string{"events_search_insert", "events_search_delete", "events_search_update"} {
			if _, err := db.Exec("DROP TRIGGER " + tr); err != nil {
				b.Fatal(err)
			}
		}
		db.Close()
	}
	rng := rand.New(rand.NewPCG(1, 2))
	zipf := rand.NewZipf(rng, 1.1, 1, benchWords-1)
	words := make([]string, benchWords)
	for i := range words {
		words[i] = benchWord(i)
	}
	start := time.Now()
	for s := 0; s < benchSessions; s += 500 {
		err = st.Update(ctx, func(tx backend.Store) error {
			for i := s; i < s+500; i++ {
				h := session.Header{ID: fmt.Sprintf("bench-%05d", i), CreatedAt: int64(i)}
				events := make([]session.Event, benchEvents)
				for k := range events {
					n := 12 + rng.IntN(29)
					text := make([]string, n)
					for w := range text {
						text[w] = words[zipf.Uint64()]
					}
					typ, data := "user/message", `{"content":[{"type":"text","text":`+jsjson.String(strings.Join(text, " "))+`}],"source":{"kind":"user"},"role":"user","id":"m`+fmt.Sprint(k)+`"}`
					if k%2 == 1 {
						typ, data = "assistant/message", `{"turn":1,"step":1,"message":{"role":"assistant","content":[{"type":"text","text":`+jsjson.String(strings.Join(text, " "))+`}],"source":{"kind":"model","provider":"p","model":"m"},"id":"a`+fmt.Sprint(k)+`"}}`
					}
					events[k] = session.Event{Type: typ, Seq: int64(k), Time: int64(1000 + k), Data: []byte(data), SurfaceOp: []byte(`"append"`)}
				}
				if _, err := tx.ImportSession(ctx, h, events, nil); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	return path, time.Since(start)
}

// BenchmarkSearch100k: dsh search's query (search.Run over the store: the
// index, the events joined, each hit's snippet made in Go) over 100,000
// events, warm, against a floor that asks the same FTS5 index for the same
// best 20 row ids and scans them; ratio = search / floor, in one run. It
// also reports what the index costs: the import of the same corpus with
// and without migration 0013's triggers (import-ratio) and the file's
// bytes per event.
func BenchmarkSearch100k(b *testing.B) {
	ctx := context.Background()
	path, with := benchSearchStore(b, false)
	barePath, without := benchSearchStore(b, true)
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
	// A frequent word, a rarer one's prefix and a phrase of two frequent
	// words.
	query := benchWord(3) + " OR " + benchWord(400) + "* OR \"" + benchWord(1) + " " + benchWord(2) + "\""
	q, err := search.Parse(query)
	if err != nil {
		b.Fatal(err)
	}
	const limit = 20
	floor := func() int {
		rows, err := db.QueryContext(ctx, `SELECT rowid FROM event_search_fts WHERE event_search_fts MATCH ? ORDER BY rank LIMIT ?`, q.FTS5(), limit)
		if err != nil {
			b.Fatal(err)
		}
		defer rows.Close()
		n := 0
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				b.Fatal(err)
			}
			n++
		}
		return n
	}
	if floor() != limit {
		b.Fatal("the floor finds fewer than 20 hits")
	}
	var floorTime, searchTime time.Duration
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		if floor() != limit {
			b.Fatal("floor changed")
		}
		t1 := time.Now()
		res, err := search.Run(ctx, st, q, search.Options{Limit: limit})
		if err != nil {
			b.Fatal(err)
		}
		searchTime += time.Since(t1)
		floorTime += t1.Sub(t0)
		if len(res.Hits) != limit {
			b.Fatalf("%d hits", len(res.Hits))
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(searchTime.Nanoseconds())/float64(b.N), "search-ns/op")
	b.ReportMetric(float64(floorTime.Nanoseconds())/float64(b.N), "floor-ns/op")
	b.ReportMetric(float64(searchTime)/float64(floorTime), "ratio")
	b.ReportMetric(float64(with)/float64(without), "import-ratio")
	b.ReportMetric(with.Seconds(), "import-s")
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	bare, err := os.Stat(barePath)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(fi.Size()-bare.Size())/float64(benchSessions*benchEvents), "index-bytes/event")
	b.ReportMetric(float64(fi.Size()), "db-bytes")
}
