package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-project/dsh/internal/dshfixtures"
	"github.com/dsh-project/dsh/internal/pgtest"
)

// The --dsh-compat 0.1.7 listing on DSH's own test cases
// (docs/dsh-compatibility.md; catalog-listing §8 and the rules of §§1–6),
// each read in place as a DSH home and as loose JSONL files, and after
// import into SQLite and into PostgreSQL: every corpus kind must give the
// same rows, in both scopes, as JSON and as list_agents text. The source is
// never written.

// catalogCorpus is one DSH home holding every case, ids prefixed by case.
type catalogSession struct {
	version int
	header  string // the header's fields after type, version and id
	events  []string
}

func v4Root(createdAt int64) string {
	return fmt.Sprintf(`"createdAt":%d,"cwd":"/w","isSeeded":false,"delegationDepth":0`, createdAt)
}

// v4Plain is a session with no header metadata (DSH's tests create catalog
// children so: the catalog alone makes them children).
func v4Plain(createdAt int64) string { return v4Root(createdAt) }

func subagentHeader(version int, createdAt int64, parent string) string {
	if version >= 2 {
		return fmt.Sprintf(`"createdAt":%d,"cwd":"/w","parentSession":%q,"isSeeded":false,"origin":"subagent","delegationDepth":1`, createdAt, parent)
	}
	return fmt.Sprintf(`"createdAt":%d,"cwd":"/w","parentSession":%q,"origin":"subagent","delegationDepth":1`, createdAt, parent)
}

func listingFact(id string, ca int64, mode, label string) string {
	version := map[string]int{"one-shot": 0, "continuable": 0, "unknown": 1, "external": 2}[mode]
	s := fmt.Sprintf(`{"version":%d,"childId":%q,"childCreatedAt":%d,"mode":%q`, version, id, ca, mode)
	if label != "" {
		s += fmt.Sprintf(`,"label":%q`, label)
	}
	return s + "}"
}

// ev builds event lines with dense seqs from (type, data) pairs.
func ev(pairs ...string) []string {
	var out []string
	for i := 0; i+1 < len(pairs); i += 2 {
		seq := len(out)
		out = append(out, fmt.Sprintf(`{"type":%q,"seq":%d,"time":%d,"data":%s}`, pairs[i], seq, 1000+seq, pairs[i+1]))
	}
	return out
}

const (
	tCat  = "subagent/catalog"
	tDesc = "subagent/descriptor"
)

var catalogSessions = map[string]catalogSession{
	// §8 case 1: catalog order, not createdAt.
	"t01-P": {4, v4Root(1), ev(tCat, listingFact("t01-B", 20, "continuable", "branch"), tCat, listingFact("t01-S", 10, "one-shot", "sibling"))},
	"t01-B": {4, v4Plain(20), ev(tCat, listingFact("t01-L", 30, "continuable", "leaf"))},
	"t01-L": {4, v4Plain(30), nil},
	"t01-S": {4, v4Plain(10), nil},
	// §8 case 2: a subagent session the V4 parent's catalog does not name.
	"t02-P": {4, v4Root(1), ev("turn/start", `{"turn":1}`, "turn/end", `{"turn":1,"reason":{"kind":"completed"}}`)},
	"t02-C": {4, subagentHeader(4, 2, "t02-P"), ev(tDesc, `{"version":3,"mode":"continuable","provider":"spawn","label":"uncataloged"}`)},
	// §8 case 3 (and 19's missing continuable entry): cataloged, no session.
	"t03-P": {4, v4Root(1), ev(tCat, listingFact("t03-M", 5, "continuable", "m"))},
	// §8 case 4: a cold child without descriptor; no label key.
	"t04-P": {4, v4Root(1), ev(tCat, listingFact("t04-C", 5, "one-shot", ""))},
	"t04-C": {0, subagentHeader(0, 5, "t04-P"), nil},
	// §8 case 5: the label comes from the catalog.
	"t05-P": {4, v4Root(1), ev(tCat, listingFact("t05-C", 5, "continuable", "cat-label"))},
	"t05-C": {4, subagentHeader(4, 5, "t05-P"), ev(tDesc, `{"version":3,"mode":"continuable","provider":"spawn","label":"desc-label"}`)},
	// §8 case 6: unknown mode is unsupported, and still walked.
	"t06-P": {4, v4Root(1), ev(tCat, listingFact("t06-O", 2, "one-shot", ""))},
	"t06-O": {4, v4Plain(2), ev(tCat, listingFact("t06-U", 3, "unknown", ""))},
	"t06-U": {4, v4Plain(3), ev(tCat, listingFact("t06-L", 4, "continuable", "l"))},
	"t06-L": {4, v4Plain(4), nil},
	// §8 case 7: unknown and unreadable is unavailable.
	"t07-P": {4, v4Root(1), ev(tCat, listingFact("t07-U", 3, "unknown", ""))},
	// §8 case 8: cycles and duplicates; the first pre-order visit wins.
	"t08-P": {4, v4Root(1), ev(tCat, listingFact("t08-B", 2, "continuable", "b"), tCat, listingFact("t08-L", 3, "continuable", "l"))},
	"t08-B": {4, v4Plain(2), ev(tCat, listingFact("t08-L", 3, "continuable", "l"))},
	"t08-L": {4, v4Plain(3), ev(tCat, listingFact("t08-P", 1, "continuable", "p"), tCat, listingFact("t08-B", 2, "continuable", "b"))},
	// §8 case 9: a fork's inherited facts are not its own.
	"t09-A": {4, v4Root(1), ev(tCat, listingFact("t09-I", 2, "continuable", "inherited"))},
	"t09-F": {4, `"createdAt":3,"cwd":"/w","parentSession":"t09-A","isSeeded":true,"delegationDepth":0`,
		ev(tCat, listingFact("t09-I", 2, "continuable", "inherited"), "session/end-seed", `{"inherited":true}`, tCat, listingFact("t09-O", 2, "continuable", "own"))},
	"t09-I": {4, v4Plain(2), nil},
	"t09-O": {4, v4Plain(2), nil},
	// §8 case 10: an ordinary fork is no node unless a catalog names it.
	"t10-P":  {4, v4Root(1), nil},
	"t10-F":  {4, `"createdAt":2,"cwd":"/w","parentSession":"t10-P","isSeeded":false,"delegationDepth":0`, ev(tCat, listingFact("t10-FC", 3, "continuable", "fc"))},
	"t10-FC": {4, subagentHeader(4, 3, "t10-F"), ev(tDesc, `{"version":3,"mode":"continuable","provider":"spawn","label":"fc"}`)},
	// §8 case 11: an invalid fact makes a branch corrupt; siblings go on.
	"t11-P": {4, v4Root(1), ev(tCat, listingFact("t11-B", 2, "continuable", "b"), tCat, listingFact("t11-S", 3, "one-shot", ""))},
	"t11-B": {4, v4Plain(2), ev(tCat, listingFact("t11-H", -1, "continuable", "hidden"))},
	"t11-S": {4, v4Plain(3), nil},
	"t11-H": {4, v4Plain(4), nil},
	// §8 case 12: how branch read failures map (a log failing validation:
	// corrupt; a format dsh does not read: unavailable).
	"t12-P":   {4, v4Root(1), ev(tCat, listingFact("t12-BAD", 2, "continuable", "bad"), tCat, listingFact("t12-V5", 3, "continuable", "v5"), tCat, listingFact("t12-S", 4, "one-shot", ""))},
	"t12-BAD": {4, v4Plain(2), []string{`{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}`, `{"type":"turn/end","seq":2,"time":2,"data":{"turn":1,"reason":{"kind":"completed"}}}`}},
	"t12-V5":  {5, v4Plain(3), nil},
	"t12-S":   {4, v4Plain(4), nil},
	// §8 case 14: a persisted V4 parent naming a child twice is refused.
	"t14-P": {4, v4Root(1), ev(tCat, listingFact("t14-D", 2, "continuable", "d"))},
	"t14-D": {4, v4Plain(2), ev(tCat, listingFact("t14-X", 3, "one-shot", ""), tCat, listingFact("t14-X", 3, "one-shot", ""))},
	"t14-X": {4, v4Plain(3), nil},
	// §8 case 15: a V3 parent's back-filled catalog, in code-unit order.
	"t15-P": {3, `"createdAt":1,"cwd":"/w","isSeeded":false,"delegationDepth":0`, nil},
	"t15-a": {3, subagentHeader(3, 5, "t15-P"), ev(tDesc, `{"version":3,"mode":"continuable","provider":"spawn","label":"lower"}`)},
	"t15-B": {3, subagentHeader(3, 5, "t15-P"), ev(tDesc, `{"version":3,"mode":"one-shot","provider":"fork"}`)},
	"t15-z": {3, subagentHeader(3, 1, "t15-P"), nil},
	// §8 case 16: an extension key survives the back-fill, not the projection.
	"t16-P": {3, `"createdAt":1,"cwd":"/w","isSeeded":false,"delegationDepth":0`, ev(tCat, `{"version":0,"childId":"t16-C","childCreatedAt":2,"mode":"one-shot","plugin":"x"}`)},
	"t16-C": {3, subagentHeader(3, 2, "t16-P"), nil},
	// §8 case 17: conflicting evidence refuses the back-fill.
	"t17-P": {3, `"createdAt":1,"cwd":"/w","isSeeded":false,"delegationDepth":0`, ev(tCat, listingFact("t17-C", 2, "one-shot", ""))},
	"t17-C": {3, subagentHeader(3, 3, "t17-P"), nil},
	// §8 case 18: two own descriptors and no fact: an unknown entry.
	"t18-P": {3, `"createdAt":1,"cwd":"/w","isSeeded":false,"delegationDepth":0`, nil},
	"t18-C": {3, subagentHeader(3, 2, "t18-P"), ev(tDesc, `{"version":3,"mode":"one-shot","provider":"fork","label":"x"}`, tDesc, `{"version":3,"mode":"one-shot","provider":"fork","label":"y"}`)},
	// §8 case 19: list_agents children: continuable entries only.
	"t19-P":  {4, v4Root(1), ev(tCat, listingFact("t19-O", 2, "one-shot", ""), tCat, listingFact("t19-C1", 3, "continuable", "l1"), tCat, listingFact("t19-C2", 4, "continuable", "l2"), tCat, listingFact("t19-U", 5, "unknown", ""))},
	"t19-O":  {4, v4Plain(2), nil},
	"t19-C1": {4, v4Plain(3), nil},
	"t19-C2": {4, v4Plain(4), nil},
	"t19-U":  {4, v4Plain(5), nil},
	// §8 case 20: 0.2.x external entries are leaves, never read.
	"t20-P": {4, v4Root(1), ev(tCat, listingFact("t20-E", 2, "external", "external-child"), tCat, listingFact("t20-L", 3, "continuable", "l"))},
	"t20-L": {4, v4Plain(3), ev(tCat, listingFact("t20-NE", 4, "external", ""))},
	// The V0 open point (docs/dsh-compatibility.md): an rc.8 parent and
	// child (format 0, descriptor version 2) read, the child's entry from
	// its descriptor; an rc.8 one-shot's grandchild through the back-fill.
	"v0-P": {0, `"createdAt":1,"cwd":"/w","delegationDepth":0`, nil},
	"v0-C": {0, subagentHeader(0, 3, "v0-P"), ev(tDesc, `{"version":2,"mode":"continuable","provider":"spawn","label":"rc.8 child"}`)},
	"v0-O": {0, subagentHeader(0, 2, "v0-P"), ev(tDesc, `{"version":2,"mode":"one-shot","provider":"fork"}`)},
	"v0-G": {0, `"createdAt":4,"cwd":"/w","parentSession":"v0-O","origin":"subagent","delegationDepth":2`, ev(tDesc, `{"version":2,"mode":"continuable","provider":"spawn","label":"grandchild"}`)},
	// A malformed descriptor: DSH's persistence supplies the identity
	// alone, so the back-fill makes an unknown entry (not a refusal).
	"v0-B":  {0, subagentHeader(0, 6, "v0-P"), ev(tDesc, `{"version":2,"mode":"continuable","provider":7,"label":"broken"}`)},
	"v0-OF": {0, `"createdAt":5,"cwd":"/w","parentSession":"v0-P","delegationDepth":0`, nil},
}

func writeCatalogHome(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for id, s := range catalogSessions {
		name := "session.jsonl"
		if s.version > 0 {
			name = fmt.Sprintf("session.v%d.jsonl", s.version)
		}
		var b strings.Builder
		fmt.Fprintf(&b, `{"type":"session","version":%d,"id":%q,%s}`+"\n", s.version, id, s.header)
		for _, e := range s.events {
			b.WriteString(e + "\n")
		}
		p := filepath.Join(dir, "sessions", "--w--", id, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// catalogListingCase is one expected listing: descendants rows as JSON
// (children are their first level), and list_agents text for both scopes.
type catalogListingCase struct {
	parent        string
	descendants   string
	agentsChild   string
	agentsDescend string
}

func child(id, mode, label, parent string, depth int, hasChildren bool) string {
	l := ""
	if label != "" {
		l = fmt.Sprintf(`"label":%q,`, label)
	}
	return fmt.Sprintf(`{"kind":"child","id":%q,"mode":%q,%s"activity":"inactive","hasChildren":%v,"parentId":%q,"depth":%d}`, id, mode, l, hasChildren, parent, depth)
}

func diag(id, reason, parent string, depth int) string {
	return fmt.Sprintf(`{"kind":"diagnostic","id":%q,"reason":%q,"parentId":%q,"depth":%d}`, id, reason, parent, depth)
}

func rowsJSON(rows ...string) string { return "[" + strings.Join(rows, ",") + "]" }

var catalogListingCases = []catalogListingCase{
	{"t01-P", rowsJSON(child("t01-B", "continuable", "branch", "t01-P", 1, true), child("t01-L", "continuable", "leaf", "t01-B", 2, false), child("t01-S", "one-shot", "sibling", "t01-P", 1, false)),
		"t01-B [inactive] — branch", "t01-B [inactive] parent=t01-P depth=1 — branch\nt01-L [inactive] parent=t01-B depth=2 — leaf"},
	{"t02-P", "[]", "(no subagents)", "(no subagents)"},
	{"t03-P", rowsJSON(diag("t03-M", "unavailable", "t03-P", 1)), "t03-M [inactive] — m", "t03-M [diagnostic: unavailable] parent=t03-P depth=1"},
	{"t04-P", rowsJSON(child("t04-C", "one-shot", "", "t04-P", 1, false)), "(no subagents)", "(no subagents)"},
	{"t05-P", rowsJSON(child("t05-C", "continuable", "cat-label", "t05-P", 1, false)), "t05-C [inactive] — cat-label", "t05-C [inactive] parent=t05-P depth=1 — cat-label"},
	{"t06-P", rowsJSON(child("t06-O", "one-shot", "", "t06-P", 1, true), diag("t06-U", "unsupported", "t06-O", 2), child("t06-L", "continuable", "l", "t06-U", 3, false)),
		"(no subagents)", "t06-U [diagnostic: unsupported] parent=t06-O depth=2\nt06-L [inactive] parent=t06-U depth=3 — l"},
	{"t06-O", rowsJSON(diag("t06-U", "unsupported", "t06-O", 1), child("t06-L", "continuable", "l", "t06-U", 2, false)),
		"(no subagents)", "t06-U [diagnostic: unsupported] parent=t06-O depth=1\nt06-L [inactive] parent=t06-U depth=2 — l"},
	{"t07-P", rowsJSON(diag("t07-U", "unavailable", "t07-P", 1)), "(no subagents)", "t07-U [diagnostic: unavailable] parent=t07-P depth=1"},
	{"t08-P", rowsJSON(child("t08-B", "continuable", "b", "t08-P", 1, true), child("t08-L", "continuable", "l", "t08-B", 2, true)),
		"t08-B [inactive] — b\nt08-L [inactive] — l", "t08-B [inactive] parent=t08-P depth=1 — b\nt08-L [inactive] parent=t08-B depth=2 — l"},
	{"t09-F", rowsJSON(child("t09-O", "continuable", "own", "t09-F", 1, false)), "t09-O [inactive] — own", "t09-O [inactive] parent=t09-F depth=1 — own"},
	{"t10-P", "[]", "(no subagents)", "(no subagents)"},
	{"t10-F", rowsJSON(child("t10-FC", "continuable", "fc", "t10-F", 1, false)), "t10-FC [inactive] — fc", "t10-FC [inactive] parent=t10-F depth=1 — fc"},
	{"t11-P", rowsJSON(diag("t11-B", "corrupt", "t11-P", 1), child("t11-S", "one-shot", "", "t11-P", 1, false)), "t11-B [inactive] — b", "t11-B [diagnostic: corrupt] parent=t11-P depth=1"},
	{"t12-P", rowsJSON(diag("t12-BAD", "corrupt", "t12-P", 1), diag("t12-V5", "unavailable", "t12-P", 1), child("t12-S", "one-shot", "", "t12-P", 1, false)),
		"t12-BAD [inactive] — bad\nt12-V5 [inactive] — v5", "t12-BAD [diagnostic: corrupt] parent=t12-P depth=1\nt12-V5 [diagnostic: unavailable] parent=t12-P depth=1"},
	{"t14-P", rowsJSON(diag("t14-D", "corrupt", "t14-P", 1)), "t14-D [inactive] — d", "t14-D [diagnostic: corrupt] parent=t14-P depth=1"},
	{"t15-P", rowsJSON(diag("t15-z", "unsupported", "t15-P", 1), child("t15-B", "one-shot", "", "t15-P", 1, false), child("t15-a", "continuable", "lower", "t15-P", 1, false)),
		"t15-a [inactive] — lower", "t15-z [diagnostic: unsupported] parent=t15-P depth=1\nt15-a [inactive] parent=t15-P depth=1 — lower"},
	{"t18-P", rowsJSON(diag("t18-C", "unsupported", "t18-P", 1)), "(no subagents)", "t18-C [diagnostic: unsupported] parent=t18-P depth=1"},
	{"t19-P", rowsJSON(child("t19-O", "one-shot", "", "t19-P", 1, false), child("t19-C1", "continuable", "l1", "t19-P", 1, false), child("t19-C2", "continuable", "l2", "t19-P", 1, false), diag("t19-U", "unsupported", "t19-P", 1)),
		"t19-C1 [inactive] — l1\nt19-C2 [inactive] — l2", "t19-C1 [inactive] parent=t19-P depth=1 — l1\nt19-C2 [inactive] parent=t19-P depth=1 — l2\nt19-U [diagnostic: unsupported] parent=t19-P depth=1"},
	{"t20-P", rowsJSON(child("t20-E", "external", "external-child", "t20-P", 1, false), child("t20-L", "continuable", "l", "t20-P", 1, true), child("t20-NE", "external", "", "t20-L", 2, false)),
		"t20-L [inactive] — l", "t20-L [inactive] parent=t20-P depth=1 — l"},
	{"v0-P", rowsJSON(child("v0-O", "one-shot", "", "v0-P", 1, true), child("v0-G", "continuable", "grandchild", "v0-O", 2, false), child("v0-C", "continuable", "rc.8 child", "v0-P", 1, false), diag("v0-B", "unsupported", "v0-P", 1)),
		"v0-C [inactive] — rc.8 child", "v0-G [inactive] parent=v0-O depth=2 — grandchild\nv0-C [inactive] parent=v0-P depth=1 — rc.8 child\nv0-B [diagnostic: unsupported] parent=v0-P depth=1"},
}

// firstLevel is the children-scope JSON of descendants rows: the depth-1
// rows without parentId and depth.
func firstLevel(t *testing.T, descendants string) string {
	t.Helper()
	var rows []map[string]json.RawMessage
	if err := json.Unmarshal([]byte(descendants), &rows); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range rows {
		if string(r["depth"]) != "1" {
			continue
		}
		// Rebuild in DSH's key order without parentId/depth.
		s := `{"kind":` + string(r["kind"]) + `,"id":` + string(r["id"])
		if string(r["kind"]) == `"diagnostic"` {
			s += `,"reason":` + string(r["reason"])
		} else {
			s += `,"mode":` + string(r["mode"])
			if l, ok := r["label"]; ok {
				s += `,"label":` + string(l)
			}
			s += `,"activity":` + string(r["activity"]) + `,"hasChildren":` + string(r["hasChildren"])
		}
		out = append(out, s+"}")
	}
	return rowsJSON(out...)
}

// catalogVariants are the ways one DSH home is read: in place as a home
// and as loose files, and imported into SQLite and PostgreSQL.
func catalogVariants(t *testing.T, home string) map[string][]string {
	t.Helper()
	variants := map[string][]string{
		"dsh-home": {"--source", "dsh-home:" + home},
		"jsonl":    {"--source", "jsonl:" + filepath.Join(home, "sessions", "--w--")},
	}
	sqlite := filepath.Join(t.TempDir(), "dsh.db")
	targets := map[string]string{"import sqlite": sqlite}
	if _, err := pgtest.Probe(); err == nil || pgtest.Required() {
		targets["import postgres"] = pgtest.NewDatabase(t)
	} else {
		t.Logf("PostgreSQL variant skipped: %v", err)
	}
	for name, db := range targets {
		// The v5 session is refused (exit 1): every other one is imported.
		out, errOut, code := runDsh(t, "--db", db, "import", "dsh-home:"+home, "--quiet")
		if code != 0 && code != 1 {
			t.Fatalf("%s: exit %d\n%s%s", name, code, out, errOut)
		}
		variants[name] = []string{"--db", db}
	}
	return variants
}

func TestCatalogListingCases(t *testing.T) {
	isolateEnv(t)
	home := writeCatalogHome(t)
	before := treeFingerprint(t, home)
	for variant, args := range catalogVariants(t, home) {
		for _, c := range catalogListingCases {
			list := func(scope, format string) string {
				t.Helper()
				a := append(append([]string{"--dsh-compat", "0.1.7"}, args...), "list", "--parent", c.parent, "--scope", scope, "-o", format)
				out, errOut, code := runDsh(t, a...)
				if code != 0 || errOut != "" {
					t.Fatalf("%s %s %s -o %s: exit %d\n%s", variant, c.parent, scope, format, code, errOut)
				}
				return strings.TrimSuffix(out, "\n")
			}
			if got := list("descendants", "json"); got != c.descendants {
				t.Errorf("%s %s descendants:\n got %s\nwant %s", variant, c.parent, got, c.descendants)
			}
			if got, want := list("children", "json"), firstLevel(t, c.descendants); got != want {
				t.Errorf("%s %s children:\n got %s\nwant %s", variant, c.parent, got, want)
			}
			if got := list("children", "agents"); got != c.agentsChild {
				t.Errorf("%s %s children agents:\n got %q\nwant %q", variant, c.parent, got, c.agentsChild)
			}
			if got := list("descendants", "agents"); got != c.agentsDescend {
				t.Errorf("%s %s descendants agents:\n got %q\nwant %q", variant, c.parent, got, c.agentsDescend)
			}
		}
	}
	if after := treeFingerprint(t, home); after != before {
		t.Fatalf("the source changed:\nbefore\n%s\nafter\n%s", before, after)
	}
}

// §8 cases 13, 14, 16, 17 and the root rules of §3: a root that cannot be
// read fails the listing, in both scopes and every corpus kind.
func TestCatalogListingRootFailures(t *testing.T) {
	isolateEnv(t)
	home := writeCatalogHome(t)
	for variant, args := range catalogVariants(t, home) {
		for _, tt := range []struct {
			parent, code string
			status       int
			message      string
		}{
			{"t13-nobody", "NOT_FOUND", 2, `no session with id "t13-nobody"`},
			{"t14-D", "INVALID_LOG", 3, `duplicate catalog child "t14-X"`},
			{"t11-B", "INVALID_LOG", 3, "childCreatedAt -1 is not a non-negative safe integer"},
			{"t16-P", "INVALID_LOG", 3, `unexpected key "plugin"`},
			{"t17-P", "INVALID_LOG", 3, "childCreatedAt 2 is not the child header's createdAt 3"},
		} {
			for _, scope := range []string{"children", "descendants"} {
				a := append(append([]string{"--dsh-compat", "0.1.7"}, args...), "list", "--parent", tt.parent, "--scope", scope)
				out, errOut, code := runDsh(t, a...)
				if code != tt.status || out != "" || !strings.HasPrefix(errOut, "dsh: "+tt.code+": ") || !strings.Contains(errOut, tt.message) || strings.Count(errOut, "\n") != 1 {
					t.Errorf("%s %s %s: exit %d, stdout %q, stderr %q; want exit %d, %s containing %q", variant, tt.parent, scope, code, out, errOut, tt.status, tt.code, tt.message)
				}
			}
		}
	}
}

// DSH 0.1.0-rc.8's own recorded corpora (format 0, no catalog facts) under
// --dsh-compat 0.1.7: every parent gets its back-filled catalog, and every
// corpus kind — DSH's schema-17 SQLite store and its JSONL files in place,
// and both imported — lists the same rows in both scopes and as
// list_agents text. The rows are the seeds listing's children in the
// back-fill's order (createdAt, then id by code unit), so each direct child
// the seeds profile lists appears under 0.1.7 too.
func TestCatalogListingOracleCorporaEveryKind(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: every oracle corpus in every source kind (about 10 s); TestCatalogListingCases stands for it, go test ./... runs it")
	}
	isolateEnv(t)
	for _, name := range dshfixtures.OracleCorpora {
		o := dshfixtures.LoadOracle(t, name)
		sources := map[string]string{
			"dsh-sqlite": "dsh-sqlite:" + filepath.Join(o.Dir, o.Files.SQLite),
			"jsonl":      "jsonl:" + filepath.Join(o.Dir, o.Files.JSONL),
		}
		variants := map[string][]string{}
		for v, src := range sources {
			variants[v] = []string{"--source", src}
			db := filepath.Join(t.TempDir(), "dsh.db")
			if out, errOut, code := runDsh(t, "--db", db, "import", src, "--quiet"); code != 0 {
				t.Fatalf("%s: import %s: exit %d\n%s%s", name, src, code, out, errOut)
			}
			variants["import "+v] = []string{"--db", db}
		}
		for key, l := range o.Listings {
			var first, firstVariant string
			for v, args := range variants {
				var got strings.Builder
				for _, format := range []string{"json", "agents"} {
					a := append(append([]string{"--dsh-compat", "0.1.7"}, args...), "list", "--parent", l.ID, "--scope", l.Op, "-o", format)
					out, errOut, code := runDsh(t, a...)
					if code != 0 || errOut != "" {
						t.Fatalf("%s %s %s -o %s: exit %d, stderr %s", name, v, key, format, code, errOut)
					}
					got.WriteString(out)
				}
				if first == "" {
					first, firstVariant = got.String(), v
					if l.Op != "children" {
						// Descendants differ by design: 0.1.7 does not walk
						// through ordinary forks (§8 case 10).
						continue
					}
					// Every direct child the seeds listing shows is a row
					// here too.
					var seeds, rows []struct{ ID, Kind string }
					if err := json.Unmarshal(l.Result, &seeds); err != nil {
						t.Fatal(err)
					}
					if err := json.Unmarshal([]byte(strings.SplitN(first, "\n", 2)[0]), &rows); err != nil {
						t.Fatal(err)
					}
					ids := map[string]bool{}
					for _, r := range rows {
						ids[r.ID] = true
					}
					for _, s := range seeds {
						if s.Kind == "child" && !ids[s.ID] {
							t.Errorf("%s %s: seeds child %s has no 0.1.7 row", name, key, s.ID)
						}
					}
					continue
				}
				if got.String() != first {
					t.Errorf("%s %s: %s lists\n%s\n%s lists\n%s", name, key, v, got.String(), firstVariant, first)
				}
			}
		}
	}
}
