package pgstore

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/debuglog"
	"github.com/dsh-project/dsh/internal/dshformat"
	"github.com/dsh-project/dsh/internal/pgtest"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/sqlitepersist"
	"github.com/dsh-project/dsh/internal/transfer"
)

// usageLog is n turns whose assistant messages carry token usage, so that
// the usage triggers have something to count.
func usageLog(n int) []session.Event {
	var b events
	for i := range n {
		b.turnStart(fmt.Sprintf("question %d", i)).answer(fmt.Sprintf("answer %d", i))
	}
	for i, e := range b.list {
		if e.Type == session.TypeAssistantMsg {
			b.list[i].Data = json.RawMessage(strings.TrimSuffix(string(e.Data), "}") +
				fmt.Sprintf(`,"usage":{"inputTokens":%d,"outputTokens":%d,"cacheReadTokens":1}}`, 10+i, i))
		}
	}
	return b.list
}

// copyCorpus writes a JSONL corpus of the logs an import writes: clean, torn, damaged inside the committed region, one turn
// long, and half a log (which a later import appends to).
func copyCorpus(t *testing.T, dir string, long []session.Event) map[string]string {
	t.Helper()
	ctx := context.Background()
	paths := map[string]string{}
	write := func(id string, parent *string, created int64, evs []session.Event) string {
		path, err := dshformat.WriteJSONL(ctx, dir, header(id, parent, created), evs, dshformat.WriteOptions{Compression: dshformat.CompressionNone})
		if err != nil {
			t.Fatal(err)
		}
		paths[id] = path
		return path
	}
	appendLine := func(path, text string) {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(text); err != nil {
			t.Fatal(err)
		}
	}
	p := ptr("p")
	write("p", nil, 1_700_000_000_000, long[:6])
	write("c-clean", p, 1_700_000_000_001, long)
	appendLine(write("c-torn", p, 1_700_000_000_002, long), fmt.Sprintf(`{"type":"turn/start","seq":%d,"ti`, len(long)))
	damaged := write("c-damaged", p, 1_700_000_000_003, long[:20])
	appendLine(damaged, "{not json}\n")
	for _, e := range long[20:] {
		e.Seq++
		b, err := e.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		appendLine(damaged, string(b)+"\n")
	}
	write("c-short", p, 1_700_000_000_004, long[:6])
	write("c-grows", p, 1_700_000_000_005, long[:len(long)/2])
	return paths
}

// storedState is everything a store answers about the corpus's sessions:
// each one's audit (its read error by message) and its kept token totals.
func storedState(t *testing.T, st backend.Backend, ids []string) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	for _, id := range ids {
		a, err := st.Audit(ctx, id)
		readErr := ""
		if err == nil && a.ReadErr != nil {
			readErr = a.ReadErr.Error()
		}
		out = append(out, id+" audit → "+outcome(a, err)+" read error: "+readErr)
	}
	err := st.(backend.UsageReader).UsageOf(ctx, ids, func(u backend.SessionUsage) error {
		out = append(out, "usage → "+outcome(u, nil))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// importInto imports the corpus at dir into st and renders its results.
func importInto(t *testing.T, ctx context.Context, st backend.Backend, dir string) (transfer.Summary, []string) {
	t.Helper()
	src, err := dshformat.OpenJSONL(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	sum, err := transfer.Import(ctx, st, src, transfer.ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range sum.Results {
		r.Location = filepath.Base(filepath.Dir(r.Location)) // the stores' temporary paths differ
		out = append(out, outcome(r, nil))
	}
	return sum, out
}

// An import into PostgreSQL writes each log of copyMinEvents events or more
// by COPY and each shorter one by an INSERT held back in the batch's
// pipeline, and either way stores, judges and re-imports exactly what
// SQLite's row-by-row statements do: torn tails, damage inside the
// committed region, token totals (COPY and the INSERT fire the usage and
// unverification triggers), an idempotent second import, a conflict and an
// append.
func TestImportByCopyMatchesSQLite(t *testing.T) {
	for _, turns := range []int{8, copyMinEvents/6 + 40} {
		t.Run(fmt.Sprintf("%d events", 6*turns), func(t *testing.T) { testImportMatchesSQLite(t, turns) })
	}
}

func testImportMatchesSQLite(t *testing.T, turns int) {
	ctx := context.Background()
	dir := t.TempDir()
	long := usageLog(turns)
	paths := copyCorpus(t, dir, long)
	// The stored logs' lengths (copyCorpus): p, c-clean, c-torn,
	// c-damaged's prefix, c-short, c-grows.
	var copied, inserted int
	for _, n := range []int{6, len(long), len(long), 20, 6, len(long) / 2} {
		if n >= copyMinEvents {
			copied++
		} else {
			inserted++
		}
	}
	ids := []string{"p", "c-clean", "c-torn", "c-damaged", "c-short", "c-grows"}

	lite, err := sqlitepersist.Open(ctx, filepath.Join(t.TempDir(), "dsh.db"), sqlitepersist.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer lite.Close()
	pg := openT(t, pgtest.NewDatabase(t))
	var statements bytes.Buffer
	pgctx := debuglog.With(ctx, slog.New(slog.NewTextHandler(&statements, &slog.HandlerOptions{Level: slog.LevelDebug})))

	compare := func(round string, liteResults, pgResults []string) {
		t.Helper()
		if strings.Join(liteResults, "\n") != strings.Join(pgResults, "\n") {
			t.Fatalf("%s: results differ\nsqlite:\n%s\npostgres:\n%s", round, strings.Join(liteResults, "\n"), strings.Join(pgResults, "\n"))
		}
		ls, ps := storedState(t, lite, ids), storedState(t, pg, ids)
		for i := range max(len(ls), len(ps)) {
			if i >= len(ls) || i >= len(ps) || ls[i] != ps[i] {
				t.Fatalf("%s: stores differ\nsqlite:\n%s\npostgres:\n%s", round, strings.Join(ls, "\n"), strings.Join(ps, "\n"))
			}
		}
	}

	liteSum, liteResults := importInto(t, ctx, lite, dir)
	pgSum, pgResults := importInto(t, pgctx, pg, dir)
	compare("first import", liteResults, pgResults)
	if pgSum.Imported != len(ids) || pgSum.Events != liteSum.Events {
		t.Fatalf("first import: %+v, sqlite %+v", pgSum, liteSum)
	}
	if copies := strings.Count(statements.String(), `COPY \"events\"`); copies != copied {
		t.Errorf("first import ran %d COPY statements, want one per log of %d events or more (%d):\n%s", copies, copyMinEvents, copied, statements.String())
	}
	if inserts := strings.Count(statements.String(), `kind=batch sql="INSERT INTO events`); inserts != inserted {
		t.Errorf("first import held back %d INSERTs of events, want one per shorter log (%d):\n%s", inserts, inserted, statements.String())
	}
	byID := map[string]transfer.Result{}
	for _, r := range pgSum.Results {
		byID[r.ID] = r
	}
	if r := byID["c-torn"]; r.Torn == nil || r.Torn.FromSeq != int64(len(long)) || r.Events != len(long) {
		t.Errorf("c-torn: %+v", r)
	}
	if r := byID["c-damaged"]; !r.Damaged || r.Events != 20 || r.Invalid == "" {
		t.Errorf("c-damaged: %+v", r)
	}
	if r := byID["c-clean"]; r.Events != len(long) || !r.Checkpointed || r.Invalid != "" {
		t.Errorf("c-clean: %+v", r)
	}
	var usage []backend.SessionUsage
	if err := pg.UsageOf(ctx, []string{"c-clean"}, func(u backend.SessionUsage) error { usage = append(usage, u); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(usage) != 1 || len(usage[0].Models) != 1 || usage[0].Models[0].Messages != int64(turns) {
		t.Errorf("c-clean's token totals after the import: %+v", usage)
	}

	// A second import of the same corpus writes nothing on either store.
	var before int64
	if err := pg.pool.QueryRow(ctx, "SELECT count(*) + coalesce(sum(revision), 0) FROM sessions").Scan(&before); err != nil {
		t.Fatal(err)
	}
	liteSum, liteResults = importInto(t, ctx, lite, dir)
	pgSum, pgResults = importInto(t, ctx, pg, dir)
	compare("second import", liteResults, pgResults)
	if pgSum.Skipped != len(ids) || pgSum.Imported+pgSum.Appended+pgSum.Conflicts+pgSum.Unreadable != 0 {
		t.Errorf("second import: %+v, want every session skipped", pgSum)
	}
	var after int64
	if err := pg.pool.QueryRow(ctx, "SELECT count(*) + coalesce(sum(revision), 0) FROM sessions").Scan(&after); err != nil {
		t.Fatal(err)
	}
	if after != before {
		t.Errorf("the second import changed the sessions' revisions: %d, then %d", before, after)
	}

	// The source changes: one log's header (a conflict), another's end
	// (appended to the stored log).
	if err := os.Remove(paths["c-clean"]); err != nil {
		t.Fatal(err)
	}
	if _, err := dshformat.WriteJSONL(ctx, dir, header("c-clean", ptr("p"), 1_700_000_000_999), long, dshformat.WriteOptions{Compression: dshformat.CompressionNone}); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(paths["c-grows"]); err != nil {
		t.Fatal(err)
	}
	if _, err := dshformat.WriteJSONL(ctx, dir, header("c-grows", ptr("p"), 1_700_000_000_005), long, dshformat.WriteOptions{Compression: dshformat.CompressionNone}); err != nil {
		t.Fatal(err)
	}
	liteSum, liteResults = importInto(t, ctx, lite, dir)
	pgSum, pgResults = importInto(t, ctx, pg, dir)
	compare("third import", liteResults, pgResults)
	if pgSum.Conflicts != 1 || pgSum.Appended != 1 || pgSum.Skipped != len(ids)-2 {
		t.Errorf("third import: %+v, want c-clean conflicting and c-grows appended", pgSum)
	}
}
