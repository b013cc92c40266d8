package dshformat

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/dsh-project/dsh/internal/session"
)

const (
	suffixPlain = ".jsonl"
	suffixZstd  = ".jsonl.zstd"
)

// laterFormatName matches the transcripts of DSH's later session formats.
var laterFormatName = regexp.MustCompile(`^session\.v([0-9]+)\.jsonl(\.zstd)?$`)

type jsonlSource struct {
	root     string
	files    map[string]jsonlFile // by session id
	headers  []session.Header
	problems []Problem
}

type jsonlFile struct {
	path       string
	compressed bool
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
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("open JSONL source: %w", err)
	}
	src := &jsonlSource{root: path, files: make(map[string]jsonlFile)}
	if !info.IsDir() {
		if !isSessionFileName(filepath.Base(path)) {
			return nil, fmt.Errorf("open JSONL source %s: not a .jsonl or .jsonl.zstd file", path)
		}
		if err := src.discover(ctx, []string{path}); err != nil {
			return nil, err
		}
		return src, nil
	}
	// WalkDir does not follow a symbolic link even as its root.
	root, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil, fmt.Errorf("open JSONL source: %w", err)
	}
	var candidates []string
	walkErr := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		if err != nil {
			src.problems = append(src.problems, Problem{Path: p, Err: err})
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() || !isSessionFileName(d.Name()) {
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			if target, err := os.Stat(p); err != nil || !target.Mode().IsRegular() {
				return nil
			}
		} else if !d.Type().IsRegular() {
			return nil
		}
		candidates = append(candidates, p)
		return nil
	})
	if walkErr != nil {
		return nil, fmt.Errorf("open JSONL source %s: %w", path, walkErr)
	}
	if err := src.discover(ctx, candidates); err != nil {
		return nil, err
	}
	return src, nil
}

func isSessionFileName(name string) bool {
	return strings.HasSuffix(name, suffixPlain) || strings.HasSuffix(name, suffixZstd)
}

// discover reads the header of every candidate file and indexes the
// sessions by id.
func (s *jsonlSource) discover(ctx context.Context, paths []string) error {
	found := make(map[string][]jsonlFile)
	byID := make(map[string]session.Header)
	for _, p := range paths {
		if err := ctx.Err(); err != nil {
			return err
		}
		file := jsonlFile{path: p, compressed: strings.HasSuffix(p, suffixZstd)}
		h, listable, err := readHeaderOnly(p, file.compressed)
		if m := laterFormatName.FindStringSubmatch(filepath.Base(p)); m != nil {
			refusal := &UnsupportedVersionError{Path: p, Version: m[1], Detail: "file name"}
			var headerRefusal *UnsupportedVersionError
			switch {
			case err == nil || listable:
				refusal.Session = h.ID
			case errors.As(err, &headerRefusal):
				refusal.Session = headerRefusal.Session
			}
			s.problems = append(s.problems, Problem{Path: p, ID: refusal.Session, Err: refusal})
			continue
		}
		var refusal *UnsupportedVersionError
		switch {
		case errors.As(err, &refusal) && !listable:
			refusal.Path = p
			s.problems = append(s.problems, Problem{Path: p, ID: refusal.Session, Err: refusal})
			continue
		case err != nil && !listable:
			s.problems = append(s.problems, Problem{Path: p, Err: corruptAt(p, "", "cannot read session header", err)})
			continue
		}
		found[h.ID] = append(found[h.ID], file)
		byID[h.ID] = h
	}
	for id, files := range found {
		if len(files) > 1 {
			var paths []string
			for _, f := range files {
				paths = append(paths, f.path)
			}
			sort.Strings(paths)
			for _, p := range paths {
				s.problems = append(s.problems, Problem{Path: p, ID: id, Err: corruptAt(p, id,
					fmt.Sprintf("session id appears in %d files: %s", len(paths), strings.Join(paths, ", ")), nil)})
			}
			continue
		}
		s.files[id] = files[0]
		s.headers = append(s.headers, byID[id])
	}
	sort.Slice(s.headers, func(i, j int) bool { return s.headers[i].ID < s.headers[j].ID })
	sort.SliceStable(s.problems, func(i, j int) bool { return s.problems[i].Path < s.problems[j].Path })
	return nil
}

func (s *jsonlSource) Headers(ctx context.Context) ([]session.Header, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return append([]session.Header(nil), s.headers...), nil
}

func (s *jsonlSource) Read(ctx context.Context, id string) (*Session, error) {
	file, ok := s.files[id]
	if !ok {
		for _, p := range s.problems {
			if p.ID == id {
				return nil, p.Err
			}
		}
		return nil, fmt.Errorf("%s: session %q: %w", s.root, id, ErrNotFound)
	}
	sess, err := readJSONLFile(ctx, file.path, file.compressed)
	if err != nil {
		return nil, err
	}
	if sess.Header.ID != id {
		return nil, corruptAt(file.path, id, fmt.Sprintf("header id changed to %q since the corpus was opened", sess.Header.ID), nil)
	}
	return sess, nil
}

func (s *jsonlSource) Problems() []Problem { return append([]Problem(nil), s.problems...) }

func (s *jsonlSource) Close() error { return nil }
