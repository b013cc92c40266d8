package main

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/dsh-project/dsh/internal/pgtest"
)

// The damage catalogue's catalog kinds (issue #21): damage to a parent's
// subagent/catalog facts, or between them and the children they name, in a
// DSH format-V4 corpus (and V3, where DSH's V3->V4 back-fill decides; V0,
// where a catalog fact is not a V0 event at all). Each kind is checked by
// the catalogue's rule — in place = imported = audited — in every
// --dsh-compat profile, and its finding is the same in each: the catalog
// cross-check does not depend on whose listing rules apply.
//
// The corpus: parent p cataloging c and s; c, whose own catalog names its
// child g; all children spawned continuable.

// catFact is a catalog fact line.
func catFact(seq int, child string, createdAt int, mode, label string) string {
	payload := fmt.Sprintf(`{"version":0,"childId":%q,"childCreatedAt":%d,"mode":%q`, child, createdAt, mode)
	if label != "" {
		payload += fmt.Sprintf(`,"label":%q`, label)
	}
	return catFactRaw(seq, payload+"}")
}

// catFactRaw is a catalog fact line with the payload as given.
func catFactRaw(seq int, payload string) string {
	return fmt.Sprintf(`{"type":"subagent/catalog","seq":%d,"time":%d,"data":%s}`, seq, 10+seq, payload)
}

// catLaterHeader is a format-V2+ header.
func catLaterHeader(version int, id string, createdAt int, parent string, depth int) string {
	if parent == "" {
		return fmt.Sprintf(`{"type":"session","version":%d,"id":%q,"createdAt":%d,"cwd":"/work","isSeeded":false,"delegationDepth":0}`, version, id, createdAt)
	}
	return fmt.Sprintf(`{"type":"session","version":%d,"id":%q,"createdAt":%d,"cwd":"/work","parentSession":%q,"isSeeded":false,"origin":"subagent","delegationDepth":%d}`,
		version, id, createdAt, parent, depth)
}

func catLaterDescriptor(seq int, mode, label string) string {
	payload := fmt.Sprintf(`{"version":3,"mode":%q,"provider":"spawn"`, mode)
	if label != "" {
		payload += fmt.Sprintf(`,"label":%q`, label)
	}
	return fmt.Sprintf(`{"type":"subagent/descriptor","seq":%d,"time":%d,"data":%s}`, seq, 10+seq, payload+"}")
}

// catLaterCorpus is the healthy corpus with p in format version (2, 3 or
// 4); every child is V4.
func catLaterCorpus(version int) map[string]*catSession {
	return map[string]*catSession{
		"p": {id: "p", header: catLaterHeader(version, "p", 1, "", 0), lines: []string{
			catFact(0, "c", 2, "continuable", "damaged"),
			catFact(1, "s", 4, "continuable", "sibling"),
		}},
		"c": {id: "c", header: catLaterHeader(4, "c", 2, "p", 1), lines: []string{
			catLaterDescriptor(0, "continuable", "damaged"),
			catFact(1, "g", 3, "continuable", "grandchild"),
			`{"type":"turn/start","seq":2,"time":12,"data":{"turn":1}}`,
			`{"type":"turn/end","seq":3,"time":13,"data":{"turn":1,"reason":{"kind":"completed"}}}`,
		}},
		"g": {id: "g", header: catLaterHeader(4, "g", 3, "c", 2), lines: []string{catLaterDescriptor(0, "continuable", "grandchild")}},
		"s": {id: "s", header: catLaterHeader(4, "s", 4, "p", 1), lines: []string{catLaterDescriptor(0, "continuable", "sibling")}},
	}
}

// catalogKind is one kind of catalog damage: it damages the corpus, and
// damaged must then carry a want finding.
type catalogKind struct {
	name          string
	parentVersion int
	damage        func(cs map[string]*catSession)
	damaged, want string
}

var catalogKinds = []catalogKind{
	{"cataloged child with no session", 4, func(cs map[string]*catSession) {
		cs["p"].lines = append(cs["p"].lines, catFact(2, "m", 9, "continuable", "gone"))
	}, "m", "CATALOG_CHILD_MISSING"},
	{"subagent child the catalog does not name", 4, func(cs map[string]*catSession) {
		cs["p"].lines = []string{catFact(0, "s", 4, "continuable", "sibling")}
	}, "c", "CATALOG_CHILD_UNCATALOGED"},
	{"fact with childCreatedAt -1", 4, func(cs map[string]*catSession) {
		cs["p"].lines[0] = catFact(0, "c", -1, "continuable", "damaged")
	}, "p", "CATALOG_FACT_MALFORMED"},
	{"fact with an extra key", 4, func(cs map[string]*catSession) {
		cs["p"].lines[0] = catFactRaw(0, `{"version":0,"childId":"c","childCreatedAt":2,"mode":"continuable","label":"damaged","plugin":"x"}`)
	}, "p", "CATALOG_FACT_MALFORMED"},
	{"fact continuable without a label", 4, func(cs map[string]*catSession) {
		cs["p"].lines[0] = catFact(0, "c", 2, "continuable", "")
	}, "p", "CATALOG_FACT_MALFORMED"},
	{"fact that is not an object", 4, func(cs map[string]*catSession) {
		cs["p"].lines[0] = catFactRaw(0, `["c"]`)
	}, "p", "CATALOG_FACT_MALFORMED"},
	{"fact v0 with mode unknown", 4, func(cs map[string]*catSession) {
		cs["p"].lines[0] = catFact(0, "c", 2, "unknown", "")
	}, "p", "CATALOG_FACT_MALFORMED"},
	{"fact of version 9", 4, func(cs map[string]*catSession) {
		cs["p"].lines[0] = catFactRaw(0, `{"version":9,"childId":"c","childCreatedAt":2,"mode":"continuable","label":"damaged"}`)
	}, "p", "CATALOG_FACT_UNSUPPORTED_VERSION"},
	{"duplicate child id", 4, func(cs map[string]*catSession) {
		cs["p"].lines = append(cs["p"].lines, catFact(2, "c", 2, "continuable", "damaged"))
	}, "p", "CATALOG_DUPLICATE_CHILD"},
	{"childCreatedAt that is not the header's", 4, func(cs map[string]*catSession) {
		cs["p"].lines[0] = catFact(0, "c", 7, "continuable", "damaged")
	}, "c", "CATALOG_MISMATCH"},
	{"label that is not the descriptor's", 4, func(cs map[string]*catSession) {
		cs["p"].lines[0] = catFact(0, "c", 2, "continuable", "renamed")
	}, "c", "CATALOG_MISMATCH"},
	{"mode that is not the descriptor's", 4, func(cs map[string]*catSession) {
		cs["p"].lines[0] = catFact(0, "c", 2, "one-shot", "damaged")
	}, "c", "CATALOG_MISMATCH"},
	{"unknown-mode entry", 4, func(cs map[string]*catSession) {
		cs["p"].lines[0] = catFactRaw(0, `{"version":1,"childId":"c","childCreatedAt":2,"mode":"unknown"}`)
	}, "c", "CATALOG_MODE_UNKNOWN"},
	{"malformed fact in a child's own catalog", 4, func(cs map[string]*catSession) {
		cs["c"].lines[1] = catFact(1, "g", -1, "continuable", "grandchild")
	}, "c", "CATALOG_FACT_MALFORMED"},
	// A V3 parent: DSH 0.1.7+ reads it through its V3->V4 migration,
	// which back-fills the catalog from the children's evidence.
	{"V3 parent whose fact conflicts with the child's header", 3, func(cs map[string]*catSession) {
		cs["p"].lines[0] = catFact(0, "c", 7, "continuable", "damaged")
	}, "c", "CATALOG_BACKFILL_REFUSED"},
	{"V3 parent whose fact conflicts with the child's descriptor", 3, func(cs map[string]*catSession) {
		cs["p"].lines[0] = catFact(0, "c", 2, "one-shot", "damaged")
	}, "c", "CATALOG_BACKFILL_REFUSED"},
	{"V3 parent with a fact holding an extension key", 3, func(cs map[string]*catSession) {
		cs["p"].lines[0] = catFactRaw(0, `{"version":0,"childId":"c","childCreatedAt":2,"mode":"continuable","label":"damaged","plugin":"x"}`)
	}, "p", "CATALOG_FACT_MALFORMED"},
	{"V3 parent back-filling a child with two descriptors", 3, func(cs map[string]*catSession) {
		cs["p"].lines = []string{catFact(0, "s", 4, "continuable", "sibling")}
		c := cs["c"]
		c.lines = slices.Insert(c.lines, 2, catLaterDescriptor(2, "continuable", "again"))
		for i := 3; i < len(c.lines); i++ {
			c.lines[i] = renumber(c.lines[i], i)
		}
	}, "c", "CATALOG_MODE_UNKNOWN"},
	{"V2 parent with a duplicate child id", 2, func(cs map[string]*catSession) {
		cs["p"].lines = append(cs["p"].lines, catFact(2, "s", 4, "continuable", "sibling"))
	}, "p", "CATALOG_DUPLICATE_CHILD"},
}

var seqField = regexp.MustCompile(`"seq":\d+,"time":\d+`)

// renumber gives an event line seq n.
func renumber(line string, n int) string {
	return seqField.ReplaceAllString(line, fmt.Sprintf(`"seq":%d,"time":%d`, n, 10+n))
}

// catProfiles are the global flags of each --dsh-compat profile.
var catProfiles = [][]string{nil, {"--dsh-compat", "seeds"}, {"--dsh-compat", "0.1.0-rc.8"}, {"--dsh-compat", "0.1.7"}}

var catalogFinding = regexp.MustCompile(`CATALOG_[A-Z_]+/[a-z]+@[-0-9]+`)

// catalogFindings is a diagnosis reduced to its CATALOG_* findings.
func catalogFindings(d map[string]string) string {
	var out []string
	for _, id := range slices.Sorted(maps.Keys(d)) {
		if found := catalogFinding.FindAllString(d[id], -1); len(found) > 0 {
			out = append(out, id+": "+strings.Join(found, " "))
		}
	}
	return strings.Join(out, "\n")
}

func TestDamageCatalogueCatalogKinds(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: every catalog damage kind in every form (about 60 s); TestDamageCatalogue stands for it, go test ./... runs it")
	}
	isolateEnv(t)
	for _, kind := range catalogKinds {
		for _, form := range []string{"jsonl", "jsonl-zstd", "dsh-home"} {
			t.Run(kind.name+"/"+form, func(t *testing.T) {
				cs := catLaterCorpus(kind.parentVersion)
				kind.damage(cs)
				pg := ""
				if form == "jsonl" && pgtest.Required() {
					// Imported into PostgreSQL as well: one form is
					// enough to hold the backends to one audit.
					pg = pgtest.NewDatabase(t)
				}
				diagnoses := checkCatalogue(t, []*catSession{cs["p"], cs["c"], cs["g"], cs["s"]}, form, pg, catProfiles, kind.damaged, kind.want)
				first := catalogFindings(diagnoses[0])
				for i, d := range diagnoses[1:] {
					if got := catalogFindings(d); got != first {
						t.Errorf("%v: catalog findings\n%s\ndiffer from the default profile's\n%s", catProfiles[i+1], got, first)
					}
				}
			})
		}
	}
}
