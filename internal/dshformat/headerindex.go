package dshformat

import (
	"errors"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dsh-project/dsh/internal/session"
)

// packedHeaders is a corpus's header index held compactly, since it is
// held for a whole listing, audit or import and grows with the corpus: a
// fixed-size record per session, ids in string blocks, and the optional
// fields (cwd, parent, origin, preset, seed length, depth, versions)
// interned, since siblings share them, as are the parts of a file's path
// around its session's id (DSH's layout names a session's directory after
// its id). A header is rebuilt from its record without allocating: its id
// is a slice of a block and its field pointers point into the interned
// tables, which nothing assigns through. Built by add, then frozen;
// read-only after.
type packedHeaders struct {
	blocks []string
	recs   []packedHeader
	strs   interned[string]
	ints   interned[int64]
	// refused holds each record's refusal (index 0: none): few sessions
	// have one, so the record keeps an index rather than an error.
	refused []error

	// While building: the block being filled.
	buf []byte
}

// interned is a table of distinct values, each named by its index; index
// 0 stands for an absent (nil) value. Its map finds a value's index while
// the headers are built and is dropped when they are frozen.
type interned[T comparable] struct {
	values []T
	index  map[T]uint32
}

func newInterned[T comparable]() interned[T] {
	var zero T
	return interned[T]{values: []T{zero}, index: map[T]uint32{}}
}

// of is v's index, v added when it is new; 0 for nil.
func (t *interned[T]) of(v *T) uint32 {
	if v == nil {
		return 0
	}
	if i, ok := t.index[*v]; ok {
		return i
	}
	t.values = append(t.values, *v)
	i := uint32(len(t.values) - 1)
	t.index[*v] = i
	return i
}

// ptr is the value at index i, nil for 0.
func (t *interned[T]) ptr(i uint32) *T {
	if i == 0 {
		return nil
	}
	return &t.values[i]
}

// packedHeader is one session's record: spans of the blocks and indexes
// into the interned tables. Its file's path (without the source's root)
// is pathPre + id + pathPost when idInPath, else path.
type packedHeader struct {
	createdAt                   int64
	id, path                    span
	version, gen, seed, depth   uint32
	cwd, parent, origin, preset uint32
	pathPre, pathPost           uint32
	refused                     uint32
	compressed                  bool
	idInPath                    bool
	// rooted: the path is stored without the source's root prefix.
	rooted bool
}

// span is text in a block.
type span struct{ blk, off, n uint32 }

// arenaBlock is the size of a block of text: large enough that blocks
// are few, small enough that sealing one (a copy) costs nothing much.
const arenaBlock = 64 << 10

func newPackedHeaders() *packedHeaders {
	return &packedHeaders{strs: newInterned[string](), ints: newInterned[int64](), refused: []error{nil}}
}

// errIndexFull refuses a corpus of more sessions than positions of the
// index address.
var errIndexFull = errors.New("more sessions than a corpus read in place indexes")

func (p *packedHeaders) text(s string) span {
	if len(p.buf)+len(s) > arenaBlock && len(p.buf) > 0 {
		p.seal()
	}
	sp := span{uint32(len(p.blocks)), uint32(len(p.buf)), uint32(len(s))}
	if p.buf == nil {
		p.buf = make([]byte, 0, max(arenaBlock, len(s)))
	}
	p.buf = append(p.buf, s...)
	return sp
}

// seal ends the block being filled: it becomes a string its text is
// sliced from, and its buffer is reused.
func (p *packedHeaders) seal() {
	p.blocks = append(p.blocks, string(p.buf))
	p.buf = p.buf[:0]
}

// add appends a session's header and file. Its path is stored without
// prefix (the source's root, which the paths it finds start with).
func (p *packedHeaders) add(h session.Header, f jsonlFile, prefix string) error {
	if len(p.recs) >= math.MaxInt32 {
		return errIndexFull
	}
	r := packedHeader{createdAt: h.CreatedAt, id: p.text(h.ID), compressed: f.compressed,
		version: p.ints.of(&h.Version), gen: p.ints.of(&f.gen), seed: p.ints.of(h.SeedLength), depth: p.ints.of(h.DelegationDepth),
		cwd: p.strs.of(h.Cwd), parent: p.strs.of(h.ParentSession), origin: p.strs.of(h.Origin), preset: p.strs.of(h.AgentPreset)}
	rel, rooted := strings.CutPrefix(f.path, prefix)
	r.rooted = rooted && prefix != ""
	sep := string(filepath.Separator)
	if k := strings.LastIndex(rel, sep+h.ID+sep); h.ID != "" && k >= 0 {
		pre, post := rel[:k+1], rel[k+1+len(h.ID):]
		r.idInPath, r.pathPre, r.pathPost = true, p.strs.of(&pre), p.strs.of(&post)
	} else {
		r.path = p.text(rel)
	}
	if f.refused != nil {
		p.refused = append(p.refused, f.refused)
		r.refused = uint32(len(p.refused) - 1)
	}
	p.recs = append(p.recs, r)
	return nil
}

// freeze ends building: the last block is sealed and the interning maps
// are dropped.
func (p *packedHeaders) freeze() {
	if len(p.buf) > 0 {
		p.seal()
	}
	p.buf, p.strs.index, p.ints.index = nil, nil, nil
	p.recs = slices.Clip(p.recs)
}

func (p *packedHeaders) get(s span) string {
	if s.n == 0 {
		return ""
	}
	return p.blocks[s.blk][s.off : s.off+s.n]
}

// path is record r's file path, under prefix when it is rooted.
func (p *packedHeaders) path(r *packedHeader, prefix string) string {
	rel := p.get(r.path)
	if r.idInPath {
		rel = p.strs.values[r.pathPre] + p.get(r.id) + p.strs.values[r.pathPost]
	}
	if r.rooted {
		return prefix + rel
	}
	return rel
}

// header rebuilds record i's header.
func (p *packedHeaders) header(i int) session.Header {
	r := &p.recs[i]
	return session.Header{Version: p.ints.values[r.version], ID: p.get(r.id), CreatedAt: r.createdAt,
		Cwd: p.strs.ptr(r.cwd), ParentSession: p.strs.ptr(r.parent), SeedLength: p.ints.ptr(r.seed),
		Origin: p.strs.ptr(r.origin), DelegationDepth: p.ints.ptr(r.depth), AgentPreset: p.strs.ptr(r.preset)}
}

// file rebuilds record i's file, its path under prefix.
func (p *packedHeaders) file(i int, prefix string) jsonlFile {
	r := &p.recs[i]
	return jsonlFile{path: p.path(r, prefix), compressed: r.compressed, gen: p.ints.values[r.gen], refused: p.refused[r.refused]}
}
