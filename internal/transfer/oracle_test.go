package transfer

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/dsh-project/dsh/internal/render"
	"github.com/dsh-project/dsh/internal/subagent"
)

var oracleCorpora = []string{"a-continuable-and-oneshot", "g-nested-descendants", "j-medium"}

// oracle is what an expected.json holds that these tests check against.
type oracle struct {
	Files struct {
		SQLite          string `json:"sqlite"`
		JSONL           string `json:"jsonl"`
		JSONLPlain      string `json:"jsonlPlain"`
		ProjectionCache string `json:"projectionCache"`
	} `json:"files"`
	Listings map[string]struct {
		Op         string          `json:"op"`
		ID         string          `json:"id"`
		Result     json.RawMessage `json:"result"`
		ListAgents struct {
			Text string `json:"text"`
		} `json:"listAgents"`
	} `json:"listings"`
}

func loadOracle(t *testing.T, name string) (string, oracle) {
	t.Helper()
	dir := fixtureDir(t, filepath.Join("dsh-oracle", name))
	raw, err := os.ReadFile(filepath.Join(dir, "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var o oracle
	if err := json.Unmarshal(raw, &o); err != nil {
		t.Fatal(err)
	}
	if len(o.Listings) == 0 {
		t.Fatalf("%s: expected.json has no listings", name)
	}
	return dir, o
}

// sources is every form of an oracle corpus dsh imports.
func (o oracle) sources(dir string) map[string]Location {
	locs := map[string]Location{
		"sqlite": {KindDSHSQLite, filepath.Join(dir, o.Files.SQLite)},
		"jsonl":  {KindJSONL, filepath.Join(dir, o.Files.JSONL)},
	}
	if o.Files.JSONLPlain != "" {
		locs["jsonl-plain"] = Location{KindJSONL, filepath.Join(dir, o.Files.JSONLPlain)}
	}
	return locs
}

// After importing any form of an oracle corpus, every listing DSH recorded
// comes out of the database exactly: the JSON rows (structure, values and
// key order) and the list_agents text.
func TestImportedOracleListings(t *testing.T) {
	ctx := context.Background()
	for _, name := range oracleCorpora {
		dir, o := loadOracle(t, name)
		for variant, loc := range o.sources(dir) {
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
					scope := render.Scope(l.Op)
					if scope == render.ScopeDescendants {
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
