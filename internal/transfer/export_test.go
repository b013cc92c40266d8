package transfer

import (
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

	"github.com/dsh-project/dsh/internal/dshformat"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/sqlitepersist"
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

// sameHeader compares headers field by field, with the one equivalence the
// JSONL format defines: DSH's JSONL writer always writes delegationDepth,
// 0 when a header has none.
func sameHeader(a, b session.Header) bool {
	depth := func(h session.Header) session.Header {
		d := h.Depth()
		h.DelegationDepth = &d
		return h
	}
	return depth(a).Witness() == depth(b).Witness() && a.InheritedCut() == b.InheritedCut()
}

// Every session DSH wrote for its snapshot tests reads without error and
// survives import → export → import: the same headers and events, the same
// verdict from DSH's validation. Scenarios alternate between the two
// encodings.
func TestSnapshotsRoundTrip(t *testing.T) {
	ctx := context.Background()
	for i, dir := range snapshotScenarios(t) {
		name, _ := filepath.Rel(dshfixtures.Dir(t, "dsh-snapshots"), dir)
		t.Run(name, func(t *testing.T) {
			src := openSource(t, Location{KindJSONL, dir})
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
			if sum := importAll(t, second, Location{KindJSONL, out}); sum.Failed() || sum.Imported != len(ids) {
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
	importAll(t, st, Location{KindJSONL, in})

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
	if !errors.Is(res[3].Err, sqlitepersist.ErrNotFound) {
		t.Errorf("missing: %+v", res[3])
	}

	again, err := Export(ctx, st, out, []string{"odd/id"}, ExportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if again[0].Err != nil {
		t.Fatalf("a zstd file beside the plain one: %v", again[0].Err)
	}
	again, err = Export(ctx, st, out, []string{"odd/id"}, ExportOptions{Compression: dshformat.CompressionNone})
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(again[0].Err, fs.ErrExist) {
		t.Fatalf("second export over the same file: %+v", again[0])
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
	importAll(t, st, Location{KindJSONL, in})
	for _, tc := range []struct {
		descendants bool
		want        []string
	}{
		{false, []string{"p", "c1", "fork"}},
		{true, []string{"p", "c1", "g1", "fork", "g2"}},
	} {
		got, err := Tree(ctx, st, "p", tc.descendants)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("descendants=%v: %v, want %v", tc.descendants, got, tc.want)
		}
	}
}
