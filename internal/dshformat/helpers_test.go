package dshformat

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/dsh-project/dsh/internal/session"
)

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
