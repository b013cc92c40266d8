package transfer

import (
	"github.com/dsh-project/dsh/internal/corpus"
	"github.com/dsh-project/dsh/internal/dshfixtures"

	"context"
	"path/filepath"
	"testing"

	"github.com/dsh-project/dsh/internal/dshformat"
	"github.com/dsh-project/dsh/internal/render"
	"github.com/dsh-project/dsh/internal/subagent"
)

// oracleSources is every form of an oracle corpus dsh imports.
func oracleSources(o dshfixtures.Oracle) map[string]corpusAt {
	dir := o.Dir
	locs := map[string]corpusAt{
		"sqlite": {dshformat.OpenDSHSQLite, filepath.Join(dir, o.Files.SQLite)},
		"jsonl":  {dshformat.OpenJSONL, filepath.Join(dir, o.Files.JSONL)},
	}
	if o.Files.JSONLPlain != "" {
		locs["jsonl-plain"] = corpusAt{dshformat.OpenJSONL, filepath.Join(dir, o.Files.JSONLPlain)}
	}
	return locs
}

// After importing any form of an oracle corpus, every listing DSH recorded
// comes out of the database exactly: the JSON rows (structure, values and
// key order) and the list_agents text.
func TestImportedOracleListings(t *testing.T) {
	ctx := context.Background()
	for _, name := range dshfixtures.OracleCorpora {
		o := dshfixtures.LoadOracle(t, name)
		for variant, loc := range oracleSources(o) {
			t.Run(name+"/"+variant, func(t *testing.T) {
				st := openStore(t)
				sum := importAll(t, st, loc)
				if sum.Failed() || sum.Imported == 0 {
					t.Fatalf("import: %+v", sum)
				}
				for key, l := range o.Listings {
					lister := subagent.NewStoreLister(st, nil, 0)
					var rows []subagent.Row
					var err error
					scope := l.Scope(t)
					if scope == corpus.ScopeDescendants {
						rows, err = lister.ListDescendants(ctx, l.ID)
					} else {
						rows, err = lister.ListChildren(ctx, l.ID)
					}
					if err != nil {
						t.Fatalf("%s: %v", key, err)
					}
					got := []byte{'['}
					for i, r := range rows {
						if i > 0 {
							got = append(got, ',')
						}
						got = render.AppendListEntry(got, r, scope)
					}
					assertSameJSON(t, key, append(got, ']'), l.Result)
					if text := render.ListAgentsText(rows, scope); text != l.ListAgents.Text {
						t.Errorf("%s: list_agents text\n%s\nwant\n%s", key, text, l.ListAgents.Text)
					}
				}
			})
		}
	}
}
