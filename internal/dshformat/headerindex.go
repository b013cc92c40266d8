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
	strs   []string // index 0: absent
	ints   []int64  // index 0: absent
	// refused holds each record's refusal (index 0: none): few sessions
	// have one, so the record keeps an index rather than an error.
	refused []error

	// While building: the block being filled, the interning maps.
	buf    []byte
	strIdx map[string]uint32
	intIdx map[int64]uint32
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
	return &packedHeaders{strs: []string{""}, ints: []int64{0}, refused: []error{nil},
		strIdx: map[string]uint32{}, intIdx: map[int64]uint32{}}
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

func (p *packedHeaders) str(s *string) uint32 {
	if s == nil {
		return 0
	}
	if i, ok := p.strIdx[*s]; ok {
		return i
	}
	p.strs = append(p.strs, *s)
	i := uint32(len(p.strs) - 1)
	p.strIdx[*s] = i
	return i
}

func (p *packedHeaders) num(n *int64) uint32 {
	if n == nil {
		return 0
	}
	if i, ok := p.intIdx[*n]; ok {
		return i
	}
	p.ints = append(p.ints, *n)
	i := uint32(len(p.ints) - 1)
	p.intIdx[*n] = i
	return i
}

// add appends a session's header and file. Its path is stored without
// prefix (the source's root, which the paths it finds start with).
func (p *packedHeaders) add(h session.Header, f jsonlFile, prefix string) error {
	if len(p.recs) >= math.MaxInt32 {
		return errIndexFull
	}
	r := packedHeader{createdAt: h.CreatedAt, id: p.text(h.ID), compressed: f.compressed,
		version: p.num(&h.Version), gen: p.num(&f.gen), seed: p.num(h.SeedLength), depth: p.num(h.DelegationDepth),
		cwd: p.str(h.Cwd), parent: p.str(h.ParentSession), origin: p.str(h.Origin), preset: p.str(h.AgentPreset)}
	rel, rooted := strings.CutPrefix(f.path, prefix)
	r.rooted = rooted && prefix != ""
	sep := string(filepath.Separator)
	if k := strings.LastIndex(rel, sep+h.ID+sep); h.ID != "" && k >= 0 {
		pre, post := rel[:k+1], rel[k+1+len(h.ID):]
		r.idInPath, r.pathPre, r.pathPost = true, p.str(&pre), p.str(&post)
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
	p.buf, p.strIdx, p.intIdx = nil, nil, nil
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
		rel = p.strs[r.pathPre] + p.get(r.id) + p.strs[r.pathPost]
	}
	if r.rooted {
		return prefix + rel
	}
	return rel
}

func (p *packedHeaders) strPtr(i uint32) *string {
	if i == 0 {
		return nil
	}
	return &p.strs[i]
}

func (p *packedHeaders) intPtr(i uint32) *int64 {
	if i == 0 {
		return nil
	}
	return &p.ints[i]
}

// header rebuilds record i's header.
func (p *packedHeaders) header(i int) session.Header {
	r := &p.recs[i]
	return session.Header{Version: p.ints[r.version], ID: p.get(r.id), CreatedAt: r.createdAt,
		Cwd: p.strPtr(r.cwd), ParentSession: p.strPtr(r.parent), SeedLength: p.intPtr(r.seed),
		Origin: p.strPtr(r.origin), DelegationDepth: p.intPtr(r.depth), AgentPreset: p.strPtr(r.preset)}
}

// file rebuilds record i's file, its path under prefix.
func (p *packedHeaders) file(i int, prefix string) jsonlFile {
	r := &p.recs[i]
	return jsonlFile{path: p.path(r, prefix), compressed: r.compressed, gen: p.ints[r.gen], refused: p.refused[r.refused]}
}
