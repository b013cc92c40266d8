// Command benchreport turns the measurements of scripts/bench into
// docs/benchmarks.md (medians, ratios to the SQL floor, machine facts) and
// an SVG plot of listing time against the number of children.
package main

import (
	"bufio"
	"encoding/csv"
	"flag"
	"fmt"
	"io"
	"os"
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

// measurement is one case's medians on one corpus.
type measurement struct {
	runs    int
	ms      float64
	rssKiB  int64
	rows    int
	present bool
}

type results struct {
	corpora []corpus
	byCase  map[corpus]map[string]measurement
}

func (r *results) get(c corpus, name string) measurement { return r.byCase[c][name] }

func main() {
	var resultsPath, factsPath, mdPath, svgPath string
	flag.StringVar(&resultsPath, "results", "", "measurements (TSV written by scripts/bench)")
	flag.StringVar(&factsPath, "facts", "", "machine facts (TSV of name, value)")
	flag.StringVar(&mdPath, "md", "docs/benchmarks.md", "Markdown report to write")
	flag.StringVar(&svgPath, "svg", "docs/benchmarks-listing.svg", "plot to write")
	flag.Parse()
	if err := run(resultsPath, factsPath, mdPath, svgPath); err != nil {
		fmt.Fprintln(os.Stderr, "benchreport:", err)
		os.Exit(1)
	}
}

func run(resultsPath, factsPath, mdPath, svgPath string) error {
	res, err := readResults(resultsPath)
	if err != nil {
		return err
	}
	facts, err := readTSV(factsPath)
	if err != nil {
		return err
	}
	svgName := svgPath
	if i := strings.LastIndexByte(svgName, '/'); i >= 0 {
		svgName = svgName[i+1:]
	}
	if err := writeFile(mdPath, func(w io.Writer) error { return writeMarkdown(w, res, facts, svgName) }); err != nil {
		return err
	}
	return writeFile(svgPath, func(w io.Writer) error { return writeSVG(w, res) })
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
	for i, rec := range recs {
		if i == 0 {
			continue // column names
		}
		if len(rec) != 8 {
			return nil, fmt.Errorf("%s line %d: %d fields, want 8", path, i+1, len(rec))
		}
		var nums [7]float64
		for j, k := range []int{0, 1, 2, 4, 5, 6, 7} {
			if nums[j], err = strconv.ParseFloat(rec[k], 64); err != nil {
				return nil, fmt.Errorf("%s line %d field %d: %w", path, i+1, k+1, err)
			}
		}
		c := corpus{int(nums[0]), int(nums[1]), int(nums[2])}
		if res.byCase[c] == nil {
			res.byCase[c] = map[string]measurement{}
			res.corpora = append(res.corpora, c)
		}
		res.byCase[c][rec[3]] = measurement{runs: int(nums[3]), ms: nums[4], rssKiB: int64(nums[5]), rows: int(nums[6]), present: true}
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

func cell(m measurement) string {
	if !m.present {
		return "–"
	}
	return strconv.FormatFloat(m.ms, 'f', 1, 64)
}

func ratio(a, b measurement) string {
	if !a.present || !b.present || b.ms == 0 {
		return "–"
	}
	return strconv.FormatFloat(a.ms/b.ms, 'f', 1, 64) + "×"
}

// cases are the measured cases in report order, with what each measures.
var cases = []struct{ name, what string }{
	{"warm", "`dsh list --parent P -o json`, checkpoint cache filled"},
	{"cold", "the same after `dsh cache clear`: every child's log is read"},
	{"descendants", "`dsh list --parent P --scope descendants -o json`, cache filled"},
	{"diagnose", "`dsh diagnose --parent P -o jsonl`"},
	{"import", "`dsh import` of P's subtree exported as DSH JSONL, into a fresh database (rows = sessions)"},
	{"floor", "the bare SQL a children listing needs (headers, checkpoint records, hasChildren) via `sqlite3`"},
	{"floor-desc", "the same for the descendants listing (recursive query)"},
}

func writeMarkdown(w io.Writer, res *results, facts [][]string, svgName string) error {
	fmt.Fprint(w, `# dsh benchmarks

Generated by `+"`scripts/bench`"+` — do not edit by hand; rerun the script
(`+"`scripts/bench --quick`"+` for a smaller run). Every number is the median wall time in
milliseconds of separate `+"`dsh`"+` processes (start-up included), after one untimed
warm-up run (import: none, its input was just written), so the OS page cache is warm in every case; "cold" means dsh's
checkpoint cache is empty, not the page cache. The floor is the `+"`sqlite3`"+` CLI running
the bare query for the same rows, the least any listing must do.

Corpora are written by `+"`dsh dev gen-corpus`"+`: one parent P with the given number of
subagent children (continuable, one-shot, fork, and a few corrupt and unreadable
ones), each child's transcript of the given number of events, among unrelated
sessions up to the store size.

## Side by side (median ms)

| children | events | store sessions | warm | cold | descendants | diagnose | import | floor | warm / floor | cold / floor | descendants / floor-desc |
|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|
`)
	for _, c := range res.corpora {
		g := func(n string) measurement { return res.get(c, n) }
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			group(c.children), group(c.events), group(c.sessions),
			cell(g("warm")), cell(g("cold")), cell(g("descendants")), cell(g("diagnose")), cell(g("import")), cell(g("floor")),
			ratio(g("warm"), g("floor")), ratio(g("cold"), g("floor")), ratio(g("descendants"), g("floor-desc")))
	}
	fmt.Fprint(w, "\n## Every case, with peak RSS\n\n| children | events | store sessions | case | rows | runs | median ms | peak RSS MiB |\n|---:|---:|---:|---|---:|---:|---:|---:|\n")
	for _, c := range res.corpora {
		for _, cs := range cases {
			m := res.get(c, cs.name)
			if !m.present {
				continue
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %d | %.1f | %.1f |\n",
				group(c.children), group(c.events), group(c.sessions), cs.name, group(m.rows), m.runs, m.ms, float64(m.rssKiB)/1024)
		}
	}
	fmt.Fprint(w, "\nCases:\n\n")
	for _, cs := range cases {
		fmt.Fprintf(w, "- **%s**: %s\n", cs.name, cs.what)
	}
	fmt.Fprintf(w, "\n## Listing time vs. children\n\n![listing time vs. children](%s)\n\n", svgName)
	fmt.Fprint(w, "## Machine\n\n| | |\n|---|---|\n")
	for _, f := range facts {
		if len(f) == 2 {
			fmt.Fprintf(w, "| %s | %s |\n", f[0], strings.ReplaceAll(f[1], "|", "\\|"))
		}
	}
	return nil
}
