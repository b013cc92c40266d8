package dshformat

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/session"
)

// focusTree writes a random JSONL corpus in DSH's layout and loose files:
// roots, children and grandchildren, subagent or not, some damaged or
// refused, files that yield no session, and, when dup, one id in two
// files. It returns the ids written.
func focusTree(t *testing.T, r *rand.Rand, dup bool) (string, []string) {
	t.Helper()
	dir := t.TempDir()
	var ids []string
	header := func(id, parent string, subagent bool, createdAt int) string {
		h := `{"type":"session","version":0,"id":"` + id + `","createdAt":` + itoa(createdAt) + `,"cwd":"/w"`
		if parent != "" {
			h += `,"parentSession":"` + parent + `"`
		}
		if subagent {
			h += `,"origin":"subagent","delegationDepth":1`
		}
		return h + "}\n"
	}
	n := 20 + r.IntN(40)
	for i := range n {
		id := fmt.Sprintf("s%02d", i)
		parent := ""
		if i > 0 && r.IntN(4) > 0 {
			parent = ids[r.IntN(len(ids))]
		}
		log := header(id, parent, parent != "" && r.IntN(3) > 0, r.IntN(5))
		switch r.IntN(6) {
		case 0:
			log += turnStart(0) + "\n{broken\n" + turnEnd(2) + "\n" // damaged
		case 1:
			log += turnStart(0) + "\n" + turnEnd(1) + "\n{torn" // torn tail
		default:
			log += turnStart(0) + "\n" + turnEnd(1) + "\n"
		}
		switch r.IntN(8) {
		case 0:
			writeFile(t, dir, id+".jsonl", []byte(log)) // loose
		case 5:
			// In DSH's layout under another session's name.
			writeFile(t, dir, filepath.Join("--w--", "x"+id, "session.jsonl"), []byte(log))
		case 6:
			// Beside another session's log, or below its directory.
			writeFile(t, dir, filepath.Join("--w--", fmt.Sprintf("s%02d", r.IntN(n)), id+".jsonl"), []byte(log))
		case 7:
			writeFile(t, dir, filepath.Join("--w--", fmt.Sprintf("s%02d", r.IntN(n)), "sub"+id, "session.jsonl"), []byte(log))
		case 1:
			// A generation the name declares but the header does not.
			writeFile(t, dir, filepath.Join("--w--", id, "session.v2.jsonl"), []byte(log))
		default:
			writeFile(t, dir, filepath.Join("--w--", id, "session.jsonl"), []byte(log))
		}
		ids = append(ids, id)
	}
	writeFile(t, dir, "junk.jsonl", []byte("not a header\n"))
	if err := os.MkdirAll(filepath.Join(dir, "adir.jsonl"), 0o755); err != nil {
		t.Fatal(err)
	}
	if dup {
		id := ids[r.IntN(len(ids))]
		writeFile(t, dir, filepath.Join("copies", id+".jsonl"), []byte(header(id, "", false, 9)))
	}
	return dir, ids
}

// corpusAnswers is every answer of c's read side about ids, as text:
// focusOnly asks only what a corpus focused on focus answers without
// reading the corpus again.
func corpusAnswers(t *testing.T, c *Corpus, ids []string, focus string, focusOnly bool) string {
	t.Helper()
	ctx := context.Background()
	var b strings.Builder
	say := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	code := func(err error) string {
		if err == nil {
			return "ok"
		}
		return string(dsherr.CodeOf(err))
	}
	headerLine := func(h session.Header) string {
		return fmt.Sprintf("%s<%s>@%d v%d sub=%v", h.ID, h.Parent(), h.CreatedAt, h.Version, h.IsSubagent())
	}
	var kids []string
	if err := c.ChildrenOf(ctx, focus, func(h session.Header) error { kids = append(kids, h.ID); return nil }); err != nil {
		t.Fatal(err)
	}
	asked := append([]string{focus, "absent"}, kids...)
	if !focusOnly {
		asked = append(asked, ids...)
	}
	for _, id := range asked {
		h, herr := c.Header(ctx, id)
		say("header %s: %s %s", id, code(herr), headerLine(h))
		has, err := c.HasSubagentChild(ctx, id)
		say("has %s: %v %v", id, has, err)
		if id == focus || !focusOnly {
			var got []string
			err := c.ChildrenOf(ctx, id, func(h session.Header) error { got = append(got, headerLine(h)); return nil })
			say("children %s: %q %v", id, got, err)
		}
		if herr == nil {
			a, err := c.Audit(ctx, id)
			if err != nil {
				t.Fatalf("Audit(%s): %v", id, err)
			}
			say("audit %s: %d events, torn %v, %s", id, len(a.Events), a.Torn != nil, code(a.ReadErr))
			format, err := c.SourceFormat(ctx, id)
			say("format %s: %s %v", id, format, err)
		}
	}
	parents, err := c.SubagentParents(ctx, asked)
	say("subagent parents: %v %v", parents, err)
	has, err := c.HasSessions(ctx)
	say("has sessions: %v %v", has, err)
	n, err := c.CountSessions(ctx, false)
	say("sessions: %d %v", n, err)
	for _, u := range c.Unoffered() {
		say("unoffered %s %q: %v", u.Location, u.ID, u.Err)
	}
	if focusOnly {
		return b.String()
	}
	for _, sub := range []bool{false, true} {
		n, err := c.CountSessions(ctx, sub)
		say("count %v: %d %v", sub, n, err)
		var ps, roots []string
		err = c.EachParent(ctx, sub, func(p string) error { ps = append(ps, p); return nil })
		say("parents %v: %q %v", sub, ps, err)
		err = c.RootHeaders(ctx, sub, func(h session.Header) error { roots = append(roots, h.ID); return nil })
		say("roots %v: %q %v", sub, roots, err)
	}
	var all []string
	err = c.ListHeaders(ctx, func(h session.Header) error { all = append(all, headerLine(h)); return nil })
	say("all: %q %v", all, err)
	return b.String()
}

// A corpus opened focused on one session answers every question of the
// read side as the corpus opened whole does: those the focus answers
// (its header, its children, which ids exist, which sessions have a
// subagent child, the problems) without reading the corpus again, the
// others after reading it whole.
func TestFocusedCorpusAnswersAsWhole(t *testing.T) {
	ctx := context.Background()
	for seed := range uint64(12) {
		r := rand.New(rand.NewPCG(seed, 24))
		dup := seed%3 == 2
		dir, ids := focusTree(t, r, dup)
		whole, err := NewCorpus(ctx, openJSONL(t, dir), "jsonl:test")
		if err != nil {
			t.Fatal(err)
		}
		for _, focus := range append([]string{"absent"}, ids[:min(len(ids), 8)]...) {
			src, err := OpenJSONLFocused(ctx, dir, focus)
			if err != nil {
				t.Fatal(err)
			}
			c, err := NewCorpus(ctx, src, "jsonl:test")
			if err != nil {
				t.Fatal(err)
			}
			what := fmt.Sprintf("seed %d, focus %s", seed, focus)
			if got, want := corpusAnswers(t, c, ids, focus, true), corpusAnswers(t, whole, ids, focus, true); got != want {
				t.Fatalf("%s: focused answers:\n%s\nwhole corpus's:\n%s", what, got, want)
			}
			// The focus is what kept those answers cheap: without two
			// sessions of one id, nothing above read the corpus again.
			if focused := c.ix.Load().focus != nil; focused == dup {
				t.Fatalf("%s: focused after the focus's questions = %v, want %v", what, focused, !dup)
			}
			if got, want := corpusAnswers(t, c, ids, focus, false), corpusAnswers(t, whole, ids, focus, false); got != want {
				t.Fatalf("%s: focused answers:\n%s\nwhole corpus's:\n%s", what, got, want)
			}
			if c.ix.Load().focus != nil {
				t.Fatalf("%s: still focused after questions about the whole corpus", what)
			}
		}
	}
}

// A focused source keeps whole only its focus and the focus's children;
// Headers, which promises every session, reads the corpus whole first.
func TestFocusedSourceKeepsItsFocus(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(7, 7))
	dir, ids := focusTree(t, r, false)
	whole := openJSONL(t, dir)
	all, err := whole.Headers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	focus := ids[0]
	var want []string
	for _, h := range all {
		if h.ID == focus || h.Parent() == focus {
			want = append(want, h.ID)
		}
	}
	src, err := OpenJSONLFocused(ctx, dir, focus)
	if err != nil {
		t.Fatal(err)
	}
	v := src.(*jsonlSource).view()
	var kept []string
	for i := range v.n {
		kept = append(kept, v.at(i).ID)
	}
	if v.focus == nil || !slices.Equal(kept, want) {
		t.Fatalf("focused on %s the source keeps %q (focus %v), want %q", focus, kept, v.focus != nil, want)
	}
	got, err := src.Headers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(all) {
		t.Fatalf("Headers of a focused source = %d headers, want all %d", len(got), len(all))
	}
	for i := range got {
		assertSameHeader(t, "Headers", got[i], all[i])
	}
}

// A tree read in chunks yields, chunk after chunk, the headers Headers
// returns for the whole tree, no chunk holding more than its limit but for
// the sessions of one id, and then the same problems.
func TestChunksAreTheWholeTree(t *testing.T) {
	ctx := context.Background()
	for seed := range uint64(8) {
		r := rand.New(rand.NewPCG(seed, 48))
		dir, _ := focusTree(t, r, seed%2 == 1)
		whole := openJSONL(t, dir)
		want, err := whole.Headers(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, limit := range []int{1, 2, 3, 7, 1000} {
			what := fmt.Sprintf("seed %d, limit %d", seed, limit)
			src, err := OpenJSONLChunked(ctx, dir, limit)
			if err != nil {
				t.Fatal(err)
			}
			var got []session.Header
			chunks := 0
			err = src.(*chunkedSource).HeaderChunks(ctx, func(c HeaderChunk) error {
				chunks++
				if c.N > limit {
					t.Errorf("%s: a chunk of %d sessions", what, c.N)
				}
				if c.Found != len(want)+len(whole.Problems()) {
					t.Errorf("%s: Found = %d, want %d sessions and %d problems", what, c.Found, len(want), len(whole.Problems()))
				}
				for i := range c.N {
					h := c.At(i)
					got = append(got, h)
					// The chunk's sessions read as the whole tree's.
					s, err := src.ReadAsFound(ctx, h.ID)
					w, werr := whole.ReadAsFound(ctx, h.ID)
					if (err == nil) != (werr == nil) || err == nil && len(s.Events) != len(w.Events) {
						t.Errorf("%s: ReadAsFound(%s) = %v, whole tree's %v", what, h.ID, err, werr)
					}
				}
				// Reading the chunk's sessions did not read the tree whole.
				if limit < len(want) && src.(*chunkedSource).state.Load().chunk == nil {
					t.Fatalf("%s: reading a chunk's sessions read the whole tree", what)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("%s: %d headers in %d chunks, want %d", what, len(got), chunks, len(want))
			}
			for i := range got {
				assertSameHeader(t, what, got[i], want[i])
			}
			if wantChunks := (len(want) + limit - 1) / limit; chunks < wantChunks {
				t.Fatalf("%s: %d chunks, want at least %d", what, chunks, wantChunks)
			}
			// Within 2 × limit, and one more, before trimming.
			if held := src.(*chunkedSource).held; held > 2*limit+1 {
				t.Fatalf("%s: a walk held %d sessions at once", what, held)
			}
			if g, w := fmt.Sprint(src.Problems()), fmt.Sprint(whole.Problems()); g != w {
				t.Fatalf("%s: problems\n%s\nwant\n%s", what, g, w)
			}
			// A corpus over a source read in chunks is the whole tree's.
			chunked, err := OpenJSONLChunked(ctx, dir, limit)
			if err != nil {
				t.Fatal(err)
			}
			c, err := NewCorpus(ctx, chunked, "jsonl:test")
			if err != nil {
				t.Fatal(err)
			}
			wc, err := NewCorpus(ctx, whole, "jsonl:test")
			if err != nil {
				t.Fatal(err)
			}
			if g, w := corpusAnswers(t, c, nil, want[0].ID, false), corpusAnswers(t, wc, nil, want[0].ID, false); g != w {
				t.Fatalf("%s: a corpus over the chunked source answers\n%s\nthe whole tree's\n%s", what, g, w)
			}
		}
	}
}
