package dshformat

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The layout rules of a DSH JSONL tree, each on a tree built here (the
// fixture tests cover them too, but only where ../shared exists).

// layoutHeader is a format-0 header line for id; cwd "" leaves the cwd out.
func layoutHeader(id, cwd string) string {
	line := `{"type":"session","version":0,"id":` + quoteJSON(id) + `,"createdAt":1`
	if cwd != "" {
		line += `,"cwd":` + quoteJSON(cwd)
	}
	return line + `,"delegationDepth":0}`
}

func quoteJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func sessionLog(id, cwd string) []byte {
	return []byte(layoutHeader(id, cwd) + "\n" + turnStart(0) + "\n" + turnEnd(1) + "\n")
}

func offered(t *testing.T, src Source) []string {
	t.Helper()
	hs, err := src.Headers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, h := range hs {
		ids = append(ids, h.ID)
	}
	slices.Sort(ids)
	return ids
}

// Sessions without a cwd live in DSH's _no-cwd project directory; it is
// searched like any project (its leading "_" marks no directory to skip),
// and DSH's path identity holds there as under a --key-- project.
func TestJSONLNoCwdProject(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	writeFile(t, dir, "_no-cwd/n/session.jsonl", sessionLog("n", ""))
	writeFile(t, dir, "_no-cwd/other/session.jsonl", sessionLog("m", ""))
	writeFile(t, dir, "--w--/s/session.jsonl", sessionLog("s", "/w"))
	src := openJSONL(t, dir)
	if got := offered(t, src); !slices.Equal(got, []string{"m", "n", "s"}) || len(src.Problems()) != 0 {
		t.Fatalf("offered %q, problems %v; want m, n (from _no-cwd) and s", got, src.Problems())
	}
	s, err := src.Read(ctx, "n")
	if err != nil || s.Header.Cwd != nil || len(s.Events) != 2 {
		t.Fatalf("read n = %+v, %v; want its two events and no cwd", s, err)
	}
	if _, err := src.Read(ctx, "m"); !strings.Contains(asCorrupt(t, err).Error(), `header id "m" does not match its session directory "other"`) {
		t.Fatalf("read m: %v", err)
	}
	// The same tree opened at the project directory itself.
	if got := offered(t, openJSONL(t, filepath.Join(dir, "_no-cwd"))); !slices.Equal(got, []string{"m", "n"}) {
		t.Fatalf("_no-cwd opened directly offers %q", got)
	}
}

// A session directory is the id as EncodeSegment writes it: an id with
// characters DSH escapes matches its escaped directory, and a project
// directory is recognised by its --key-- form (anything else is a folder
// of files found by content, whose names are not checked).
func TestJSONLEncodedSessionDirectories(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, id := range []string{"a/b", "..", "ü x"} {
		enc, err := EncodeSegment(id)
		if err != nil {
			t.Fatal(err)
		}
		key, err := ProjectKey("/home/u/proj")
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, dir, filepath.Join(key, enc, "session.jsonl"), sessionLog(id, "/home/u/proj"))
	}
	// Not escaped as DSH would: refused under a project, read elsewhere.
	writeFile(t, dir, "--home-u-proj--/a b/session.jsonl", sessionLog("a b", "/home/u/proj"))
	writeFile(t, dir, "plain/c d/session.jsonl", sessionLog("c d", "/home/u/proj"))
	src := openJSONL(t, dir)
	if got := offered(t, src); !slices.Equal(got, []string{"..", "a b", "a/b", "c d", "ü x"}) || len(src.Problems()) != 0 {
		t.Fatalf("offered %q, problems %v", got, src.Problems())
	}
	for _, id := range []string{"a/b", "..", "ü x", "c d"} {
		if _, err := src.Read(ctx, id); err != nil {
			t.Errorf("read %q: %v", id, err)
		}
	}
	if _, err := src.Read(ctx, "a b"); !strings.Contains(asCorrupt(t, err).Error(), `(it would be "a~0020b")`) {
		t.Fatalf(`read "a b": %v`, err)
	}
}

// Files are found by content at any depth: DSH's snapshot layout
// (children as session.N.jsonl beside their parent) and loose logs are
// sessions without a path identity to check; files that are no session
// log (session.lock, notes, temporary files) are neither read nor
// reported; a link to a directory is not followed.
func TestJSONLFoundByContent(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	writeFile(t, dir, "snap/session.jsonl", sessionLog("parent", "/w"))
	writeFile(t, dir, "snap/session.1.jsonl", sessionLog("child", "/w"))
	writeFile(t, dir, "deep/a/b/c/anything.jsonl", sessionLog("loose", "/w"))
	writeFile(t, dir, "--w--/s/session.jsonl", sessionLog("s", "/w"))
	writeFile(t, dir, "--w--/s/session.lock", []byte("4242"))
	writeFile(t, dir, "--w--/s/session.jsonl.tmp-1", sessionLog("tmp", "/w"))
	writeFile(t, dir, "--w--/notes.txt", sessionLog("notes", "/w"))
	elsewhere := t.TempDir()
	writeFile(t, elsewhere, "--w--/linked/session.jsonl", sessionLog("linked", "/w"))
	if err := os.Symlink(elsewhere, filepath.Join(dir, "link")); err != nil {
		t.Skipf("symlinks unavailable: %v", err)
	}
	src := openJSONL(t, dir)
	if got := offered(t, src); !slices.Equal(got, []string{"child", "loose", "parent", "s"}) || len(src.Problems()) != 0 {
		t.Fatalf("offered %q, problems %v; want child, loose, parent, s", got, src.Problems())
	}
	for _, id := range []string{"child", "loose", "parent", "s"} {
		if _, err := src.Read(ctx, id); err != nil {
			t.Errorf("read %s: %v", id, err)
		}
	}
}

// A DSH home is read through its sessions/ directory only (storages/ and
// the rest of the home are never searched); a path without sessions/ is
// taken as the sessions directory or a project directory itself; a file is
// no home.
func TestDSHHomeLayout(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	writeFile(t, home, "sessions/--w--/s/session.jsonl", sessionLog("s", "/w"))
	writeFile(t, home, "sessions/_no-cwd/n/session.jsonl", sessionLog("n", ""))
	writeFile(t, home, "storages/kept/session.jsonl", sessionLog("stored", "/w"))
	writeFile(t, home, "other.jsonl", sessionLog("beside", "/w"))
	for path, want := range map[string][]string{
		home:                                  {"n", "s"},
		filepath.Join(home, "sessions"):       {"n", "s"},
		filepath.Join(home, "sessions/--w--"): {"s"},
	} {
		src, err := OpenDSHHome(ctx, path)
		if err != nil {
			t.Fatalf("open %s: %v", path, err)
		}
		if got := offered(t, src); !slices.Equal(got, want) || len(src.Problems()) != 0 {
			t.Errorf("home at %s offers %q, problems %v; want %q", path, got, src.Problems(), want)
		}
		src.Close()
	}
	if _, err := OpenDSHHome(ctx, filepath.Join(home, "other.jsonl")); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("a file as home: %v, want 'not a directory'", err)
	}
	if _, err := OpenDSHHome(ctx, filepath.Join(home, "absent")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an absent home: %v, want not-exist", err)
	}
}
