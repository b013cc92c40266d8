package dshformat

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/dsh-project/dsh/internal/boundedfile"
	"github.com/dsh-project/dsh/internal/session"
)

const (
	suffixPlain = ".jsonl"
	suffixZstd  = ".jsonl.zstd"
)

// generationName matches a canonical log name of format generation N ≥ 1:
// <stem>.vN.jsonl[.zstd], N decimal without a leading zero (DSH's
// session.vN.jsonl, and session.K.vN.jsonl in its snapshot fixtures).
var generationName = regexp.MustCompile(`^(.+?)\.v([1-9][0-9]*)\.jsonl(\.zstd)?$`)

// nonCanonicalName matches generation-like names DSH does not write
// (.v0, .v03, .V3): they are not session logs.
var nonCanonicalName = regexp.MustCompile(`\.[vV][0-9]+\.jsonl(\.zstd)?$`)

// fileGeneration splits a session file name into its role stem and format
// generation (0 for names without .vN); ok is false for names that are not
// session logs.
func fileGeneration(name string) (stem string, gen int64, ok bool) {
	if m := generationName.FindStringSubmatch(name); m != nil {
		n, err := strconv.ParseInt(m[2], 10, 64)
		if err != nil {
			n = math.MaxInt64 // beyond anything dsh reads; refused by number
		}
		return m[1], n, true
	}
	if nonCanonicalName.MatchString(name) || !isSessionFileName(name) {
		return "", 0, false
	}
	return strings.TrimSuffix(strings.TrimSuffix(name, ".zstd"), suffixPlain), 0, true
}

type jsonlSource struct {
	root string
	// dir is the directory walked: root with its links resolved.
	dir string
	// prefix is the root the walk started from, with a trailing
	// separator: the index keeps paths without it.
	prefix string
	// state is what the walk found; a focused source's is replaced once
	// by widen.
	state atomic.Pointer[jsonlState]
	// widening serializes widen.
	widening sync.Mutex
}

// jsonlState is what one walk of a JSONL corpus found.
type jsonlState struct {
	// index holds the sessions offered, sorted by id (then path): all of
	// them, or a focus's only.
	index    *packedHeaders
	problems []Problem
	// focus is set when index holds only the sessions of one focus.
	focus *focus
	// chunk is set when index holds only one chunk of the sessions
	// (OpenJSONLChunked).
	chunk *idRange
}

// partial reports whether the index holds only some of the sessions.
func (st *jsonlState) partial() bool { return st.focus != nil || st.chunk != nil }

// find locates session id in the index, which is read whole first when
// it holds only some sessions and not id.
func (s *jsonlSource) find(ctx context.Context, id string) (*jsonlState, int, bool, error) {
	st := s.state.Load()
	if i, ok := st.find(id); ok || !st.partial() {
		return st, i, ok, nil
	}
	if err := s.widen(ctx); err != nil {
		return nil, 0, false, err
	}
	st = s.state.Load()
	i, ok := st.find(id)
	return st, i, ok, nil
}

// find locates session id in the index.
func (st *jsonlState) find(id string) (int, bool) {
	return slices.BinarySearchFunc(st.index.recs, id, func(r packedHeader, id string) int { return strings.Compare(st.index.get(r.id), id) })
}

type jsonlFile struct {
	path       string
	compressed bool
	// gen is the format generation the file name declares.
	gen int64
	// refused is why the session is listed but cannot be read: a format
	// version dsh does not read, a header that disagrees with its file
	// name, both compressions of one generation side by side.
	refused error
}

// OpenJSONL opens a JSONL corpus: a single session file, or a directory
// searched recursively for session files — DSH's layout
// <project>/<encoded id>/session.jsonl[.zstd] as well as loose *.jsonl and
// *.jsonl.zstd files (DSH's snapshot fixtures keep children beside their
// parent as session.1.jsonl …). Sessions are found by content: the file's
// path does not have to match its header as DSH's own store requires, so
// one directory may mix encodings and layouts. Every header is read while
// opening; files that do not yield one are reported by Problems.
// Symbolic links to files are followed, links to directories are not.
func OpenJSONL(ctx context.Context, path string) (Source, error) {
	return OpenJSONLFocused(ctx, path, "")
}

// OpenJSONLFocused is OpenJSONL for a read about one session: every
// header is still read, checked and counted (the problems, the
// duplicate ids, which ids exist), but only session id's and its
// children's are kept whole, so that the memory a listing or an audit of
// one parent holds does not grow with the corpus. A question the focus
// cannot answer exactly — about another session that may exist, or the
// corpus as a whole — makes the source read the corpus again and keep
// everything (NewCorpus's Corpus does so), so answers never depend on the
// focus. An empty id is no focus.
func OpenJSONLFocused(ctx context.Context, path, id string) (Source, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("open JSONL source: %w", err)
	}
	if !info.IsDir() && !info.Mode().IsRegular() {
		// Refused before anything opens it: a FIFO would block.
		return nil, fmt.Errorf("open JSONL source: %w", boundedfile.NotRegular(path, info.Mode()))
	}
	src := &jsonlSource{root: path}
	if !info.IsDir() {
		if _, _, ok := fileGeneration(filepath.Base(path)); !ok {
			return nil, fmt.Errorf("open JSONL source %s: not a .jsonl or .jsonl.zstd session file", path)
		}
		// A single file has nothing to focus on.
		st, err := src.walk(ctx, nil, func(d *discovery) error { return d.read(ctx, []string{path}) })
		if err != nil {
			return nil, err
		}
		src.state.Store(st)
		return src, nil
	}
	if err := src.rootAt(path); err != nil {
		return nil, err
	}
	st, err := src.walkTree(ctx, id)
	if err != nil {
		return nil, err
	}
	if st.focus != nil && st.focus.ambiguous() {
		// Two sessions share an id (or, rarely, a hash): finding which
		// takes their ids whole.
		if st, err = src.walkTree(ctx, ""); err != nil {
			return nil, err
		}
	}
	src.state.Store(st)
	return src, nil
}

// rootAt makes directory path the tree the source walks. A walk does not
// follow a symbolic link, so the root's is resolved.
func (s *jsonlSource) rootAt(path string) error {
	root, err := filepath.EvalSymlinks(path)
	if err != nil {
		return fmt.Errorf("open JSONL source: %w", err)
	}
	s.dir, s.prefix = root, root
	if !strings.HasSuffix(root, string(filepath.Separator)) {
		s.prefix += string(filepath.Separator)
	}
	return nil
}

// walkTree walks the source's directory, focused on session id unless
// it is "".
func (s *jsonlSource) walkTree(ctx context.Context, id string) (*jsonlState, error) {
	st, err := s.walk(ctx, newFocusOn(id), func(d *discovery) error { return d.walkDir(ctx, s.dir) })
	if err != nil {
		return nil, fmt.Errorf("open JSONL source %s: %w", s.root, err)
	}
	return st, nil
}

// walk runs find over a new discovery, which keeps what sel selects
// (everything when nil), and completes what it found.
func (s *jsonlSource) walk(ctx context.Context, sel selector, find func(*discovery) error) (*jsonlState, error) {
	d := &discovery{src: s, st: &jsonlState{}, index: newPackedHeaders(), sel: sel}
	if sel != nil {
		sel.begin(d)
	}
	if err := find(d); err != nil {
		return nil, err
	}
	if sel != nil {
		sel.end(d)
	}
	d.st.finish(d.index, s.prefix)
	return d.st, nil
}

// selector decides which of the sessions a walk finds its index keeps
// whole (a focus, a chunk).
type selector interface {
	// begin sets the walk's state up.
	begin(d *discovery)
	// keep counts offered session h, read from the file at path, and
	// reports whether it is kept.
	keep(h session.Header, path string) bool
	// added runs after each session kept.
	added(d *discovery)
	// end runs when the walk has found everything.
	end(d *discovery)
}

// dirSkipper is a selector that knows, from a directory's path alone,
// that nothing in it is kept.
type dirSkipper interface {
	skipDir(dir string) bool
}

// widen replaces a focused source's index by the whole corpus's, read
// again; a source that is not focused is left as it is.
func (s *jsonlSource) widen(ctx context.Context) error {
	s.widening.Lock()
	defer s.widening.Unlock()
	if !s.state.Load().partial() {
		return nil
	}
	st, err := s.walkTree(ctx, "")
	if err != nil {
		return err
	}
	s.state.Store(st)
	return nil
}

// discovery reads the headers of the session files a walk finds, one
// directory at a time.
type discovery struct {
	src   *jsonlSource
	st    *jsonlState
	index *packedHeaders
	sel   selector
	// quiet drops the problems the walk finds (a chunk's later walks
	// find the first one's again).
	quiet bool
	// found counts the session files found: offered or a problem.
	found int
}

// dirBatch is how many entries of a directory a walk reads at a time: a
// project directory of DSH's layout holds one per session, which read at
// once would all be held at once.
const dirBatch = 512

// walkDir reads the session files of dir and its subdirectories. A
// directory's entries are read in batches, each subdirectory walked as it
// is met, and the session files directly in dir read once its listing is
// done (the generations of one role are chosen among all of them).
func (d *discovery) walkDir(ctx context.Context, dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		d.problem(Problem{Path: dir, Err: err})
		return nil
	}
	defer f.Close()
	var files []string
	for {
		entries, err := f.ReadDir(dirBatch)
		for _, de := range entries {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := d.entry(ctx, filepath.Join(dir, de.Name()), de, &files); err != nil {
				return err
			}
		}
		if errors.Is(err, io.EOF) || err == nil && len(entries) == 0 {
			break
		}
		if err != nil {
			d.problem(Problem{Path: dir, Err: err})
			break
		}
	}
	return d.read(ctx, files)
}

// entry takes directory entry de at path p: a subdirectory is walked, a
// session file is added to files.
func (d *discovery) entry(ctx context.Context, p string, de fs.DirEntry, files *[]string) error {
	_, _, session := fileGeneration(de.Name())
	if de.IsDir() {
		if session {
			d.problem(Problem{Path: p, Err: corruptAt(p, "", "cannot read session header", boundedfile.NotRegular("", de.Type()))})
		}
		if s, ok := d.sel.(dirSkipper); ok && s.skipDir(p) {
			return nil
		}
		return d.walkDir(ctx, p)
	}
	if !session {
		return nil
	}
	if de.Type().IsRegular() {
		*files = append(*files, p)
		return nil
	}
	// A session file's name on anything else — a FIFO, a device, a
	// directory, a link to one — is a session DSH cannot read (its
	// lookup treats only a missing file as absent): reported, never
	// opened (a FIFO would block), never skipped in silence.
	mode := de.Type()
	if mode&fs.ModeSymlink != 0 {
		target, err := os.Stat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil // a dangling link: absent, as for DSH
		case err != nil:
			d.problem(Problem{Path: p, Err: corruptAt(p, "", "cannot read session header", err)})
			return nil
		case target.Mode().IsRegular():
			*files = append(*files, p)
			return nil
		}
		mode = target.Mode()
	}
	d.problem(Problem{Path: p, Err: corruptAt(p, "", "cannot read session header", boundedfile.NotRegular("", mode))})
	return nil
}

func (d *discovery) problem(p Problem) {
	d.found++
	if !d.quiet {
		d.st.problems = append(d.st.problems, p)
	}
}

func isSessionFileName(name string) bool {
	return strings.HasSuffix(name, suffixPlain) || strings.HasSuffix(name, suffixZstd)
}

// selectGenerations keeps, per directory and role stem, the files of the
// highest format generation, as DSH picks the log of a session directory
// that holds several generations (older ones stay beside it after a
// migration). It never falls back to an older generation. Files of one
// role are grouped by sorting, in walk order (by name) within a role.
func selectGenerations(paths []string) [][]jsonlFile {
	type candidate struct {
		dir, stem string
		file      jsonlFile
	}
	all := make([]candidate, len(paths))
	for i, p := range paths {
		stem, gen, _ := fileGeneration(filepath.Base(p))
		all[i] = candidate{filepath.Dir(p), stem, jsonlFile{path: p, compressed: strings.HasSuffix(p, suffixZstd), gen: gen}}
	}
	slices.SortFunc(all, func(a, b candidate) int {
		if c := strings.Compare(a.dir, b.dir); c != 0 {
			return c
		}
		if c := strings.Compare(a.stem, b.stem); c != 0 {
			return c
		}
		return strings.Compare(a.file.path, b.file.path)
	})
	var out [][]jsonlFile
	for i, c := range all {
		f := c.file
		switch last := len(out) - 1; {
		case i == 0 || c.dir != all[i-1].dir || c.stem != all[i-1].stem:
			out = append(out, []jsonlFile{f})
		case f.gen > out[last][0].gen:
			out[last] = []jsonlFile{f}
		case f.gen == out[last][0].gen:
			out[last] = append(out[last], f)
		}
	}
	return out
}

// read reads the header of each selected file of paths (all the session
// files of their directories) into the index.
func (d *discovery) read(ctx context.Context, paths []string) error {
	for _, group := range selectGenerations(paths) {
		if err := ctx.Err(); err != nil {
			return err
		}
		file := group[0]
		h, listable, err := readHeaderOnly(file.path, file.compressed)
		if len(group) > 1 {
			names := make([]string, len(group))
			for i, f := range group {
				names[i] = filepath.Base(f.path)
			}
			sort.Strings(names)
			file.refused = corruptAt(file.path, h.ID, fmt.Sprintf("both compressions of format generation %d in one directory (%s): DSH refuses to pick one", file.gen, strings.Join(names, ", ")), nil)
		}
		var refusal *UnsupportedVersionError
		switch {
		case errors.As(err, &refusal) && listable:
			refusal.Path = file.path
			if file.refused == nil {
				file.refused = refusal
			}
		case errors.As(err, &refusal):
			refusal.Path = file.path
			d.problem(Problem{Path: file.path, ID: refusal.Session, Err: refusal})
			continue
		case err != nil && !listable:
			d.problem(Problem{Path: file.path, Err: corruptAt(file.path, "", "cannot read session header", err)})
			continue
		}
		if file.refused == nil {
			file.refused = generationMismatch(file, h)
		}
		if file.refused == nil {
			file.refused = pathIdentityMismatch(file.path, h.ID)
		}
		restoreAbsent(file.path, &h)
		d.found++
		if d.sel != nil && !d.sel.keep(h, file.path) {
			continue
		}
		if err := d.index.add(h, file, d.src.prefix); err != nil {
			return fmt.Errorf("open JSONL source %s: %w", d.src.root, err)
		}
		if d.sel != nil {
			d.sel.added(d)
		}
	}
	return nil
}

// finish sorts the index by id and reports the ids found in several
// files, none of which is offered.
func (s *jsonlState) finish(index *packedHeaders, prefix string) {
	index.freeze()
	path := func(r *packedHeader) string { return index.path(r, prefix) }
	// Sorted by id (then path), an id found in several files is a run of
	// adjacent records.
	slices.SortFunc(index.recs, func(a, b packedHeader) int {
		if c := strings.Compare(index.get(a.id), index.get(b.id)); c != 0 {
			return c
		}
		return strings.Compare(path(&a), path(&b))
	})
	found := index.recs
	kept := found[:0]
	for i := 0; i < len(found); {
		j := i + 1
		id := index.get(found[i].id)
		for j < len(found) && index.get(found[j].id) == id {
			j++
		}
		if j-i == 1 {
			kept = append(kept, found[i])
			i = j
			continue
		}
		var paths []string
		for k := range found[i:j] {
			paths = append(paths, path(&found[i+k]))
		}
		for _, p := range paths {
			s.problems = append(s.problems, Problem{Path: p, ID: id, Err: corruptAt(p, id,
				fmt.Sprintf("session id appears in %d files: %s", len(paths), strings.Join(paths, ", ")), nil)})
		}
		i = j
	}
	index.recs = slices.Clip(kept)
	s.index = index
	sort.SliceStable(s.problems, func(i, j int) bool { return s.problems[i].Path < s.problems[j].Path })
}

// pathIdentityMismatch refuses a log in DSH's layout
// (<project>/<encoded id>/session[.vN].jsonl[.zstd]) whose header names
// another session than its directory does: DSH verifies a session's path
// identity and refuses such a log, so dsh lists it under its header's id
// and reads it as refused (an unavailable row, kept as found by import).
// Files outside that layout are found by content and not checked; an
// empty id is refused on its own elsewhere.
func pathIdentityMismatch(path, id string) error {
	stem, _, _ := fileGeneration(filepath.Base(path))
	dir := filepath.Dir(path)
	project := filepath.Base(filepath.Dir(dir))
	if stem != "session" || id == "" || !isProjectDir(project) {
		return nil
	}
	want, err := EncodeSegment(id)
	if err != nil || want == filepath.Base(dir) {
		return nil
	}
	return corruptAt(path, id, fmt.Sprintf("header id %q does not match its session directory %q (it would be %q): DSH verifies a session's path identity and refuses the log", id, filepath.Base(dir), want), nil)
}

// generationMismatch refuses a file whose name declares a generation dsh
// does not read, or whose header version is not the one its name
// declares (DSH requires them to agree).
func generationMismatch(f jsonlFile, h session.Header) error {
	switch {
	case f.gen != 0 && !session.IsLaterFormat(f.gen):
		return &UnsupportedVersionError{Path: f.path, Session: h.ID, Version: strconv.FormatInt(f.gen, 10), Detail: "file name"}
	case h.Version != f.gen:
		return &UnsupportedVersionError{Path: f.path, Session: h.ID, Version: strconv.FormatInt(h.Version, 10),
			Detail: fmt.Sprintf("header version %d does not match the file name's generation %d", h.Version, f.gen)}
	}
	return nil
}

func (s *jsonlSource) Headers(ctx context.Context) ([]session.Header, error) {
	n, at, err := s.HeaderIndex(ctx)
	if err != nil {
		return nil, err
	}
	headers := make([]session.Header, n)
	for i := range headers {
		headers[i] = at(i)
	}
	return headers, nil
}

// HeaderIndex lends the headers Headers returns by position, without
// copying them; a focused source reads the whole corpus first.
func (s *jsonlSource) HeaderIndex(ctx context.Context) (int, func(int) session.Header, error) {
	if err := s.widen(ctx); err != nil {
		return 0, nil, err
	}
	v := s.view()
	return v.n, v.at, ctx.Err()
}

// view is the source's index as it stands, focused or not.
func (s *jsonlSource) view() sourceView {
	st := s.state.Load()
	return sourceView{n: len(st.index.recs), at: st.index.header, focus: st.focus, partial: st.partial()}
}

func (s *jsonlSource) Read(ctx context.Context, id string) (*Session, error) {
	return refuseDamage(s.ReadAsFound(ctx, id))
}

func (s *jsonlSource) ReadAsFound(ctx context.Context, id string) (*Session, error) {
	st, i, ok, err := s.find(ctx, id)
	if err != nil {
		return nil, err
	}
	if !ok {
		for _, p := range st.problems {
			if p.ID == id {
				return nil, p.Err
			}
		}
		return nil, fmt.Errorf("%s: session %q: %w", s.root, id, ErrNotFound)
	}
	file := st.index.file(i, s.prefix)
	var ambiguous *CorruptError
	if errors.As(file.refused, &ambiguous) {
		return readRefused(ctx, file, id, ambiguous)
	}
	if file.refused != nil {
		return nil, file.refused
	}
	sess, err := readJSONLFileAsFound(ctx, file.path, file.compressed)
	if err != nil {
		return nil, fileError(ctx, file.path, id, err)
	}
	if err := generationMismatch(file, sess.Header); err != nil {
		return nil, err
	}
	if sess.Header.ID != id {
		return nil, corruptAt(file.path, id, fmt.Sprintf("header id changed to %q since the corpus was opened", sess.Header.ID), nil)
	}
	restoreAbsent(file.path, &sess.Header)
	sess.Format = file.format()
	return sess, nil
}

// fileError marks a failure to read an enumerated session's file as
// that session's (*FileError); corruption, refusals and cancellation
// are returned as they are.
func fileError(ctx context.Context, path, id string, err error) error {
	var refusal *UnsupportedVersionError
	if ctx.Err() != nil || errors.Is(err, ErrCorrupt) || errors.As(err, &refusal) {
		return err
	}
	return &FileError{Path: path, Session: id, Err: err}
}

func (f jsonlFile) format() string {
	compression := CompressionNone
	if f.compressed {
		compression = CompressionZstd
	}
	return FormatName(f.gen, compression)
}

func (s *jsonlSource) formatOf(ctx context.Context, id string) (string, bool) {
	st, i, ok, err := s.find(ctx, id)
	if err != nil || !ok {
		return "", false
	}
	return st.index.file(i, s.prefix).format(), true
}

// readRefused reads a session DSH lists but refuses to read as a whole (both
// compressions of one generation beside each other): its header and, as
// damage, the refusal with the file's log after the header as stored.
func readRefused(ctx context.Context, file jsonlFile, id string, refusal *CorruptError) (*Session, error) {
	data, err := readStable(ctx, file.path)
	if err != nil {
		return nil, fileError(ctx, file.path, id, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	h, _, err := readHeaderOnly(file.path, file.compressed)
	if err != nil {
		return nil, refusal
	}
	enc, rest := RawJSONLText, -1
	if file.compressed {
		enc = RawZstdFrames
		if scan, _ := scanFrames(data); len(scan.frames) > 0 {
			rest = scan.frames[0].end
		}
	} else if nl := bytes.IndexByte(data, '\n'); nl >= 0 {
		rest = nl + 1
	}
	if rest < 0 || h.ID != id {
		return nil, refusal
	}
	restoreAbsent(file.path, &h)
	return &Session{Header: h, Location: file.path, Damage: &Damage{Err: refusal, Raw: data[rest:], Encoding: enc}}, nil
}

func (s *jsonlSource) Problems() []Problem { return slices.Clone(s.state.Load().problems) }

func (s *jsonlSource) Close() error { return nil }
