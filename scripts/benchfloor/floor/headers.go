package floor

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/klauspost/compress/zstd"
)

// Headers is the floor of a listing read in place from a JSONL tree: it
// reads the header line of every session file under dir (the first line,
// or what the first Zstandard frame decodes to) and nothing else of it,
// keeps only parent's children, and prints their ids in listing order
// (createdAt, then id), one per line. Its memory is the children's and the
// walk's (filepath.WalkDir reads a directory whole): the other headers are
// decoded and dropped. docs/benchmarks.md ("A packed header index") has
// dsh's listing against it at 10,000 to 100,000 sessions.
func Headers(ctx context.Context, dir, parent string, w io.Writer) error {
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	if err != nil {
		return err
	}
	defer dec.Close()
	type child struct {
		id        string
		createdAt int64
	}
	var kids []child
	buf := bufio.NewReaderSize(nil, 8<<10)
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		zst := strings.HasSuffix(path, ".jsonl.zstd")
		if !zst && !strings.HasSuffix(path, ".jsonl") {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		var r io.Reader = f
		if zst {
			if err := dec.Reset(f); err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			r = dec
		}
		buf.Reset(r)
		line, err := buf.ReadSlice('\n')
		if err != nil {
			return fmt.Errorf("%s: header line: %w", path, err)
		}
		var h header
		if err := json.Unmarshal(line, &h); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if h.ParentSession != nil && *h.ParentSession == parent {
			kids = append(kids, child{h.ID, h.CreatedAt})
		}
		return nil
	})
	if err != nil {
		return err
	}
	slices.SortFunc(kids, func(a, b child) int {
		return cmp.Or(cmp.Compare(a.createdAt, b.createdAt), strings.Compare(a.id, b.id))
	})
	for _, k := range kids {
		if _, err := fmt.Fprintln(w, k.id); err != nil {
			return err
		}
	}
	return nil
}
