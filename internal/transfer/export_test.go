package transfer

import (
	"github.com/dsh-project/dsh/internal/corpus"
	"github.com/dsh-project/dsh/internal/dshfixtures"

	"bufio"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/dshformat"
	"github.com/dsh-project/dsh/internal/session"
)

// snapshotScenarios lists the directories under dsh-snapshots holding
// DSH-written session files.
func snapshotScenarios(t *testing.T) []string {
	t.Helper()
	root := dshfixtures.Dir(t, "dsh-snapshots")
	var dirs []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".jsonl") && !slices.Contains(dirs, filepath.Dir(p)) {
			dirs = append(dirs, filepath.Dir(p))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) == 0 {
		t.Fatal("no session files under dsh-snapshots")
	}
	return dirs
}

// sameHeader compares headers field by field: export → import is the
// identity, an absent delegationDepth included (DSH's JSONL forces one; the
// export's sidecar restores the absence).
func sameHeader(a, b session.Header) bool {
	return a.Witness() == b.Witness() && a.InheritedCut() == b.InheritedCut()
}

// Every session DSH wrote for its snapshot tests reads without error and
// survives import → export → import: the same headers and events, the same
// verdict from DSH's validation. Scenarios alternate between the two
// encodings.
func TestSnapshotsRoundTrip(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: imports and exports every DSH snapshot scenario (about 20 s); TestLaterFormatsRoundTrip stands for it, go test ./... runs it")
	}
	ctx := context.Background()
	for i, dir := range snapshotScenarios(t) {
		name, _ := filepath.Rel(dshfixtures.Dir(t, "dsh-snapshots"), dir)
		t.Run(name, func(t *testing.T) {
			src := openSource(t, corpusAt{dshformat.OpenJSONL, dir})
			if p := src.Problems(); len(p) > 0 {
				t.Fatalf("unreadable session files: %v", p[0].Err)
			}
			first := openStore(t)
			sum, err := Import(ctx, first, src, ImportOptions{})
			if err != nil || sum.Failed() {
				t.Fatalf("import: %+v, %v", sum, err)
			}
			ids, err := All(ctx, first)
			if err != nil {
				t.Fatal(err)
			}
			c := []dshformat.Compression{dshformat.CompressionZstd, dshformat.CompressionNone}[i%2]
			out := t.TempDir()
			exported, err := Export(ctx, first, out, ids, ExportOptions{Compression: c})
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range exported {
				if e.Err != nil {
					t.Fatalf("export %s: %v", e.ID, e.Err)
				}
			}
			second := openStore(t)
			if sum := importAll(t, second, corpusAt{dshformat.OpenJSONL, out}); sum.Failed() || sum.Imported != len(ids) {
				t.Fatalf("re-import: %+v", sum)
			}
			for _, id := range ids {
				found, err := src.Read(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				a, err := first.Audit(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				b, err := second.Audit(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				if !sameHeader(a.Header, found.Header) || !sameHeader(b.Header, a.Header) {
					t.Fatalf("%s: headers\nsource   %s\nimported %s\nround    %s", id,
						found.Header.MarshalJSONL(), a.Header.MarshalJSONL(), b.Header.MarshalJSONL())
				}
				dshfixtures.AssertSameEvents(t, id+" imported", a.Events, found.Events)
				dshfixtures.AssertSameEvents(t, id+" round trip", b.Events, a.Events)
				var va, vb *session.ValidationError
				if errors.As(a.ReadErr, &va) != errors.As(b.ReadErr, &vb) || (va != nil && (va.Rule != vb.Rule || va.Seq != vb.Seq)) {
					t.Fatalf("%s: verdict %v before, %v after the round trip", id, a.ReadErr, b.ReadErr)
				}
			}
		})
	}
}

// Export writes DSH's layout — <project key of cwd>/<encoded id>/session.jsonl
// with DSH's header line — and never replaces a session file; a torn tail
// kept beside a log is reported, not written.
func TestExportLayout(t *testing.T) {
	ctx := context.Background()
	tmpl := template(t)
	in := t.TempDir()
	writePlain(t, in, childHeader(tmpl, "odd/id", "p", 1), tmpl.Events)
	torn := writePlain(t, in, childHeader(tmpl, "torn", "p", 2), tmpl.Events)
	appendFile(t, torn, `{"type":"turn/st`)
	noCwd := childHeader(tmpl, "no-cwd", "p", 3)
	noCwd.Cwd = nil
	writePlain(t, in, noCwd, tmpl.Events[:2])
	st := openStore(t)
	importAll(t, st, corpusAt{dshformat.OpenJSONL, in})

	out := t.TempDir()
	res, err := Export(ctx, st, out, []string{"odd/id", "torn", "no-cwd", "missing"}, ExportOptions{Compression: dshformat.CompressionNone})
	if err != nil {
		t.Fatal(err)
	}
	project, err := dshformat.ProjectKey(*tmpl.Header.Cwd)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"odd/id": filepath.Join(out, project, "odd~002Fid", "session.jsonl"),
		"torn":   filepath.Join(out, project, "torn", "session.jsonl"),
		"no-cwd": filepath.Join(out, "_no-cwd", "no-cwd", "session.jsonl"),
	}
	for _, r := range res[:3] {
		if r.Err != nil || r.Path != want[r.ID] {
			t.Fatalf("%s: %+v, want path %s", r.ID, r, want[r.ID])
		}
		h, err := st.Header(ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(r.Path)
		if err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(f).ReadString('\n')
		f.Close()
		if err != nil || line != string(h.MarshalJSONL())+"\n" {
			t.Fatalf("%s: header line %q, %v", r.ID, line, err)
		}
	}
	if res[1].Torn == nil || res[1].Torn.FromSeq != int64(len(tmpl.Events)) || res[1].Events != len(tmpl.Events) {
		t.Errorf("torn: %+v", res[1])
	}
	if !errors.Is(res[3].Err, backend.ErrNotFound) {
		t.Errorf("missing: %+v", res[3])
	}

	// Either compression of a session already there refuses the other
	// (both in one directory make the corpus unreadable), and then nothing
	// at all is written, not even the sessions that are not there yet.
	mixed := t.TempDir()
	if _, err := Export(ctx, st, mixed, []string{"odd/id"}, ExportOptions{Compression: dshformat.CompressionNone}); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(mixed, project, "odd~002Fid", "session.jsonl")
	tornHeader, err := st.Header(ctx, "torn")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []ExportOptions{{}, {Compression: dshformat.CompressionNone}} {
		again, err := Export(ctx, st, mixed, []string{"torn", "odd/id"}, c)
		var existing *ExistingLogsError
		if !errors.As(err, &existing) || !errors.Is(err, fs.ErrExist) || len(existing.Paths) != 1 || existing.Paths[0] != plain || again != nil {
			t.Fatalf("export beside %s: %v, %+v; want an ExistingLogsError naming it", plain, err, again)
		}
		if entries, err := os.ReadDir(filepath.Dir(plain)); err != nil || len(entries) != 1 {
			t.Fatalf("%s holds %v (%v): the refused export wrote beside the log", filepath.Dir(plain), entries, err)
		}
		if other, err := dshformat.ExistingLog(mixed, tornHeader); err != nil || other != "" {
			t.Fatalf("the refused export wrote the other session: %q, %v", other, err)
		}
	}
}

// Tree selects a parent and its direct children (ordinary forks included),
// or the whole tree below it, in pre-order.
func TestTree(t *testing.T) {
	ctx := context.Background()
	tmpl := template(t)
	in := t.TempDir()
	root := session.Header{ID: "p", CreatedAt: 1, Cwd: tmpl.Header.Cwd}
	writePlain(t, in, root, nil)
	writePlain(t, in, childHeader(tmpl, "c1", "p", 2), tmpl.Events)
	fork := session.Header{ID: "fork", CreatedAt: 3, Cwd: tmpl.Header.Cwd, ParentSession: strp("p")}
	writePlain(t, in, fork, nil)
	writePlain(t, in, childHeader(tmpl, "g1", "c1", 4), tmpl.Events)
	writePlain(t, in, childHeader(tmpl, "g2", "fork", 5), tmpl.Events)
	writePlain(t, in, childHeader(tmpl, "other", "q", 6), tmpl.Events)
	st := openStore(t)
	importAll(t, st, corpusAt{dshformat.OpenJSONL, in})
	for _, tc := range []struct {
		scope corpus.Scope
		want  []string
	}{
		{corpus.ScopeChildren, []string{"p", "c1", "fork"}},
		{corpus.ScopeDescendants, []string{"p", "c1", "g1", "fork", "g2"}},
	} {
		got, err := Tree(ctx, st, "p", tc.scope)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%v: %v, want %v", tc.scope, got, tc.want)
		}
	}
}

// Whatever a session id holds (a NUL aside: no store keeps one, see
// storetest), export writes only under its target, and
// importing the files gives the same ids back; an id too long to name a
// directory, and a session directory planted as a symbolic link out of the
// target, are refused with the reason.
func TestExportStaysInsideTarget(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	hostile := []string{"../../escape", "/abs/path", "a/b\\c", ".", "..", "~002E", " zeta", "bidi\u202eeta", "ctl\x01x", "emoji🙂", strings.Repeat("é", 40)}
	tooLong := strings.Repeat("x", 256)
	cwd := "/work"
	for i, id := range append(slices.Clone(hostile), tooLong, "planted") {
		if err := st.CreateSession(ctx, session.Header{ID: id, CreatedAt: int64(i), Cwd: &cwd}, nil); err != nil {
			t.Fatalf("create %q: %v", id, err)
		}
	}
	parent := t.TempDir()
	out, outside := filepath.Join(parent, "out"), filepath.Join(parent, "outside")
	if err := os.MkdirAll(filepath.Join(out, "--work--"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(outside, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(out, "--work--", "planted")); err != nil {
		t.Fatal(err)
	}
	res, err := Export(ctx, st, out, append(slices.Clone(hostile), tooLong, "planted"), ExportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res[:len(hostile)] {
		if r.Err != nil {
			t.Fatalf("%q: %v", r.ID, r.Err)
		}
		if rel, err := filepath.Rel(out, r.Path); err != nil || strings.HasPrefix(rel, "..") || strings.Count(rel, string(filepath.Separator)) != 2 {
			t.Errorf("%q written to %s, outside %s or not one directory deep", r.ID, r.Path, out)
		}
	}
	if r := res[len(hostile)]; r.Err == nil || !strings.Contains(r.Err.Error(), "more than the 255") {
		t.Errorf("too long id: %+v", r)
	}
	if r := res[len(hostile)+1]; r.Err == nil || !strings.Contains(r.Err.Error(), "outside") {
		t.Errorf("planted symbolic link: %+v", r)
	}
	if entries, err := os.ReadDir(outside); err != nil || len(entries) != 0 {
		t.Fatalf("written outside the target: %v %v", entries, err)
	}
	back := openStore(t)
	if err := os.Remove(filepath.Join(out, "--work--", "planted")); err != nil {
		t.Fatal(err)
	}
	sum := importAll(t, back, corpusAt{dshformat.OpenJSONL, out})
	if sum.Failed() || sum.Imported != len(hostile) {
		t.Fatalf("re-import: %+v", sum)
	}
	for _, id := range hostile {
		if _, err := back.Header(ctx, id); err != nil {
			t.Errorf("%q after the round trip: %v", id, err)
		}
	}
}

// A log imported damaged is exported as found — the events before the
// damage, then the stored rest — and imports back the same: the same
// damage, the same listing verdict.
func TestExportDamagedRoundTrip(t *testing.T) {
	ctx := context.Background()
	dir, _ := damagedCorpus(t)
	first := openStore(t)
	importAll(t, first, corpusAt{dshformat.OpenJSONL, dir})
	for _, c := range []dshformat.Compression{dshformat.CompressionNone, dshformat.CompressionZstd} {
		out := t.TempDir()
		res, err := Export(ctx, first, out, []string{"c-corrupt"}, ExportOptions{Compression: c})
		if err != nil || res[0].Err != nil || !res[0].Damaged {
			t.Fatalf("export: %+v, %v", res, err)
		}
		second := openStore(t)
		if r := result(t, importAll(t, second, corpusAt{dshformat.OpenJSONL, out}), "c-corrupt"); r.Outcome != Imported || !r.Damaged {
			t.Fatalf("re-import: %+v", r)
		}
		a, err := first.Audit(ctx, "c-corrupt")
		if err != nil {
			t.Fatal(err)
		}
		b, err := second.Audit(ctx, "c-corrupt")
		if err != nil {
			t.Fatal(err)
		}
		if b.Damaged == nil || string(b.Damaged.Raw) != string(a.Damaged.Raw) || b.Damaged.FromSeq != a.Damaged.FromSeq || !sameHeader(a.Header, b.Header) {
			t.Fatalf("round trip: %+v, want %+v", b.Damaged, a.Damaged)
		}
		dshfixtures.AssertSameEvents(t, "prefix", b.Prefix, a.Prefix)
	}
}
