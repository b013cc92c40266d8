package subagent_test

import (
	"github.com/dsh-project/dsh/internal/corpus"
	"github.com/dsh-project/dsh/internal/dshfixtures"

	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/dshcompat"
	"github.com/dsh-project/dsh/internal/dshformat"
	"github.com/dsh-project/dsh/internal/jsjson"
	"github.com/dsh-project/dsh/internal/projcache"
	"github.com/dsh-project/dsh/internal/render"
	"github.com/dsh-project/dsh/internal/sqlitepersist"
	"github.com/dsh-project/dsh/internal/subagent"
)

// Every DSH oracle corpus, in every storage variant, imported into a dsh
// store, lists exactly as DSH listed it — rows byte for byte in DSH's key
// order, and the list_agents text — with the checkpoint cache empty (every
// child read from its log) and filled (as writers leave it) — under the
// 0.1.0-rc.8 profile and under seeds alike.
func TestOracleListings(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: every oracle corpus, source, cache state and profile (about 11 s); go test ./... runs it")
	}
	for _, name := range dshfixtures.OracleCorpora {
		exp := dshfixtures.LoadOracle(t, name)
		dir := exp.Dir
		variants := map[string]func(context.Context) (dshformat.Source, error){
			"sqlite": func(ctx context.Context) (dshformat.Source, error) {
				return dshformat.OpenDSHSQLite(ctx, filepath.Join(dir, exp.Files.SQLite))
			},
			"jsonl": func(ctx context.Context) (dshformat.Source, error) {
				return dshformat.OpenJSONL(ctx, filepath.Join(dir, exp.Files.JSONL))
			},
		}
		if exp.Files.JSONLPlain != "" {
			variants["jsonl-plain"] = func(ctx context.Context) (dshformat.Source, error) {
				return dshformat.OpenJSONL(ctx, filepath.Join(dir, exp.Files.JSONLPlain))
			}
		}
		for variant, open := range variants {
			for _, cached := range []bool{false, true} {
				for _, profile := range []dshcompat.Profile{dshcompat.Seeds, dshcompat.RC8} {
					label := string(profile) + "/" + name + "/" + variant
					if cached {
						label += "+cache"
					}
					t.Run(label, func(t *testing.T) {
						st := importOracle(t, open, cached)
						l := subagent.NewStoreLister(st, st, 0)
						l.Profile = profile
						for key, want := range exp.Listings {
							list, scope := l.ListChildren, want.Scope(t)
							if scope == corpus.ScopeDescendants {
								list = l.ListDescendants
							}
							rows, err := list(context.Background(), want.ID)
							if err != nil {
								t.Fatalf("%s: %v", key, err)
							}
							var dshRows []json.RawMessage
							if err := json.Unmarshal(want.Result, &dshRows); err != nil {
								t.Fatal(err)
							}
							if len(rows) != len(dshRows) {
								t.Errorf("%s: %d rows, DSH listed %d", key, len(rows), len(dshRows))
								continue
							}
							for i, r := range rows {
								dshRow, err := jsjson.Compact(dshRows[i])
								if err != nil {
									t.Fatal(err)
								}
								if got := render.AppendListEntry(nil, r, scope); string(got) != string(dshRow) {
									t.Errorf("%s row %d:\n got %s\n DSH %s", key, i, got, dshRow)
								}
							}
							if got := render.ListAgentsText(rows, scope); got != want.ListAgents.Text {
								t.Errorf("%s list_agents:\n got %q\n DSH %q", key, got, want.ListAgents.Text)
							}
						}
					})
				}
			}
		}
	}
}

// importOracle imports every session of a DSH corpus into a fresh dsh store
// as it is (ImportSession, torn tails kept) and, when cached, writes each
// subagent session's checkpoint record as a dsh writer would.
func importOracle(t *testing.T, open func(context.Context) (dshformat.Source, error), cached bool) *sqlitepersist.Store {
	t.Helper()
	ctx := context.Background()
	src, err := open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	st, err := sqlitepersist.Open(ctx, filepath.Join(t.TempDir(), "dsh.db"), sqlitepersist.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	headers, err := src.Headers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	reg := subagent.NewRegistry()
	cache := projcache.NewCache(st, reg)
	for _, h := range headers {
		s, err := src.Read(ctx, h.ID)
		if err != nil {
			t.Fatalf("read %s: %v", h.ID, err)
		}
		var tail *backend.TornTail
		if s.Torn != nil {
			tail = &backend.TornTail{FromSeq: s.Torn.FromSeq, Reason: s.Torn.Reason, Raw: s.Torn.Raw}
		}
		if _, err := st.ImportSession(ctx, s.Header, s.Events, tail); err != nil {
			t.Fatalf("import %s: %v", h.ID, err)
		}
		if !cached || !s.Header.IsSubagent() {
			continue
		}
		f := reg.NewFold()
		f.Apply(s.Events...)
		cp, err := f.Checkpoint()
		if err != nil {
			t.Fatal(err)
		}
		if err := cache.Put(ctx, s.Header, f.AsOfSeq(), cp); err != nil {
			t.Fatal(err)
		}
	}
	return st
}
