package transfer

import (
	"github.com/dsh-project/dsh/internal/dshfixtures"

	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/dshformat"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/sqlitepersist"
	"github.com/dsh-project/dsh/internal/subagent"
)

// damagedCorpus writes a JSONL corpus with the cases a faithful import
// must keep as found — a log that fails DSH's validation, a torn tail, an
// interrupted turn, committed damage — next to a valid child and a child in
// a later DSH format (unreadable), all under parent "p".
func damagedCorpus(t *testing.T) (dir string, tmpl *dshformat.Session) {
	t.Helper()
	tmpl = template(t)
	dir = t.TempDir()
	root := session.Header{ID: "p", CreatedAt: 1_700_000_000_000, Cwd: tmpl.Header.Cwd}
	writePlain(t, dir, root, nil)
	writePlain(t, dir, childHeader(tmpl, "c-ok", "p", 1_700_000_000_001), tmpl.Events)

	invalid := slices.Clone(tmpl.Events)
	invalid[6].SurfaceOp = nil // a surface message without its surface operation
	writePlain(t, dir, childHeader(tmpl, "c-invalid", "p", 1_700_000_000_002), invalid)

	torn := writePlain(t, dir, childHeader(tmpl, "c-torn", "p", 1_700_000_000_003), tmpl.Events)
	appendFile(t, torn, `{"type":"turn/start","seq":24,"ti`)

	writePlain(t, dir, childHeader(tmpl, "c-interrupted", "p", 1_700_000_000_004), tmpl.Events[:len(tmpl.Events)-1])

	later := filepath.Join(dir, "later", "session.jsonl")
	if err := os.MkdirAll(filepath.Dir(later), 0o700); err != nil {
		t.Fatal(err)
	}
	laterHeader := childHeader(tmpl, "c-later", "p", 1_700_000_000_005)
	line := strings.Replace(string(laterHeader.MarshalJSONL()), `"version":0`, `"version":1`, 1)
	if err := os.WriteFile(later, []byte(line+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	corrupt := writePlain(t, dir, childHeader(tmpl, "c-corrupt", "p", 1_700_000_000_006), tmpl.Events[:3])
	appendFile(t, corrupt, "{not json}\n")
	for _, e := range tmpl.Events[3:] {
		e.Seq++
		b, err := e.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		appendFile(t, corrupt, string(b)+"\n")
	}
	return dir, tmpl
}

// Every damaged log is stored exactly as found and reads back with the
// same verdict, torn tail and closers as the source; sessions the source
// cannot read are reported, with DSH's refusal for a later format.
func TestImportKeepsDamageAsFound(t *testing.T) {
	ctx := context.Background()
	dir, tmpl := damagedCorpus(t)
	st := openStore(t)
	src := openSource(t, corpusAt{dshformat.OpenJSONL, dir})
	sum, err := Import(ctx, st, src, ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Imported != 6 || sum.Unreadable != 1 || sum.Skipped != 0 || sum.Conflicts != 0 || !sum.Failed() {
		t.Fatalf("summary %+v", sum)
	}
	if r := result(t, sum, "c-later"); r.Outcome != Unreadable || !strings.Contains(r.Reason, "unsupported DSH session format version 1") {
		t.Errorf("c-later: %+v", r)
	}
	// Its header is kept as a refused one: it lists, and reads as the
	// refusal (issue 23).
	if refused, err := st.RefusedOnly(ctx, "c-later"); err != nil || !refused {
		t.Errorf("c-later kept as a refused header: %v, %v", refused, err)
	}
	if _, err := st.Inspect(ctx, "c-later"); dsherr.CodeOf(err) != dsherr.UnsupportedFormat || !strings.Contains(err.Error(), "version 1") {
		t.Errorf("c-later reads as %v, want its refusal", err)
	}

	// Committed damage: the prefix and the rest as found are stored, and
	// the log reads back as corruption where the source's does.
	corrupt := result(t, sum, "c-corrupt")
	if corrupt.Outcome != Imported || !corrupt.Damaged || corrupt.Events != 3 || !strings.Contains(corrupt.Invalid, "line 4") || corrupt.Checkpointed {
		t.Errorf("c-corrupt: %+v", corrupt)
	}
	found, err := src.ReadAsFound(ctx, "c-corrupt")
	if err != nil || found.Damage == nil {
		t.Fatalf("source: %v, %+v", err, found)
	}
	stored, err := st.Audit(ctx, "c-corrupt")
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(stored.ReadErr, backend.ErrCorrupt) || stored.Damaged == nil ||
		stored.Damaged.FromSeq != found.Damage.FromSeq || string(stored.Damaged.Raw) != string(found.Damage.Raw) ||
		stored.Damaged.Encoding != string(found.Damage.Encoding) || stored.Header.Witness() != found.Header.Witness() {
		t.Errorf("c-corrupt stored as %+v (read error %v), found %+v", stored.Damaged, stored.ReadErr, found.Damage)
	}
	dshfixtures.AssertSameEvents(t, "c-corrupt prefix", stored.Prefix, found.Events)
	if _, err := st.Inspect(ctx, "c-corrupt"); !errors.Is(err, backend.ErrCorrupt) {
		t.Errorf("c-corrupt inspects after import: %v", err)
	}

	ok := result(t, sum, "c-ok")
	if ok.Events != len(tmpl.Events) || !ok.Checkpointed || ok.Invalid != "" || ok.Torn != nil || ok.Interrupted {
		t.Errorf("c-ok: %+v", ok)
	}
	inv := result(t, sum, "c-invalid")
	if inv.Invalid == "" || inv.Checkpointed {
		t.Errorf("c-invalid: %+v", inv)
	}
	torn := result(t, sum, "c-torn")
	if torn.Torn == nil || torn.Torn.FromSeq != int64(len(tmpl.Events)) || !torn.Checkpointed {
		t.Errorf("c-torn: %+v", torn)
	}
	if r := result(t, sum, "c-interrupted"); !r.Interrupted || !r.Checkpointed {
		t.Errorf("c-interrupted: %+v", r)
	}

	c, err := dshformat.NewCorpus(ctx, src, dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"p", "c-ok", "c-invalid", "c-torn", "c-interrupted"} {
		found, err := src.Read(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		stored, err := st.Audit(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if stored.Header.Witness() != found.Header.Witness() || stored.Header.InheritedCut() != found.Header.InheritedCut() {
			t.Errorf("%s: stored header %s, found %s", id, stored.Header.MarshalJSONL(), found.Header.MarshalJSONL())
		}
		dshfixtures.AssertSameEvents(t, id, stored.Events, found.Events)

		inPlace, readErr := c.Inspect(ctx, id)
		in, inspectErr := st.Inspect(ctx, id)
		var before, after *session.ValidationError
		if errors.As(readErr, &before) != errors.As(inspectErr, &after) || (before != nil && (before.Rule != after.Rule || before.Seq != after.Seq)) {
			t.Errorf("%s: verdict in the source %v, after import %v", id, readErr, inspectErr)
		}
		if inspectErr != nil {
			continue
		}
		if (found.Torn == nil) != (in.Torn == nil) {
			t.Fatalf("%s: torn tail %v in the source, %v after import", id, found.Torn, in.Torn)
		}
		if in.Torn != nil && (in.Torn.FromSeq != found.Torn.FromSeq || string(in.Torn.Raw) != string(found.Torn.Raw)) {
			t.Errorf("%s: torn tail %+v stored, found %+v", id, in.Torn, found.Torn)
		}
		dshfixtures.AssertSameEvents(t, id+" closers", in.Closers, inPlace.Closers)
	}
}

// The rows of a listing are the same after the import as over the source in
// place, damaged children included, and a child in a later DSH format
// (listed `unavailable` in place; refused by the import, which keeps its
// header so that it lists the same).
func TestImportListsAsBefore(t *testing.T) {
	ctx := context.Background()
	dir, _ := damagedCorpus(t)
	src := openSource(t, corpusAt{dshformat.OpenJSONL, dir})
	c, err := dshformat.NewCorpus(ctx, src, dir)
	if err != nil {
		t.Fatal(err)
	}
	before, err := subagent.NewCorpusLister(c, nil, 0).ListDescendants(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	st := openStore(t)
	sum := importAll(t, st, corpusAt{dshformat.OpenJSONL, dir})
	after, err := subagent.NewStoreLister(st, nil, 0).ListDescendants(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	if len(before) != 6 || result(t, sum, "c-later").Outcome != Unreadable {
		t.Fatalf("rows in place: %v", before)
	}
	assertSameJSON(t, "rows after import vs in place", listingJSON(after), listingJSON(before))
	reasons := map[string]subagent.Reason{}
	for _, r := range before {
		reasons[r.ID] = r.Reason
	}
	if reasons["c-invalid"] != subagent.ReasonUnavailable || reasons["c-later"] != subagent.ReasonUnavailable ||
		reasons["c-corrupt"] != subagent.ReasonUnavailable || reasons["c-ok"] != "" {
		t.Errorf("rows in place: %v", before)
	}
}

// storeDigest is everything an import could change in a dsh store.
func storeDigest(t *testing.T, st *sqlitepersist.Store) string {
	t.Helper()
	return queryDigest(t, st, storeDigestQueries...)
}

var storeDigestQueries = []string{
	"SELECT id, revision, next_seq, verified FROM sessions ORDER BY id",
	"SELECT session_id, seq, length(data) FROM events ORDER BY session_id, seq",
	"SELECT session_id, from_seq FROM torn_tails ORDER BY session_id",
	"SELECT session_id, as_of_seq, rows, written_at FROM projection_checkpoints ORDER BY session_id",
}

// queryDigest is the rows queries find in st, as text.
func queryDigest(t *testing.T, st *sqlitepersist.Store, queries ...string) string {
	t.Helper()
	var b strings.Builder
	for _, q := range queries {
		rows, err := st.Querier().QueryContext(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintln(&b, vals...)
		}
		if err := rows.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}

// Importing again skips every session already imported and writes nothing.
func TestImportIsIdempotent(t *testing.T) {
	dir, _ := damagedCorpus(t)
	st := openStore(t)
	importAll(t, st, corpusAt{dshformat.OpenJSONL, dir})
	before := storeDigest(t, st)
	again := importAll(t, st, corpusAt{dshformat.OpenJSONL, dir})
	if again.Imported != 0 || again.Skipped != 6 || again.Unreadable != 1 || again.Conflicts != 0 {
		t.Fatalf("second import: %+v", again)
	}
	if r := result(t, again, "c-torn"); r.Outcome != Skipped || r.Reason == "" {
		t.Errorf("c-torn: %+v", r)
	}
	if after := storeDigest(t, st); after != before {
		t.Fatalf("a repeated import changed the store:\nbefore\n%s\nafter\n%s", before, after)
	}
}

// A session whose id the database holds with another lifecycle is a
// conflict; nothing of it is overwritten.
func TestImportConflictOverwritesNothing(t *testing.T) {
	ctx := context.Background()
	tmpl := template(t)
	first, second := t.TempDir(), t.TempDir()
	writePlain(t, first, childHeader(tmpl, "c", "p", 1_700_000_000_001), tmpl.Events)
	recreated := childHeader(tmpl, "c", "p", 1_700_000_000_999)
	writePlain(t, second, recreated, tmpl.Events[:3])
	writePlain(t, second, childHeader(tmpl, "d", "p", 1_700_000_001_000), tmpl.Events)

	st := openStore(t)
	importAll(t, st, corpusAt{dshformat.OpenJSONL, first})
	before := storeDigest(t, st)
	sum := importAll(t, st, corpusAt{dshformat.OpenJSONL, second})
	if sum.Conflicts != 1 || sum.Imported != 1 || !sum.Failed() {
		t.Fatalf("summary %+v", sum)
	}
	r := result(t, sum, "c")
	if r.Outcome != Conflict || !strings.Contains(r.Reason, "createdAt differs") {
		t.Fatalf("c: %+v", r)
	}
	h, err := st.Header(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	if h.CreatedAt != 1_700_000_000_001 {
		t.Fatalf("stored header overwritten: %s", h.MarshalJSONL())
	}
	if r := result(t, sum, "d"); r.Outcome != Imported {
		t.Fatalf("d: %+v", r)
	}
	if got, want := rowsOf(storeDigest(t, st), "c"), rowsOf(before, "c"); !slices.Equal(got, want) {
		t.Fatalf("c changed:\n got %q\nwant %q", got, want)
	}
}

// rowsOf keeps the digest lines of one session.
func rowsOf(digest, id string) []string {
	var out []string
	for _, line := range strings.Split(digest, "\n") {
		if strings.HasPrefix(line, id+" ") {
			out = append(out, line)
		}
	}
	return out
}

// A dry run reports what an import would do and writes nothing, with or
// without a database.
func TestImportDryRun(t *testing.T) {
	ctx := context.Background()
	dir, _ := damagedCorpus(t)
	src := openSource(t, corpusAt{dshformat.OpenJSONL, dir})
	none, err := Import(ctx, nil, src, ImportOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if !none.DryRun || none.Imported != 6 || none.Unreadable != 1 {
		t.Fatalf("dry run without a database: %+v", none)
	}
	if r := result(t, none, "c-invalid"); r.Invalid == "" {
		t.Errorf("dry run does not report the invalid log: %+v", r)
	}
	if r := result(t, none, "c-corrupt"); !r.Damaged || r.Invalid == "" {
		t.Errorf("dry run does not report the damaged log: %+v", r)
	}
	if r := result(t, none, "c-interrupted"); !r.Interrupted || r.Checkpointed {
		t.Errorf("c-interrupted: %+v", r)
	}

	st := openStore(t)
	if _, err := Import(ctx, st, src, ImportOptions{DryRun: true}); err != nil {
		t.Fatal(err)
	}
	if d := storeDigest(t, st); d != "" {
		t.Fatalf("dry run wrote:\n%s", d)
	}
	importAll(t, st, corpusAt{dshformat.OpenJSONL, dir})
	again, err := Import(ctx, st, src, ImportOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if again.Skipped != 6 || again.Imported != 0 {
		t.Fatalf("dry run over an imported corpus: %+v", again)
	}
}

// An import reports progress once per session, ending at the total, and
// without checkpoints leaves the cache empty.
func TestImportProgressAndNoCheckpoints(t *testing.T) {
	dir, _ := damagedCorpus(t)
	st := openStore(t)
	var calls [][2]int
	var streamed []Result
	sum, err := Import(context.Background(), st, openSource(t, corpusAt{dshformat.OpenJSONL, dir}), ImportOptions{
		NoCheckpoints: true,
		ReadAhead:     1,
		Progress: func(done, total int) {
			calls = append(calls, [2]int{done, total})
			if len(streamed) != done {
				t.Errorf("progress %d with %d results streamed", done, len(streamed))
			}
		},
		OnResult: func(r Result) { streamed = append(streamed, r) },
	})
	if err != nil {
		t.Fatal(err)
	}
	// Streamed results are not also held in the summary (memory stays flat
	// in the number of sessions), and they are the results an import that
	// keeps them reports, in the same order.
	if sum.Results != nil {
		t.Fatalf("a streaming import kept %d results in its summary", len(sum.Results))
	}
	if n := sum.Imported + sum.Appended + sum.Skipped + sum.Conflicts + sum.Unreadable; len(streamed) != n {
		t.Fatalf("streamed %d results, summary counts %d", len(streamed), n)
	}
	kept, err := Import(context.Background(), openStore(t), openSource(t, corpusAt{dshformat.OpenJSONL, dir}), ImportOptions{NoCheckpoints: true})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(streamed, kept.Results, func(a, b Result) bool { return a.ID == b.ID && a.Outcome == b.Outcome && a.Location == b.Location }) {
		t.Fatalf("streamed %+v, kept %+v", streamed, kept.Results)
	}
	if len(calls) != 7 || calls[6] != [2]int{7, 7} {
		t.Fatalf("progress calls %v", calls)
	}
	var n int
	if err := st.Querier().QueryRowContext(context.Background(), "SELECT count(*) FROM projection_checkpoints").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("%d checkpoints written with NoCheckpoints", n)
	}
}

// A cancelled import stops with the context's error; sessions committed
// before stay, and a new import completes the rest.
func TestImportCancelled(t *testing.T) {
	dir, _ := damagedCorpus(t)
	st := openStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	_, err := Import(ctx, st, openSource(t, corpusAt{dshformat.OpenJSONL, dir}), ImportOptions{
		Progress: func(done, _ int) {
			if done == 2 {
				cancel()
			}
		},
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	sum := importAll(t, st, corpusAt{dshformat.OpenJSONL, dir})
	// Sessions are handled in id order: c-corrupt, then c-interrupted,
	// reported (so committed) before the cancellation took effect; the
	// rest of their batch was committed with them, and the new import
	// completes whatever was not.
	if sum.Skipped < 2 || sum.Skipped+sum.Imported != 6 || result(t, sum, "c-interrupted").Outcome != Skipped {
		t.Fatalf("import after a cancelled one: %+v", sum)
	}
}

// SeedCheckpoints keeps the records of DSH's projection cache file that
// match their sessions' identity, as checkpoints a dsh listing then serves
// (possibly stale: the cache says so, not the log); others are left out.
func TestSeedCheckpoints(t *testing.T) {
	ctx := context.Background()
	tmpl := template(t)
	in := t.TempDir()
	writePlain(t, in, childHeader(tmpl, "a", "p", 1), tmpl.Events)
	writePlain(t, in, childHeader(tmpl, "b", "p", 2), tmpl.Events)
	st := openStore(t)
	if _, err := Import(ctx, st, openSource(t, corpusAt{dshformat.OpenJSONL, in}), ImportOptions{NoCheckpoints: true}); err != nil {
		t.Fatal(err)
	}
	row := `{"subagent": {"ver": 2, "seq": 5, "val": {"identity": {"mode": "continuable", "label": "cached", "seq": 0}}}, "other": {"ver": 1, "seq": 9, "val": [1]}}`
	doc := fmt.Sprintf(`{"unit": {"name": "session_projcache", "version": 3}, "tables": {"sessions": {
		"a": {"identity": {"createdAt": 1, "cwd": %q}, "rows": %s},
		"b": {"identity": {"createdAt": 99, "cwd": %q}, "rows": %s},
		"gone": {"identity": {"createdAt": 1}, "rows": %s}}}}`, *tmpl.Header.Cwd, row, *tmpl.Header.Cwd, row, row)
	path := filepath.Join(t.TempDir(), "session_projcache.json")
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	file, err := dshformat.ReadCacheFile(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	n, err := SeedCheckpoints(ctx, st, file)
	if err != nil || n != 1 {
		t.Fatalf("seeded %d, %v; want 1", n, err)
	}
	var asOf int64
	if err := st.Querier().QueryRowContext(ctx, "SELECT as_of_seq FROM projection_checkpoints WHERE session_id = 'a'").Scan(&asOf); err != nil || asOf != 9 {
		t.Fatalf("watermark %d, %v; want the highest row seq, 9", asOf, err)
	}
	rows, err := subagent.NewStoreLister(st, nil, 0).ListChildren(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || *rows[0].Label != "cached" || *rows[1].Label != "summarize the doc" {
		t.Fatalf("rows %s", listingJSON(rows))
	}
}

// A session that has grown in the source since it was imported gets its new
// events appended; a source log that does not continue the stored one is a
// conflict and changes nothing; a shorter one is already imported.
func TestImportAppendsGrownSession(t *testing.T) {
	ctx := context.Background()
	tmpl := template(t)
	h := childHeader(tmpl, "c", "p", 1_700_000_000_001)
	rewrite := func(events []session.Event) corpusAt {
		dir := t.TempDir()
		writePlain(t, dir, h, events)
		return corpusAt{dshformat.OpenJSONL, dir}
	}
	st := openStore(t)
	if r := result(t, importAll(t, st, rewrite(tmpl.Events[:10])), "c"); r.Outcome != Imported || r.Events != 10 {
		t.Fatalf("first import: %+v", r)
	}

	dry, err := Import(ctx, st, openSource(t, rewrite(tmpl.Events)), ImportOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if r := result(t, dry, "c"); r.Outcome != Appended || r.Events != len(tmpl.Events)-10 || dry.Appended != 1 {
		t.Fatalf("dry run of the grown session: %+v", dry)
	}
	sum := importAll(t, st, rewrite(tmpl.Events))
	if r := result(t, sum, "c"); r.Outcome != Appended || r.Events != len(tmpl.Events)-10 || sum.Failed() || !r.Checkpointed {
		t.Fatalf("grown session: %+v", sum)
	}
	a, err := st.Audit(ctx, "c")
	if err != nil || a.ReadErr != nil {
		t.Fatalf("audit after the append: %v, %v", err, a.ReadErr)
	}
	dshfixtures.AssertSameEvents(t, "stored after the append", a.Events, tmpl.Events)

	if r := result(t, importAll(t, st, rewrite(tmpl.Events)), "c"); r.Outcome != Skipped {
		t.Errorf("same log again: %+v", r)
	}
	if r := result(t, importAll(t, st, rewrite(tmpl.Events[:5])), "c"); r.Outcome != Skipped || !strings.Contains(r.Reason, "later event") {
		t.Errorf("shorter source log: %+v", r)
	}

	before := storeDigest(t, st)
	changed := slices.Clone(tmpl.Events)
	changed[3].Time++
	sum = importAll(t, st, rewrite(changed))
	if r := result(t, sum, "c"); r.Outcome != Conflict || !strings.Contains(r.Reason, "seq 3 differs") || !sum.Failed() {
		t.Fatalf("different prefix: %+v", sum)
	}
	if after := storeDigest(t, st); after != before {
		t.Fatalf("a conflicting import changed the store")
	}
}

// A header with an empty id is refused with the reason and its file: DSH
// wants a non-empty id and nothing could address the session once stored.
func TestImportRefusesEmptyID(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "empty", "session.jsonl")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(`{"type":"session","version":0,"id":"","createdAt":1,"delegationDepth":0}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	st := openStore(t)
	sum := importAll(t, st, corpusAt{dshformat.OpenJSONL, dir})
	if sum.Unreadable != 1 || sum.Imported != 0 || len(sum.Results) != 1 {
		t.Fatalf("summary %+v", sum)
	}
	if r := sum.Results[0]; r.Location != path || !strings.Contains(r.Reason, "session id is empty") {
		t.Fatalf("result %+v", r)
	}
	// Only its header is kept, as a refused one that lists as DSH lists
	// it and reads as the refusal (issue 23).
	ids, err := All(context.Background(), st)
	if err != nil || len(ids) != 1 || ids[0] != "" {
		t.Fatalf("stored %q, %v", ids, err)
	}
	if _, err := st.Inspect(context.Background(), ""); err == nil || !strings.Contains(err.Error(), "session id is empty") {
		t.Fatalf("the kept header reads as %v, want its refusal", err)
	}
}

// An import stopped part-way (interrupted, killed) has stored exactly the
// sessions it reported — each batch is one transaction, and its rows are
// reported once it is committed — and running it again skips those and
// imports the rest (what the README and docs/cli-contract.md promise).
func TestImportStoppedStoresWhatItReported(t *testing.T) {
	dir := t.TempDir()
	const n = batchSessions + 100
	for i := range n {
		// Loose session files, header only: quick to write, read as any.
		h := session.Header{ID: fmt.Sprintf("s%04d", i), CreatedAt: 1_700_000_000_000 + int64(i)}
		if err := os.WriteFile(filepath.Join(dir, h.ID+".jsonl"), append(h.MarshalJSONL(), '\n'), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	st := openStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var reported []string
	_, err := Import(ctx, st, openSource(t, corpusAt{dshformat.OpenJSONL, dir}), ImportOptions{
		OnResult: func(r Result) {
			reported = append(reported, r.ID)
			if len(reported) == batchSessions {
				cancel() // the second batch is being written
			}
		},
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	var stored []string
	if err := st.ListHeaders(context.Background(), func(h session.Header) error {
		stored = append(stored, h.ID)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	slices.Sort(stored)
	slices.Sort(reported)
	if len(reported) != batchSessions || !slices.Equal(stored, reported) {
		t.Fatalf("reported %d sessions, stored %d: the store must hold exactly the reported ones", len(reported), len(stored))
	}
	sum := importAll(t, st, corpusAt{dshformat.OpenJSONL, dir})
	if sum.Skipped != batchSessions || sum.Imported != n-batchSessions {
		t.Fatalf("import again: %d skipped, %d imported; want %d and %d", sum.Skipped, sum.Imported, batchSessions, n-batchSessions)
	}
}

// An import of a tree read a chunk at a time (as dsh import reads a JSONL
// tree) reports the same results in the same order, counts the same
// progress and stores the same as an import of the tree read whole, however
// small the chunks — with every kind of damage, an unreadable file and one
// id in two files among the sessions.
func TestImportInChunksAsWhole(t *testing.T) {
	ctx := context.Background()
	dir, tmpl := damagedCorpus(t)
	for i := range 9 {
		writePlain(t, filepath.Join(dir, "more"), childHeader(tmpl, fmt.Sprintf("c-%d", i), "p", int64(1_700_000_000_100+i)), tmpl.Events)
	}
	writePlain(t, filepath.Join(dir, "twice"), childHeader(tmpl, "c-4", "p", 1_700_000_000_999), tmpl.Events[:2])
	if err := os.WriteFile(filepath.Join(dir, "junk.jsonl"), []byte("not a header\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	type run struct {
		results  []string
		progress [][2]int
		digest   string
	}
	importWith := func(src dshformat.Source) run {
		var r run
		st := openStore(t)
		sum, err := Import(ctx, st, src, ImportOptions{
			Progress: func(done, total int) { r.progress = append(r.progress, [2]int{done, total}) },
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, res := range sum.Results {
			r.results = append(r.results, fmt.Sprintf("%s %v %s %s %d", res.ID, res.Outcome, res.Location, res.Reason, res.Events))
		}
		// All but written_at, which differs between stores.
		queries := slices.Clone(storeDigestQueries)
		queries[len(queries)-1] = "SELECT session_id, as_of_seq, rows FROM projection_checkpoints ORDER BY session_id"
		r.digest = queryDigest(t, st, append(queries,
			"SELECT session_id, seq, data FROM events ORDER BY session_id, seq",
			"SELECT * FROM import_refusals ORDER BY 1, 2")...)
		return r
	}
	whole := importWith(openSource(t, corpusAt{dshformat.OpenJSONL, dir}))
	if len(whole.results) < 18 {
		t.Fatalf("the whole tree imported %d sessions: %q", len(whole.results), whole.results)
	}
	for _, limit := range []int{1, 2, 5, 100} {
		chunked := importWith(openSource(t, corpusAt{func(ctx context.Context, path string) (dshformat.Source, error) {
			return dshformat.OpenJSONLChunked(ctx, path, limit)
		}, dir}))
		if !slices.Equal(chunked.results, whole.results) {
			t.Fatalf("chunks of %d: results\n%s\nwhole tree's\n%s", limit, strings.Join(chunked.results, "\n"), strings.Join(whole.results, "\n"))
		}
		if !slices.Equal(chunked.progress, whole.progress) {
			t.Fatalf("chunks of %d: progress %v, whole tree's %v", limit, chunked.progress, whole.progress)
		}
		if chunked.digest != whole.digest {
			t.Fatalf("chunks of %d: store\n%s\nwhole tree's\n%s", limit, chunked.digest, whole.digest)
		}
	}
}
