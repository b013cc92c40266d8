package dshformat

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/klauspost/compress/zstd"

	"github.com/dsh-project/dsh/internal/session"
)

// Compression selects the JSONL encoding WriteJSONL produces.
type Compression int

const (
	// CompressionZstd is DSH's default: session.jsonl.zstd holding one
	// checksummed zstd frame with the header line and one with the events.
	CompressionZstd Compression = iota
	// CompressionNone writes plain session.jsonl.
	CompressionNone
)

// WriteOptions configure WriteJSONL.
type WriteOptions struct {
	Compression Compression
	// Unpacked writes every event on its own line, as DSH does with
	// packChunks: false. By default runs of at least 3 chunk deltas are
	// packed into rows exactly as DSH's JSONL writer packs one batch.
	Unpacked bool
}

// WriteJSONL writes one session as DSH's JSONL persistence would have
// written it under root dir: dir/<ProjectKey(cwd) or _no-cwd>/<EncodeSegment(id)>/<LogFileName>
// (session.jsonl[.zstd] for format 0, session.vN.jsonl[.zstd] for a later
// format, whose header carries isSeeded and whose events are never packed),
// directories 0700, file 0600, published atomically (a temporary file
// linked into place, so an existing session file is never overwritten:
// that fails with an error matching fs.ErrExist). The events are written as
// one batch and must be contiguous from seq 0. It returns the file's path.
func WriteJSONL(ctx context.Context, dir string, h session.Header, events []session.Event, opts WriteOptions) (string, error) {
	if !session.IsReadableFormat(h.Version) {
		return "", fmt.Errorf("write session %q: format version %d: dsh writes only versions %d and %d–%d", h.ID, h.Version, session.FormatVersion, session.MinLaterFormat, session.MaxLaterFormat)
	}
	later := session.IsLaterFormat(h.Version)
	if h.CreatedAt < 0 || h.CreatedAt > maxSafeInteger {
		return "", fmt.Errorf("write session %q: createdAt %d is not a non-negative safe integer", h.ID, h.CreatedAt)
	}
	segment, err := EncodeSegment(h.ID)
	if err != nil {
		return "", fmt.Errorf("write session %q: %w", h.ID, err)
	}
	project, err := projectDir(h.Cwd)
	if err != nil {
		return "", fmt.Errorf("write session %q: %w", h.ID, err)
	}
	// Later formats have no packed rows: one line is one event.
	body, err := encodeBatch(events, !opts.Unpacked && !later)
	if err != nil {
		return "", fmt.Errorf("write session %q: %w", h.ID, err)
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	header := append(h.MarshalJSONL(), '\n')
	name := LogFileName(h.Version, opts.Compression)
	content := append(header, body...)
	if opts.Compression == CompressionZstd {
		enc, err := frameEncoder()
		if err != nil {
			return "", err
		}
		content = enc.EncodeAll(header, nil)
		if len(body) > 0 {
			content = enc.EncodeAll(body, content)
		}
	}
	final := filepath.Join(dir, project, segment, name)
	if err := publish(final, content); err != nil {
		return "", fmt.Errorf("write session %q: %w", h.ID, err)
	}
	return final, nil
}

// LogFileName is the name DSH gives the log of format version v:
// session.jsonl for format 0, session.vN.jsonl for a later one, with .zstd
// appended when compressed.
func LogFileName(v int64, c Compression) string {
	name := "session"
	if v != session.FormatVersion {
		name += ".v" + strconv.FormatInt(v, 10)
	}
	if c == CompressionZstd {
		return name + suffixZstd
	}
	return name + suffixPlain
}

// encodeBatch encodes events as the lines of one append batch.
func encodeBatch(events []session.Event, pack bool) ([]byte, error) {
	for i, e := range events {
		if e.Seq != int64(i) {
			return nil, fmt.Errorf("event %d has seq %d: events must be contiguous from seq 0", i, e.Seq)
		}
		if _, isTag := rowKindOf(e.Type); isTag {
			return nil, fmt.Errorf("event seq %d: type %q is a packed-row tag, which JSONL cannot store as an event", e.Seq, e.Type)
		}
	}
	var out []byte
	scalar := func(e session.Event) error {
		line, err := e.MarshalJSON()
		if err != nil {
			return err
		}
		out = append(append(out, line...), '\n')
		return nil
	}
	if !pack {
		for _, e := range events {
			if err := scalar(e); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	err := packRuns(events, func(run []chunkDelta) error {
		out = append(appendJSONLRow(out, run), '\n')
		return nil
	}, scalar)
	return out, err
}

// frameEncoder writes standard frames with content checksums, at the
// level closest to zstd's 3 (DSH's default). The bytes differ from
// libzstd's; any conforming decoder reads them.
var frameEncoder = sync.OnceValues(func() (*zstd.Encoder, error) {
	return zstd.NewWriter(nil,
		zstd.WithEncoderLevel(zstd.EncoderLevelFromZstd(3)),
		zstd.WithEncoderCRC(true),
		zstd.WithEncoderConcurrency(1))
})

// publish writes content to final atomically and durably, the way DSH
// materializes a session: missing directories are created 0700 (each
// parent synced), the content goes to an exclusive 0600 temporary file
// that is synced and then hard-linked to final, which fails instead of
// replacing an existing file.
func publish(final string, content []byte) (err error) {
	dir := filepath.Dir(final)
	if err := mkdirSynced(dir); err != nil {
		return err
	}
	if _, err := os.Lstat(final); err == nil {
		return fmt.Errorf("refusing to materialize %s: %w", final, fs.ErrExist)
	}
	var suffix [6]byte
	if _, err := rand.Read(suffix[:]); err != nil {
		return err
	}
	tmp := final + "." + hex.EncodeToString(suffix[:]) + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	defer func() {
		if removeErr := os.Remove(tmp); removeErr != nil && !errors.Is(removeErr, fs.ErrNotExist) && err == nil {
			err = removeErr
		}
	}()
	if _, err := f.Write(content); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Link(tmp, final); err != nil {
		return fmt.Errorf("publish %s: %w", final, err)
	}
	return syncDir(dir)
}

// mkdirSynced creates dir and its missing parents with mode 0700, syncing
// each new directory's parent so the entry is durable.
func mkdirSynced(dir string) error {
	info, err := os.Stat(dir)
	if err == nil {
		if !info.IsDir() {
			return fmt.Errorf("%s is not a directory", dir)
		}
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := mkdirSynced(parent); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return syncDir(parent)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
