package transfer

import (
	"github.com/dsh-project/dsh/internal/corpus"
	"github.com/dsh-project/dsh/internal/dshfixtures"

	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/dsh-project/dsh/internal/dshformat"
	"github.com/dsh-project/dsh/internal/render"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/sqlitepersist"
	"github.com/dsh-project/dsh/internal/subagent"
)

func openStore(t testing.TB) *sqlitepersist.Store {
	t.Helper()
	st, err := sqlitepersist.Open(context.Background(), filepath.Join(t.TempDir(), "dsh.db"), sqlitepersist.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Error(err)
		}
	})
	return st
}

// corpusAt is a DSH corpus a test imports: how its format is opened, and
// its path.
type corpusAt struct {
	open func(context.Context, string) (dshformat.Source, error)
	path string
}

func openSource(t testing.TB, loc corpusAt) dshformat.Source {
	t.Helper()
	src, err := loc.open(context.Background(), loc.path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	return src
}

func importAll(t testing.TB, st *sqlitepersist.Store, loc corpusAt) Summary {
	t.Helper()
	sum, err := Import(context.Background(), st, openSource(t, loc), ImportOptions{})
	if err != nil {
		t.Fatalf("import %s: %v", loc.path, err)
	}
	return sum
}

// result finds one session's result in a summary.
func result(t testing.TB, sum Summary, id string) Result {
	t.Helper()
	for _, r := range sum.Results {
		if r.ID == id {
			return r
		}
	}
	t.Fatalf("no result for %q in %+v", id, sum.Results)
	return Result{}
}

func assertSameJSON(t testing.TB, what string, got, want []byte) {
	t.Helper()
	if !slices.Equal(dshfixtures.JSONTokens(t, got), dshfixtures.JSONTokens(t, want)) {
		t.Fatalf("%s:\n got %s\nwant %s", what, got, want)
	}
}

// listingJSON is rows as dsh list -o json prints them (descendants scope).
func listingJSON(rows []subagent.Row) []byte {
	b := []byte{'['}
	for i, r := range rows {
		if i > 0 {
			b = append(b, ',')
		}
		b = render.AppendListEntry(b, r, corpus.ScopeDescendants)
	}
	return append(b, ']')
}

// template is a real continuable child DSH wrote (oracle corpus a): a
// valid log of one completed turn whose descriptor is its first event.
func template(t testing.TB) *dshformat.Session {
	t.Helper()
	dir := dshfixtures.Dir(t, "dsh-oracle/a-continuable-and-oneshot/jsonl-plain")
	src, err := dshformat.OpenJSONL(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	s, err := src.Read(context.Background(), "7cc39d3a-da07-4b5f-9b28-59bc4f2fe550")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func strp(s string) *string { return &s }

// childHeader is the template child's header under another id and parent.
func childHeader(tmpl *dshformat.Session, id, parent string, createdAt int64) session.Header {
	h := tmpl.Header
	h.ID, h.ParentSession, h.CreatedAt = id, strp(parent), createdAt
	return h
}

// writePlain writes a session as a plain DSH JSONL file under dir and
// returns its path.
func writePlain(t testing.TB, dir string, h session.Header, events []session.Event) string {
	t.Helper()
	path, err := dshformat.WriteJSONL(context.Background(), dir, h, events, dshformat.WriteOptions{Compression: dshformat.CompressionNone})
	if err != nil {
		t.Fatal(err)
	}
	return path
}

func appendFile(t testing.TB, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}
