package dshformat

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/dsh-project/dsh/internal/session"
)

// HeaderChunk is a run of a source's headers in id order (HeaderChunks).
type HeaderChunk struct {
	// N headers, the i-th At(i).
	N  int
	At func(i int) session.Header
	// Found is how many session files the source holds: the sessions it
	// offers and the problems; the same for every chunk.
	Found int
}

// idRange is a chunk being walked for: the sessions whose ids are above
// after (all on the first walk), at most limit of them, the smallest.
type idRange struct {
	limit    int
	after    string
	hasAfter bool
	// upper, once set, is the largest id the chunk may still take: the
	// index was trimmed to limit sessions below it.
	upper    string
	hasUpper bool
	// more: an offered session was left for a later chunk.
	more bool
	// held is the most sessions the walk's index held at once.
	held int
	// plan is what the first walk learned for the later ones; first is
	// set on the first walk.
	plan  *chunkPlan
	first bool
}

// chunkPlan is what the first walk of a chunked tree learns for the
// later ones, which then read only their own chunk's files.
type chunkPlan struct {
	// unnamed holds the exceptions to a session directory of DSH's
	// layout being named after the id of every session in it (a header
	// of another id, a file of another role, a subdirectory): a later
	// walk skips any other whose id is outside its chunk without
	// reading its files.
	unnamed map[string]bool
	// sample is a uniform sample of the ids offered (reservoir
	// sampling), seen the number of them; ends, from the sample, the
	// estimated last id of each chunk, which bounds a later walk from
	// its start (trimming still holds it to the limit).
	sample []string
	seen   int
	rand   *rand.Rand
	ends   []string
}

// chunkSample is how many ids the first walk samples: a chunk's
// estimated end is then off by about 1.6 % of the tree's sessions at
// worst (two standard errors), which chunkFill leaves room for.
const chunkSample = 4096

// chunkFill is the share of a chunk's limit its estimated end aims at.
const chunkFill = 0.9

func newChunkPlan() *chunkPlan {
	return &chunkPlan{unnamed: map[string]bool{}, rand: rand.New(rand.NewPCG(1, 2))}
}

func (p *chunkPlan) sampleID(id string) {
	p.seen++
	switch {
	case len(p.sample) < chunkSample:
		p.sample = append(p.sample, strings.Clone(id))
	default:
		if j := p.rand.IntN(p.seen); j < chunkSample {
			p.sample[j] = strings.Clone(id)
		}
	}
}

// planEnds estimates each chunk's last id from the sample.
func (p *chunkPlan) planEnds(limit int) {
	if p.seen <= limit {
		return
	}
	slices.Sort(p.sample)
	step := chunkFill * float64(limit) / float64(p.seen) * float64(len(p.sample))
	for k := 1; ; k++ {
		i := int(float64(k)*step) - 1
		if i >= len(p.sample) {
			break
		}
		if i >= 0 && (len(p.ends) == 0 || p.sample[i] > p.ends[len(p.ends)-1]) {
			p.ends = append(p.ends, p.sample[i])
		}
	}
	p.sample = nil
}

// next is the range of the chunk after the ids up to after.
func (p *chunkPlan) next(limit int, after string) *idRange {
	r := &idRange{limit: limit, after: after, hasAfter: true, plan: p}
	if i, _ := slices.BinarySearch(p.ends, after); i < len(p.ends) {
		if p.ends[i] == after {
			i++
		}
		if i < len(p.ends) {
			r.upper, r.hasUpper = p.ends[i], true
		}
	}
	return r
}

func (r *idRange) begin(d *discovery) { d.st.chunk = r }

func (r *idRange) keep(h session.Header, path string) bool {
	if r.first {
		dir := filepath.Dir(path)
		if stem, _, _ := fileGeneration(filepath.Base(path)); layoutSessionDir(dir) && (stem != "session" || h.ID != filepath.Base(dir)) {
			r.plan.unnamed[dir] = true
		}
		r.plan.sampleID(h.ID)
	}
	return r.takes(h.ID)
}

// takes reports whether the chunk takes id.
func (r *idRange) takes(id string) bool {
	if r.hasAfter && id <= r.after {
		return false
	}
	if r.hasUpper && id > r.upper {
		r.more = true
		return false
	}
	return true
}

// skipDir implements dirSkipper. The first walk skips nothing and
// records the session directories whose name is not all their sessions'
// id (one holding a subdirectory among them).
func (r *idRange) skipDir(dir string) bool {
	if r.first {
		if parent := filepath.Dir(dir); layoutSessionDir(parent) {
			r.plan.unnamed[parent] = true
		}
		return false
	}
	return layoutSessionDir(dir) && !r.plan.unnamed[dir] && !r.takes(filepath.Base(dir))
}

// layoutSessionDir reports whether dir is a session directory of DSH's
// layout (<project>/<encoded id>) whose name is an id as it is (no
// character of the id needed escaping).
func layoutSessionDir(dir string) bool {
	name, project := filepath.Base(dir), filepath.Base(filepath.Dir(dir))
	if name == "." || name == ".." || name == "" || !isProjectDir(project) {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !isSegmentSafe(uint16(name[i])) {
			return false
		}
	}
	return true
}

// added trims the index once it holds twice the chunk: what it holds
// stays within 2 × limit sessions however large the corpus.
func (r *idRange) added(d *discovery) {
	r.held = max(r.held, len(d.index.recs))
	if len(d.index.recs) > 2*r.limit {
		d.index = r.trim(d.index, d.src.prefix)
	}
}

func (r *idRange) end(d *discovery) {
	if len(d.index.recs) > r.limit {
		d.index = r.trim(d.index, d.src.prefix)
	}
}

// trim keeps the limit smallest ids of p (with every session of the last
// id kept: the sessions of one id are judged together) and bounds the
// chunk by the last.
func (r *idRange) trim(p *packedHeaders, prefix string) *packedHeaders {
	if len(p.buf) > 0 {
		p.seal()
	}
	order := make([]int32, len(p.recs))
	for i := range order {
		order[i] = int32(i)
	}
	id := func(i int32) string { return p.get(p.recs[i].id) }
	slices.SortFunc(order, func(a, b int32) int { return strings.Compare(id(a), id(b)) })
	cut := r.limit
	for cut < len(order) && id(order[cut]) == id(order[cut-1]) {
		cut++
	}
	if cut == len(order) {
		return p
	}
	r.more, r.upper, r.hasUpper = true, id(order[cut-1]), true
	q := newPackedHeaders()
	for _, i := range order[:cut] {
		// Cannot fail: q holds fewer records than p did.
		_ = q.add(p.header(int(i)), p.file(int(i), prefix), prefix)
	}
	return q
}

// chunkedSource is a JSONL tree read a chunk at a time (OpenJSONLChunked).
type chunkedSource struct {
	*jsonlSource
	// next is the range of the chunk after the one held.
	next *idRange
	// found is the first walk's count of session files.
	found int
	// held is the most sessions a walk's index held at once.
	held int
	// problems gathers the first walk's problems and each chunk's
	// duplicate ids.
	problems []Problem
	started  bool
}

// OpenJSONLChunked opens a JSONL corpus for HeaderChunks, to be read a
// chunk of at most limit sessions at a time (more when ids repeat at a
// chunk's end) in id order, each chunk by one walk of the tree, so that
// what a reader of every session (an import) holds does not grow with the
// corpus. The first chunk is walked for at once, as OpenJSONL walks for
// everything; Headers, HeaderIndex or a read of a session outside the
// chunk held read the whole corpus, as OpenJSONL does. A single file is
// one chunk.
func OpenJSONLChunked(ctx context.Context, path string, limit int) (Source, error) {
	if limit < 1 {
		return nil, fmt.Errorf("open JSONL source %s: chunks of %d sessions", path, limit)
	}
	info, err := os.Stat(path)
	if err != nil || !info.IsDir() {
		return OpenJSONL(ctx, path)
	}
	s := &chunkedSource{jsonlSource: &jsonlSource{root: path}}
	if err := s.rootAt(path); err != nil {
		return nil, err
	}
	if err := s.walkChunk(ctx, &idRange{limit: limit, first: true, plan: newChunkPlan()}, false); err != nil {
		return nil, err
	}
	return s, nil
}

// walkChunk walks the tree for the chunk r selects and holds it.
func (s *chunkedSource) walkChunk(ctx context.Context, r *idRange, quiet bool) error {
	var found int
	st, err := s.walk(ctx, r, func(d *discovery) error {
		d.quiet = quiet
		err := d.walkDir(ctx, s.dir)
		found = d.found
		return err
	})
	if err != nil {
		return fmt.Errorf("open JSONL source %s: %w", s.root, err)
	}
	if !quiet {
		s.found = found
	}
	s.held = max(s.held, r.held)
	s.problems = append(s.problems, st.problems...)
	s.next = nil
	if r.first {
		r.plan.planEnds(r.limit)
	}
	if r.more {
		// Every id up to upper is in this chunk (more is only ever set
		// with upper), those found in several files among its problems.
		if r.hasAfter && r.upper <= r.after {
			return fmt.Errorf("open JSONL source %s: a chunk after %q ends at %q", s.root, r.after, r.upper)
		}
		s.next = r.plan.next(r.limit, r.upper)
	}
	s.state.Store(st)
	return nil
}

// HeaderChunks calls fn with each chunk of the source's headers in id
// order, the chunks together being what Headers returns. While fn runs,
// Read and ReadAsFound read the chunk's sessions. Problems, once the
// chunks are done, names every session found but not offered, as for
// OpenJSONL. It can run once.
func (s *chunkedSource) HeaderChunks(ctx context.Context, fn func(HeaderChunk) error) error {
	if s.started {
		return fmt.Errorf("open JSONL source %s: its chunks were read already", s.root)
	}
	s.started = true
	for {
		v := s.view()
		if err := fn(HeaderChunk{N: v.n, At: v.at, Found: s.found}); err != nil {
			return err
		}
		if s.next == nil {
			break
		}
		if err := s.walkChunk(ctx, s.next, true); err != nil {
			return err
		}
	}
	sort.SliceStable(s.problems, func(i, j int) bool { return s.problems[i].Path < s.problems[j].Path })
	st := *s.state.Load()
	st.problems = s.problems
	s.state.Store(&st)
	return nil
}
