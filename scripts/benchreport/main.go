// Command benchreport turns the measurements of scripts/bench into
// docs/benchmarks.md (medians, ratios to the SQL floor, machine facts) and
// an SVG plot of listing time against the number of children.
package main

import (
	"bufio"
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// corpus is one generated store: children of the benchmark parent, events
// per child transcript, sessions in the store.
type corpus struct{ children, events, sessions int }

func (c corpus) less(o corpus) bool {
	if c.children != o.children {
		return c.children < o.children
	}
	if c.events != o.events {
		return c.events < o.events
	}
	return c.sessions < o.sessions
}

// measurement is one case's paired runs on one corpus: dsh and its floor.
type measurement struct {
	runs                      int
	ms, floorMS               float64
	rssKiB, floorRSSKiB       int64
	ratioMin, ratio, ratioMax float64
	cpuMS, floorCPUMS         float64
	cpu                       ratios
	rows                      int
	same                      string // yes, no, or - (not comparable)
	events                    int64  // events audited (diagnose)
	present                   bool
}

type results struct {
	corpora []corpus
	byCase  map[corpus]map[string]measurement
	// index is the search cases' stores (scripts/bench --search): per
	// store its name, events, indexed events, the index's bytes, the
	// store's bytes and one more field (the query; for an import, the
	// bytes of the same store imported without the index).
	index [][]string
}

func (r *results) get(c corpus, name string) measurement { return r.byCase[c][name] }

func main() {
	var resultsPath, factsPath, searchPath, mdPath, svgPath string
	flag.StringVar(&resultsPath, "results", "", "measurements (TSV written by scripts/bench)")
	flag.StringVar(&searchPath, "search", "", "the search cases' index sizes (TSV written by scripts/bench; optional)")
	flag.StringVar(&factsPath, "facts", "", "machine facts (TSV of name, value)")
	flag.StringVar(&mdPath, "md", "docs/benchmarks.md", "Markdown report to write")
	flag.StringVar(&svgPath, "svg", "docs/benchmarks-listing.svg", "plot to write")
	flag.Parse()
	if err := run(resultsPath, factsPath, searchPath, mdPath, svgPath); err != nil {
		fmt.Fprintln(os.Stderr, "benchreport:", err)
		os.Exit(1)
	}
}

func run(resultsPath, factsPath, searchPath, mdPath, svgPath string) error {
	res, err := readResults(resultsPath)
	if err != nil {
		return err
	}
	if searchPath != "" {
		index, err := readTSV(searchPath)
		if err != nil {
			return err
		}
		for i, rec := range index {
			if i > 0 && len(rec) != 6 {
				return fmt.Errorf("%s line %d: %d fields, want 6", searchPath, i+1, len(rec))
			}
		}
		if len(index) > 0 {
			res.index = index[1:] // without the column names
		}
	}
	facts, err := readTSV(factsPath)
	if err != nil {
		return err
	}
	svgName := svgPath
	if i := strings.LastIndexByte(svgName, '/'); i >= 0 {
		svgName = svgName[i+1:]
	}
	kept, err := handMeasured(mdPath)
	if err != nil {
		return err
	}
	if err := writeFile(mdPath, func(w io.Writer) error {
		if err := writeMarkdown(w, res, facts, svgName); err != nil {
			return err
		}
		_, err := io.WriteString(w, kept)
		return err
	}); err != nil {
		return err
	}
	if len(listingSeries(res)) == 0 {
		return nil // a run of --search or --inplace alone: no plot to draw
	}
	return writeFile(svgPath, func(w io.Writer) error { return writeSVG(w, res) })
}

// handMeasuredHeading starts the part of the report measured by hand, not
// by scripts/bench (cases it does not run): a rerun keeps it as it is.
const handMeasuredHeading = "## Measured outside scripts/bench"

// handMeasured is the hand-measured part of the report at path, from its
// heading to the end ("" when the report has none or does not exist).
func handMeasured(path string) (string, error) {
	old, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	i := strings.Index(string(old), "\n"+handMeasuredHeading)
	if i < 0 {
		return "", nil
	}
	return string(old[i:]), nil
}

func writeFile(path string, fill func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(f)
	if err := fill(bw); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}

func readTSV(path string) ([][]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.Comma = '\t'
	r.FieldsPerRecord = -1
	r.LazyQuotes = true
	recs, err := r.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return recs, nil
}

func readResults(path string) (*results, error) {
	recs, err := readTSV(path)
	if err != nil {
		return nil, err
	}
	res := &results{byCase: map[corpus]map[string]measurement{}}
	const fields = 20
	for i, rec := range recs {
		if i == 0 {
			continue // column names
		}
		if len(rec) != fields {
			return nil, fmt.Errorf("%s line %d: %d fields, want %d", path, i+1, len(rec), fields)
		}
		var nums [fields]float64
		for k := range rec {
			if k == 3 || k == 18 {
				continue // case, same
			}
			if nums[k], err = strconv.ParseFloat(rec[k], 64); err != nil {
				return nil, fmt.Errorf("%s line %d field %d: %w", path, i+1, k+1, err)
			}
		}
		c := corpus{int(nums[0]), int(nums[1]), int(nums[2])}
		if res.byCase[c] == nil {
			res.byCase[c] = map[string]measurement{}
			res.corpora = append(res.corpora, c)
		}
		res.byCase[c][rec[3]] = measurement{
			runs: int(nums[4]), ms: nums[5], floorMS: nums[6], rssKiB: int64(nums[7]), floorRSSKiB: int64(nums[8]),
			ratioMin: nums[9], ratio: nums[10], ratioMax: nums[11],
			cpuMS: nums[12], floorCPUMS: nums[13], cpu: ratios{nums[14], nums[15], nums[16]},
			rows: int(nums[17]), same: rec[18], events: int64(nums[19]), present: true,
		}
	}
	sort.Slice(res.corpora, func(i, j int) bool { return res.corpora[i].less(res.corpora[j]) })
	return res, nil
}

func group(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// ratios are the min, median and max of a case's per-pair ratios.
type ratios struct{ min, median, max float64 }

// ratioCell is "median× (min–max)" of a case's per-pair wall-time ratios.
func ratioCell(m measurement) string {
	if !m.present {
		return "–"
	}
	return fmt.Sprintf("%.2f× (%.2f–%.2f)", m.ratio, m.ratioMin, m.ratioMax)
}

// cpuCell is ratioCell for CPU time.
func cpuCell(m measurement) string {
	if !m.present || m.cpu.median == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f× (%.2f–%.2f)", m.cpu.median, m.cpu.min, m.cpu.max)
}

// cases are the measured cases in report order, with what each measures
// and what its floor does.
var cases = []struct{ name, what string }{
	{"warm", "`dsh list --parent P -o json`, checkpoint cache filled; floor `benchfloor list`: headers joined with their checkpoint records by the index range, witness compared in SQL, `EXISTS` for hasChildren, identity from the stored checkpoint text, the same JSON out"},
	{"bare", "the same dsh listing; floor `benchfloor bare`: a bare indexed table of (id, parent, created_at, mode, label) only"},
	{"cold", "`dsh list` after `dsh cache clear`; floor `benchfloor cold`: headers joined with their descriptor events (partial index), the last descriptor JSON-decoded"},
	{"descendants", "`dsh list --scope descendants -o json`, cache filled; floor `benchfloor list --scope descendants`: one recursive query, pre-order built in memory"},
	{"diagnose", "`dsh diagnose --parent P -o jsonl`; floor `benchfloor diagnose`: every event of every child streamed in one query, each JSON-parsed"},
	{"catalog", "`dsh --dsh-compat 0.1.7 list` of a format-4 parent whose `subagent/catalog` names P's children, cache empty; floor `benchfloor cold` of P: the same children's descriptor rows (other bytes: the floor prints the seeds listing)"},
	{"catalog-seeds", "the same 0.1.7 listing; in place of a floor, dsh's default (`seeds`) cold listing of P: the same children, enumerated (other bytes)"},
	{"catalog-resolved", "the same 0.1.7 listing before `dsh cache clear`, every catalog view resolved by the writer (migration 0017: no log read); floor `benchfloor cold` of P"},
	{"import", "`dsh import` of P's subtree exported as DSH JSONL into a fresh store (rows = sessions); floor `benchfloor import`: every line parsed, the same rows inserted in transactions of 1,000 sessions with one prepared statement per table"},
	{"pg-warm", "warm on PostgreSQL: the same corpus generated into a database of its own, the same listing; floor `benchfloor list` through pgx, the same query"},
	{"pg-cold", "cold on PostgreSQL; floor `benchfloor cold` through pgx"},
	{"pg-descendants", "descendants on PostgreSQL; floor `benchfloor list --scope descendants` through pgx"},
	{"pg-diagnose", "diagnose on PostgreSQL; floor `benchfloor diagnose` through pgx, each child's log read by a lateral join"},
	{"in-place", "`dsh list --source jsonl:DIR --parent P -o json` of the whole corpus exported as DSH's JSONL tree and read in place (`scripts/bench --inplace N`); floor `benchfloor headers`: the header line of every session file and nothing else of it, P's children's ids printed in listing order (\"same bytes\": the same ids)"},
	{"pg-import", "import into a fresh PostgreSQL database; floor `benchfloor import` through pgx: each 1,000 sessions' headers and events sent by COPY in one transaction"},
	{"search", "`dsh search QUERY -o jsonl` (the best 20 hits, snippets made) over the whole `--search N` corpus, warm (rows = hits); floor `benchfloor search`: the same FTS5 index asked directly, every match's `rank`, the fork cut by the sessions' seed length, the best 20 by rank, session and seq, only their events read, printed as stored (no snippet); \"same bytes\": the same hits in the same order"},
	{"search-import", "`dsh import` of the whole search corpus exported as DSH JSONL into a fresh store (rows = sessions); in place of a floor, the same `dsh import` into a fresh store whose index-keeping triggers were dropped (`benchfloor drop-index`): the ratio is what keeping the index costs an import"},
	{"pg-search", "search on PostgreSQL; floor `benchfloor search` through pgx: the same tsquery on the same GIN index, `ts_rank_cd` descending"},
	{"pg-search-import", "search-import into fresh PostgreSQL databases, with and without the index's triggers"},
}

// searchCases are the search section's rows.
var searchCases = []string{"search", "pg-search", "search-import", "pg-search-import"}

// sqliteCases and pgCases are the columns of the ratio tables, by backend.
var (
	sqliteCases = []string{"warm", "bare", "cold", "descendants", "diagnose", "import"}
	pgCases     = []string{"pg-warm", "pg-cold", "pg-descendants", "pg-diagnose", "pg-import"}
)

// measured reports whether any corpus has the case.
func (r *results) measured(name string) bool {
	for _, c := range r.corpora {
		if r.get(c, name).present {
			return true
		}
	}
	return false
}

// hasPG reports whether any corpus was measured on PostgreSQL.
func (r *results) hasPG() bool {
	for _, c := range r.corpora {
		for _, name := range pgCases {
			if r.get(c, name).present {
				return true
			}
		}
	}
	return false
}

func writeMarkdown(w io.Writer, res *results, facts [][]string, svgName string) error {
	fmt.Fprint(w, `# dsh benchmarks

Generated by `+"`scripts/bench`"+` — do not edit by hand; rerun the script
(`+"`scripts/bench --quick`"+` for a smaller run). Every case runs dsh and its floor
(`+"`scripts/benchfloor`"+`: the least a Go program on the same driver,
`+"`modernc.org/sqlite`"+` or, for the PostgreSQL cases, `+"`pgx`"+`, must do to produce the same
output from the same database) as
whole processes, start-up included, alternating run by run after one untimed warm-up of
each (import: none, its input was just written), so the OS page cache is warm and both
sides see the same machine load. "dsh / floor" is the median of the per-pair ratios, with
their minimum and maximum, of wall time and of CPU time (user + system, from rusage; on a
machine shared with other work CPU time is the steadier of the two); "cold" means dsh's
checkpoint cache is empty, not the page cache.

Corpora are written by `+"`dsh dev gen-corpus`"+`: one parent P with the given number of
subagent children (continuable, one-shot, fork, and a few corrupt and unreadable
ones), each child's transcript of the given number of events, among unrelated
sessions up to the store size.

`)
	// One pair of ratio tables per backend measured: its cases, titled.
	type ratioTables struct {
		backend, heads string
		names          []string
	}
	tables := []ratioTables{{"", "warm | bare table | cold | descendants | diagnose | import", sqliteCases}}
	if res.hasPG() {
		tables = append(tables, ratioTables{"PostgreSQL: ", "warm | cold | descendants | diagnose | import", pgCases})
	}
	for _, tb := range tables {
		for _, t := range []struct {
			title string
			cell  func(measurement) string
		}{{"wall time", ratioCell}, {"CPU time", cpuCell}} {
			fmt.Fprintf(w, "## %sdsh / floor, %s (median of paired runs, min–max)\n\n", tb.backend, t.title)
			fmt.Fprintf(w, "| children | events | store sessions | %s |\n|---:|---:|---:|%s\n", tb.heads, strings.Repeat("---:|", len(tb.names)))
			for _, c := range res.corpora {
				if !slices.ContainsFunc(tb.names, func(n string) bool { return res.get(c, n).present }) {
					continue // e.g. an in-place corpus: its one case is below
				}
				fmt.Fprintf(w, "| %s | %s | %s |", group(c.children), group(c.events), group(c.sessions))
				for _, n := range tb.names {
					fmt.Fprintf(w, " %s |", t.cell(res.get(c, n)))
				}
				fmt.Fprintln(w)
			}
			fmt.Fprintln(w)
		}
	}
	if res.hasPG() {
		writeBackends(w, res)
	}
	if len(res.index) > 0 {
		writeSearch(w, res)
	}
	fmt.Fprint(w, "## Every case, with peak RSS\n\n"+
		"| children | events | store sessions | case | rows | pairs | dsh ms | floor ms | dsh CPU ms | floor CPU ms | dsh RSS MiB | floor RSS MiB | same bytes | dsh events/s (wall, CPU) |\n"+
		"|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|\n")
	for _, c := range res.corpora {
		for _, cs := range cases {
			m := res.get(c, cs.name)
			if !m.present {
				continue
			}
			eps := "–"
			if m.events > 0 && m.ms > 0 && m.cpuMS > 0 {
				eps = group(int(float64(m.events)/(m.ms/1000))) + ", " + group(int(float64(m.events)/(m.cpuMS/1000)))
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %d | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %s | %s |\n",
				group(c.children), group(c.events), group(c.sessions), cs.name, group(m.rows), m.runs, m.ms, m.floorMS,
				m.cpuMS, m.floorCPUMS, float64(m.rssKiB)/1024, float64(m.floorRSSKiB)/1024, m.same, eps)
		}
	}
	fmt.Fprint(w, "\nCases:\n\n")
	for _, cs := range cases {
		if strings.HasPrefix(cs.name, "pg-") && !res.hasPG() && !res.measured(cs.name) {
			continue
		}
		fmt.Fprintf(w, "- **%s**: %s\n", cs.name, cs.what)
	}
	fmt.Fprintln(w)
	if len(listingSeries(res)) > 0 {
		fmt.Fprintf(w, "## Listing time vs. children\n\n![listing time vs. children](%s)\n\n", svgName)
	}
	fmt.Fprint(w, "## Machine\n\n| | |\n|---|---|\n")
	for _, f := range facts {
		if len(f) == 2 {
			fmt.Fprintf(w, "| %s | %s |\n", f[0], strings.ReplaceAll(f[1], "|", "\\|"))
		}
	}
	return nil
}

// writeSearch is the search cases (scripts/bench --search): their ratios
// and what the index costs a store.
func writeSearch(w io.Writer, res *results) {
	fmt.Fprint(w, "## dsh search (issue 26)\n\n"+
		"| children | events | case | dsh ms | floor ms | dsh / floor, wall | dsh / floor, CPU | same hits |\n"+
		"|---:|---:|---|---:|---:|---:|---:|---|\n")
	for _, c := range res.corpora {
		for _, name := range searchCases {
			m := res.get(c, name)
			if !m.present {
				continue
			}
			same := m.same
			if same == "-" {
				same = "–"
			}
			fmt.Fprintf(w, "| %s | %s | %s | %.1f | %.1f | %s | %s | %s |\n", group(c.children), group(c.events), name,
				m.ms, m.floorMS, ratioCell(m), cpuCell(m), same)
		}
	}
	fmt.Fprint(w, "\n| store | events | indexed events | index bytes | index bytes / event | index bytes / indexed event | store bytes | |\n"+
		"|---|---:|---:|---:|---:|---:|---:|---|\n")
	for _, rec := range res.index {
		events, _ := strconv.ParseFloat(rec[1], 64)
		indexed, _ := strconv.ParseFloat(rec[2], 64)
		bytes, _ := strconv.ParseFloat(rec[3], 64)
		store, _ := strconv.ParseFloat(rec[4], 64)
		per := func(n float64) string {
			if n == 0 {
				return "–"
			}
			return fmt.Sprintf("%.0f", bytes/n)
		}
		extra := "query `" + rec[5] + "`"
		if strings.HasSuffix(rec[0], " import") {
			without, _ := strconv.Atoi(rec[5])
			extra = "imported without the index: " + group(without) + " bytes"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", rec[0], group(int(events)), group(int(indexed)),
			group(int(bytes)), per(events), per(indexed), group(int(store)), extra)
	}
	fmt.Fprintln(w)
}

// writeBackends sets dsh's own times on PostgreSQL beside its times on
// SQLite, case by case, on the same corpus.
func writeBackends(w io.Writer, res *results) {
	fmt.Fprint(w, "## dsh on PostgreSQL vs. SQLite (median wall ms; import and diagnose also events/s)\n\n"+
		"| children | events | store sessions | case | SQLite ms | PostgreSQL ms | PostgreSQL / SQLite | SQLite events/s | PostgreSQL events/s |\n"+
		"|---:|---:|---:|---|---:|---:|---:|---:|---:|\n")
	perSecond := func(m measurement) string {
		if m.events == 0 || m.ms == 0 {
			return "–"
		}
		return group(int(float64(m.events) / (m.ms / 1000)))
	}
	for _, c := range res.corpora {
		for _, name := range pgCases {
			pg, lite := res.get(c, name), res.get(c, strings.TrimPrefix(name, "pg-"))
			if !pg.present || !lite.present || lite.ms == 0 {
				continue
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %.1f | %.1f | %.2f× | %s | %s |\n",
				group(c.children), group(c.events), group(c.sessions), strings.TrimPrefix(name, "pg-"),
				lite.ms, pg.ms, pg.ms/lite.ms, perSecond(lite), perSecond(pg))
		}
	}
	fmt.Fprintln(w)
}
