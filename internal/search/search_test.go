package search_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/dshformat"
	"github.com/dsh-project/dsh/internal/location"
	"github.com/dsh-project/dsh/internal/pgstore"
	"github.com/dsh-project/dsh/internal/pgtest"
	"github.com/dsh-project/dsh/internal/search"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/transfer"
)

// corpus: session id -> the texts of its user messages (seq 0, 1, …).
var corpus = map[string][]string{
	"plain":          {"The quick brown fox jumps over the lazy dog", "A lazy afternoon", "quickly now"},
	"code":           {"run go test ./internal/search -run TestX", "error: x.y is undefined (hello-world)"},
	"unicode":        {"中文，测试 日本語", "ÉCOLE Straße", "Ünïcödé café"},
	"odd id/with:ch": {"fox and hound", "brown bread"},
	"id 'quoted' \t": {"the dog sleeps"},
}

// queries whose hits every backend agrees on (the shared subset: no
// accent folding, which only SQLite and --source do).
var shared = []string{
	"fox", "FOX", "lazy dog", `"lazy dog"`, `"dog lazy"`, "quick*", "qu*", `"quick brown"*`, "fox OR bread",
	"fox NOT hound", "brown AND (fox OR bread)", "lazy NOT (dog OR afternoon)", "x.y", "hello-world", `"x y"`,
	"中文", "测试", "日本*", "école", "STRASSE", "straße", "ünïcödé", "internal search", "TestX",
}

// queries only SQLite and the streaming matcher fold this way.
var folded = map[string][]string{
	"cafe":    {"unicode/2"},
	"unicode": {"unicode/2"},
	"ecole":   {"unicode/1"},
}

func writeCorpus(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for id, texts := range corpus {
		var b strings.Builder
		fmt.Fprintf(&b, `{"type":"session","version":0,"id":%q,"createdAt":1,"cwd":%q,"delegationDepth":0}`+"\n", id, dir)
		for i, text := range texts {
			fmt.Fprintf(&b, `{"type":"user/message","seq":%d,"time":%d,"data":{"content":[{"type":"text","text":%q}],"source":{"kind":"user"},"role":"user","id":"m%d"},"surfaceOp":"append"}`+"\n", i, 1000+i, text, i)
		}
		name := strings.NewReplacer("/", "_", ":", "_", "'", "_", "\t", "_", " ", "_").Replace(id)
		if err := os.WriteFile(filepath.Join(dir, name+".jsonl"), []byte(b.String()), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func openSource(t *testing.T, spec string) (*dshformat.Corpus, dshformat.Source) {
	t.Helper()
	loc, err := location.ParseSource(spec)
	if err != nil {
		t.Fatal(err)
	}
	src, err := location.ImportSource(context.Background(), loc, location.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	c, err := dshformat.NewCorpus(context.Background(), src, spec)
	if err != nil {
		t.Fatal(err)
	}
	return c, src
}

func hits(t *testing.T, src backend.Reader, query string, o search.Options) []string {
	t.Helper()
	out := append([]string{}, ranked(t, src, query, o)...)
	sort.Strings(out)
	return out
}

type store interface {
	backend.Backend
	backend.SearchReader
}

// The same queries give the same hits on SQLite, PostgreSQL and the
// streaming matcher over the corpus read in place; accent folding is
// SQLite's and the matcher's only.
func TestBackendsAgree(t *testing.T) {
	ctx := context.Background()
	spec := "jsonl:" + writeCorpus(t)
	c, _ := openSource(t, spec)
	sq, _ := sqliteStore(t)
	pgs, err := pgstore.Open(ctx, pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pgs.Close() })
	for _, st := range []store{sq, pgs} {
		_, src := openSource(t, spec)
		if _, err := transfer.Import(ctx, st, src, transfer.ImportOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, query := range shared {
		want := hits(t, c, query, search.Options{})
		if got := hits(t, sq, query, search.Options{}); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: SQLite %v, source %v", query, got, want)
		}
		if got := hits(t, pgs, query, search.Options{}); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: PostgreSQL %v, source %v", query, got, want)
		}
	}
	for query, want := range folded {
		if got := hits(t, c, query, search.Options{}); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: source %v, want %v", query, got, want)
		}
		if got := hits(t, sq, query, search.Options{}); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: SQLite %v, want %v", query, got, want)
		}
	}
	// Some answers by hand, so that the backends cannot agree on a wrong one.
	for query, want := range map[string][]string{
		`"lazy dog"`:    {"plain/0"},
		`"dog lazy"`:    {},
		"fox":           {"odd id/with:ch/0", "plain/0"},
		"quick*":        {"plain/0", "plain/2"},
		"fox NOT hound": {"plain/0"},
		"x.y":           {"code/1"},
		"中文":            {"unicode/0"},
		"日本*":           {"unicode/0"},
		"STRASSE":       {},
		"straße":        {"unicode/1"},
	} {
		if got := hits(t, sq, query, search.Options{}); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %v, want %v", query, got, want)
		}
	}
	// Scope, type and time filters.
	for _, src := range []backend.Reader{c, sq, pgs} {
		if got := hits(t, src, "fox OR dog", search.Options{Sessions: []string{"id 'quoted' \t"}}); !reflect.DeepEqual(got, []string{"id 'quoted' \t/0"}) {
			t.Errorf("%T scoped: %v", src, got)
		}
		since := int64(1001)
		if got := hits(t, src, "lazy", search.Options{Since: &since}); !reflect.DeepEqual(got, []string{"plain/1"}) {
			t.Errorf("%T since: %v", src, got)
		}
		if got := hits(t, src, "lazy", search.Options{Types: []string{search.TypeToolResult}}); len(got) != 0 {
			t.Errorf("%T types: %v", src, got)
		}
		if got := hits(t, src, "fox OR dog OR lazy", search.Options{Limit: 2}); len(got) != 2 {
			t.Errorf("%T limit: %v", src, got)
		}
	}
	// A store's best n are the first n of all its hits in its own order
	// (rank, then session and seq), with a filter or without.
	since := int64(1001)
	for _, st := range []store{sq, pgs} {
		for _, o := range []search.Options{{}, {Since: &since}, {Types: []string{search.TypeUserMessage, search.TypeAssistantMessage}}} {
			all := ranked(t, st, "fox OR dog OR lazy OR quick*", o)
			if len(all) < 2 {
				t.Fatalf("%T %+v: %d hits, want several", st, o, len(all))
			}
			for n := 1; n <= len(all); n++ {
				o.Limit = n
				if got := ranked(t, st, "fox OR dog OR lazy OR quick*", o); !reflect.DeepEqual(got, all[:n]) {
					t.Errorf("%T %+v: %v, want %v", st, o, got, all[:n])
				}
			}
		}
	}
}

// ranked is a search's hits as session/seq, best first.
func ranked(t *testing.T, src backend.Reader, query string, o search.Options) []string {
	t.Helper()
	q, err := search.Parse(query)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	res, err := search.Run(context.Background(), src, q, o)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	var out []string
	for _, h := range res.Hits {
		out = append(out, fmt.Sprintf("%s/%d", h.SessionID, h.Seq))
	}
	return out
}

// Snippets highlight the matching words between the markers.
func TestSnippet(t *testing.T) {
	text := "The quick brown fox\njumps over the lazy dog"
	q, _ := search.Parse(`"lazy dog" OR quick*`)
	toks := search.Tokens(text, search.FoldDiacritics)
	hit := make([]bool, len(toks))
	if !search.NewMatcher(q, search.FoldDiacritics).Match(toks, hit) {
		t.Fatal("no match")
	}
	if got, want := search.Snippet(text, toks, hit), "The «quick» brown fox jumps over the «lazy» «dog»"; got != want {
		t.Errorf("snippet %q, want %q", got, want)
	}
	long := strings.Repeat("word ", 50) + "needle " + strings.Repeat("tail ", 50)
	q, _ = search.Parse("needle")
	toks = search.Tokens(long, search.FoldDiacritics)
	hit = make([]bool, len(toks))
	search.NewMatcher(q, search.FoldDiacritics).Match(toks, hit)
	if got := search.Snippet(long, toks, hit); !strings.HasPrefix(got, "… word") || !strings.Contains(got, "«needle»") || !strings.HasSuffix(got, "tail …") {
		t.Errorf("long snippet %q", got)
	}
	// The spans name the highlighted words, not text that holds the
	// markers itself.
	odd := "a «fake» mark <b>and</b> a real one: «x»  needle\n"
	q, _ = search.Parse("needle OR and")
	toks = search.Tokens(odd, search.FoldDiacritics)
	hit = make([]bool, len(toks))
	search.NewMatcher(q, search.FoldDiacritics).Match(toks, hit)
	snippet, marks := search.SnippetMarks(odd, toks, hit)
	var marked []string
	for _, m := range marks {
		marked = append(marked, snippet[m.Start:m.End])
	}
	if want := "a «fake» mark <b>«and»</b> a real one: «x» «needle»"; snippet != want || !reflect.DeepEqual(marked, []string{"«and»", "«needle»"}) {
		t.Errorf("snippet %q marks %q, want %q and «and», «needle»", snippet, marked, want)
	}
}

// Hostile or malformed queries are a one-line INVALID_INPUT, never handed
// to an engine; every query Parse accepts runs on both engines.
func TestQuerySyntax(t *testing.T) {
	bad := []string{"", "   ", `"unterminated`, "a OR", "(a", "a)", "*", "NOT a", "a AND", "a OR OR b",
		"title:foo", "^foo", "{a b}", "'; DROP TABLE events; --", `a\b`, "a*b", "AND*", "---", `""`,
		"a | b", "a & !b", "x <-> y", strings.Repeat("(", 40) + "a" + strings.Repeat(")", 40), strings.Repeat("a ", 3000)}
	for _, s := range bad {
		_, err := search.Parse(s)
		var de *dsherr.Error
		if !errors.As(err, &de) || de.Code != dsherr.InvalidInput || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: %v, want one line of INVALID_INPUT", s, err)
		}
	}
	good := map[string][2]string{
		"a":                  {`"a"`, `('a')`},
		"a b":                {`("a" AND "b")`, `((('a') & ('b')))`},
		`"a b"*`:             {`"a b" *`, `('a' <-> 'b':*)`},
		"a-b":                {`"a b"`, `('a' <-> 'b')`},
		"a OR b NOT c":       {`("a" OR (("b") NOT ("c")))`, `(('a') | ((('b')) & !('c')))`},
		"(a OR b) AND NOT c": {`((("a" OR "b")) NOT ("c"))`, `(((('a') | ('b'))) & !('c'))`},
		"NEAR(a b)":          {`("NEAR" AND ("a" AND "b"))`, `((('NEAR') & ((('a') & ('b')))))`},
		"don't":              {`"don t"`, `('don' <-> 't')`},
	}
	for s, want := range good {
		q, err := search.Parse(s)
		if err != nil {
			t.Errorf("%q: %v", s, err)
			continue
		}
		if q.FTS5() != want[0] || q.TSQuery() != want[1] {
			t.Errorf("%q: FTS5 %s, tsquery %s; want %s, %s", s, q.FTS5(), q.TSQuery(), want[0], want[1])
		}
	}
}

// The index follows every write: create, append, a rolled-back append.
func TestIndexFollowsWrites(t *testing.T) {
	ctx := context.Background()
	check := func(t *testing.T, st store, query string, want ...string) {
		t.Helper()
		if want == nil {
			want = []string{}
		}
		if got := hits(t, st, query, search.Options{}); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %v, want %v", query, got, want)
		}
	}
	run := func(t *testing.T, st store) {
		msg := func(seq int64, text string) session.Event {
			e := ev(seq, "user/message", fmt.Sprintf(`{"content":[{"type":"text","text":%q}],"source":{"kind":"user"},"role":"user","id":"m%d"}`, text, seq))
			e.SurfaceOp = json.RawMessage(`"append"`)
			return e
		}
		h := session.Header{ID: "w", CreatedAt: 1, Version: 0}
		if err := st.CreateSession(ctx, h, []session.Event{msg(0, "alpha beta")}); err != nil {
			t.Fatal(err)
		}
		check(t, st, "alpha", "w/0")
		if err := st.Append(ctx, "w", 1, []session.Event{msg(1, "gamma")}); err != nil {
			t.Fatal(err)
		}
		check(t, st, "gamma", "w/1")
		rolledBack := errors.New("roll back")
		err := st.Update(ctx, func(tx backend.Store) error {
			if err := tx.Append(ctx, "w", 2, []session.Event{msg(2, "delta")}); err != nil {
				return err
			}
			return rolledBack
		})
		if !errors.Is(err, rolledBack) {
			t.Fatal(err)
		}
		check(t, st, "delta")
	}
	t.Run("sqlite", func(t *testing.T) { st, _ := sqliteStore(t); run(t, st) })
	t.Run("postgres", func(t *testing.T) {
		st, err := pgstore.Open(ctx, pgtest.NewDatabase(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		run(t, st)
	})
}
