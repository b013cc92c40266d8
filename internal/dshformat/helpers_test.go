package dshformat

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/dsh-project/dsh/internal/session"
)

// fixtures is DSH's real data, read in place (never copied).
const fixtures = "../../../shared/fixtures"

func fixtureDir(t testing.TB, rel string) string {
	t.Helper()
	dir := filepath.Join(fixtures, rel)
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("DSH fixtures not available at %s: %v", dir, err)
	}
	return dir
}

// encodeEvents is the byte form dsh compares logs by: each event as
// session.Event.MarshalJSON writes it.
func encodeEvents(t testing.TB, events []session.Event) [][]byte {
	t.Helper()
	out := make([][]byte, len(events))
	for i, e := range events {
		b, err := e.MarshalJSON()
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		out[i] = b
	}
	return out
}

func assertSameEvents(t testing.TB, what string, got, want []session.Event) {
	t.Helper()
	g, w := encodeEvents(t, got), encodeEvents(t, want)
	if len(g) != len(w) {
		t.Fatalf("%s: %d events, want %d", what, len(g), len(w))
	}
	for i := range g {
		if !bytes.Equal(g[i], w[i]) {
			t.Fatalf("%s: event %d differs:\n got %s\nwant %s", what, i, g[i], w[i])
		}
	}
}

func assertSameHeader(t testing.TB, what string, got, want session.Header) {
	t.Helper()
	if got.Witness() != want.Witness() || got.InheritedCut() != want.InheritedCut() || got.IsSeeded() != want.IsSeeded() {
		t.Fatalf("%s: header %s, want %s", what, got.MarshalJSONL(), want.MarshalJSONL())
	}
}

// readAll reads every session a source offers, failing on any error.
func readAll(t testing.TB, src Source) map[string]*Session {
	t.Helper()
	ctx := context.Background()
	hs, err := src.Headers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]*Session, len(hs))
	for _, h := range hs {
		s, err := src.Read(ctx, h.ID)
		if err != nil {
			t.Fatalf("read %s: %v", h.ID, err)
		}
		out[h.ID] = s
	}
	return out
}

func openJSONL(t testing.TB, path string) Source {
	t.Helper()
	src, err := OpenJSONL(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	return src
}

func openSQLite(t testing.TB, path string) Source {
	t.Helper()
	src, err := OpenDSHSQLite(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	return src
}

// writeFile writes a test file under dir (parents created).
func writeFile(t testing.TB, dir, rel string, content []byte) string {
	t.Helper()
	p := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, content, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func ptr[T any](v T) *T { return &v }

func asCorrupt(t testing.TB, err error) *CorruptError {
	t.Helper()
	var ce *CorruptError
	if !errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) {
		t.Fatalf("error %v (%T) is not a *CorruptError", err, err)
	}
	return ce
}

func asRefusal(t testing.TB, err error) *UnsupportedVersionError {
	t.Helper()
	var uv *UnsupportedVersionError
	if !errors.As(err, &uv) {
		t.Fatalf("error %v (%T) is not an *UnsupportedVersionError", err, err)
	}
	return uv
}
