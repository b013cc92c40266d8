package dshformat

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/klauspost/compress/zstd"

	"github.com/dsh-project/dsh/internal/jsjson"
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
	// Trailer is written after the events as found: stored data of a log
	// damaged inside its committed region (Damage.Raw). RawJSONLText is
	// appended as text (with CompressionZstd, as one more frame);
	// RawZstdFrames only with CompressionZstd, byte for byte. Empty: none.
	Trailer         []byte
	TrailerEncoding RawEncoding
}

// HeaderSidecarName is the file beside an exported session log that records
// header fields DSH's JSONL format forces but the session does not have:
// DSH's writer always writes delegationDepth and its reader requires it, so
// a session without one is written with 0 and listed here, and the JSONL
// reader restores it as absent. DSH ignores the file.
const HeaderSidecarName = "dsh-header.json"

// headerSidecar is the sidecar's content.
type headerSidecar struct {
	ID     string   `json:"id"`
	Absent []string `json:"absent"`
}

// maxSegmentBytes is the longest directory name the common file systems
// accept (NAME_MAX).
const maxSegmentBytes = 255

// WriteJSONL writes one session as DSH's JSONL persistence would have
// written it under root dir: dir/<ProjectKey(cwd) or _no-cwd>/<EncodeSegment(id)>/<LogFileName>
// (session.jsonl[.zstd] for format 0, session.vN.jsonl[.zstd] for a later
// format, whose header carries isSeeded and whose events are never packed),
// directories 0700, file 0600, published atomically (a temporary file
// linked into place, so an existing session file is never overwritten:
// that fails with an error matching fs.ErrExist). The events are written as
// one batch and must be contiguous from seq 0. It returns the file's path.
// A write that fails (a full disk, say) leaves nothing it created: not the
// sidecar, not an empty session or project directory.
func WriteJSONL(ctx context.Context, dir string, h session.Header, events []session.Event, opts WriteOptions) (path string, err error) {
	if !session.IsReadableFormat(h.Version) {
		return "", fmt.Errorf("write session %q: format version %d: dsh writes only versions %d and %d–%d", h.ID, h.Version, session.FormatVersion, session.MinLaterFormat, session.MaxLaterFormat)
	}
	later := session.IsLaterFormat(h.Version)
	if h.CreatedAt < 0 || h.CreatedAt > jsjson.MaxSafeInteger {
		return "", fmt.Errorf("write session %q: createdAt %d is not a non-negative safe integer", h.ID, h.CreatedAt)
	}
	segment, err := EncodeSegment(h.ID)
	if err != nil {
		return "", fmt.Errorf("write session %q: %w", h.ID, err)
	}
	if len(segment) > maxSegmentBytes {
		return "", fmt.Errorf("write session %q: the id encodes to a directory name of %d bytes, more than the %d a file system accepts", h.ID, len(segment), maxSegmentBytes)
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
	var content []byte
	switch {
	case opts.Compression == CompressionNone && len(opts.Trailer) > 0 && opts.TrailerEncoding != RawJSONLText:
		return "", fmt.Errorf("write session %q: its damaged data is stored as %s and can only be written back with zstd compression", h.ID, opts.TrailerEncoding)
	case opts.Compression == CompressionNone:
		content = append(append(header, body...), opts.Trailer...)
	default:
		enc, err := frameEncoder()
		if err != nil {
			return "", err
		}
		content = enc.EncodeAll(header, nil)
		if len(body) > 0 {
			content = enc.EncodeAll(body, content)
		}
		switch {
		case len(opts.Trailer) == 0:
		case opts.TrailerEncoding == RawJSONLText:
			content = enc.EncodeAll(opts.Trailer, content)
		case opts.TrailerEncoding == RawZstdFrames:
			content = append(content, opts.Trailer...)
		default:
			return "", fmt.Errorf("write session %q: its damaged data is stored as %s, which has no JSONL form", h.ID, opts.TrailerEncoding)
		}
	}
	sessionDir := filepath.Join(dir, project, segment)
	var created []string // directories this call made, parents first
	sidecarWritten := ""
	defer func() {
		if err == nil {
			return
		}
		if sidecarWritten != "" {
			os.Remove(sidecarWritten)
		}
		// Only empty directories go: one another writer filled
		// meanwhile stays.
		for i := len(created) - 1; i >= 0; i-- {
			os.Remove(created[i])
		}
	}()
	created, err = mkdirSynced(sessionDir)
	if err != nil {
		return "", fmt.Errorf("write session %q: %w", h.ID, err)
	}
	if err := checkInside(dir, sessionDir); err != nil {
		return "", fmt.Errorf("write session %q: %w", h.ID, err)
	}
	if existing := existingLogs(sessionDir); len(existing) > 0 {
		return "", fmt.Errorf("write session %q: refusing to write beside %s: %w", h.ID, strings.Join(existing, ", "), fs.ErrExist)
	}
	if h.DelegationDepth == nil {
		side, err := json.Marshal(headerSidecar{ID: h.ID, Absent: []string{"delegationDepth"}})
		if err != nil {
			return "", err
		}
		side = append(side, '\n')
		sidePath := filepath.Join(sessionDir, HeaderSidecarName)
		// An interrupted export may have left the same sidecar behind.
		if found, err := os.ReadFile(sidePath); err != nil || string(found) != string(side) {
			if err := publish(sidePath, side); err != nil {
				return "", fmt.Errorf("write session %q: %w", h.ID, err)
			}
			sidecarWritten = sidePath
		}
	}
	final := filepath.Join(sessionDir, name)
	if err := publish(final, content); err != nil {
		return "", fmt.Errorf("write session %q: %w", h.ID, err)
	}
	return final, nil
}

// restoreAbsent undoes what WriteJSONL's sidecar records for the session
// log at path: a delegationDepth written as 0 for a session without one is
// read as absent. Anything unexpected in the sidecar leaves h as it is.
func restoreAbsent(path string, h *session.Header) {
	if h.DelegationDepth == nil || *h.DelegationDepth != 0 {
		return
	}
	sidePath := filepath.Join(filepath.Dir(path), HeaderSidecarName)
	info, err := os.Lstat(sidePath)
	if err != nil || !info.Mode().IsRegular() || info.Size() > 64<<10 {
		return
	}
	data, err := os.ReadFile(sidePath)
	if err != nil {
		return
	}
	var side headerSidecar
	if json.Unmarshal(data, &side) != nil || side.ID != h.ID {
		return
	}
	for _, f := range side.Absent {
		if f == "delegationDepth" {
			h.DelegationDepth = nil
		}
	}
}

// ExistingLog returns a session log that WriteJSONL would refuse to write
// session id of header h beside under dir (either compression, any format
// version), "" when there is none.
func ExistingLog(dir string, h session.Header) (string, error) {
	segment, err := EncodeSegment(h.ID)
	if err != nil {
		return "", err
	}
	project, err := projectDir(h.Cwd)
	if err != nil {
		return "", err
	}
	if existing := existingLogs(filepath.Join(dir, project, segment)); len(existing) > 0 {
		return existing[0], nil
	}
	return "", nil
}

// existingLogs lists the session logs in a session directory: a second
// log for one id, in either compression or format, makes the corpus
// unreadable (the id appears in two files) for DSH and dsh alike.
func existingLogs(sessionDir string) []string {
	entries, err := os.ReadDir(sessionDir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if isSessionFileName(e.Name()) {
			out = append(out, filepath.Join(sessionDir, e.Name()))
		}
	}
	return out
}

// checkInside refuses a session directory that resolves outside root (a
// symbolic link planted in the target tree): whatever the id or cwd, an
// export writes only under its root.
func checkInside(root, sessionDir string) error {
	r, err := filepath.EvalSymlinks(root)
	if err != nil {
		return err
	}
	d, err := filepath.EvalSymlinks(sessionDir)
	if err != nil {
		return err
	}
	if rel, err := filepath.Rel(r, d); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return fmt.Errorf("session directory %s resolves to %s, outside %s", sessionDir, d, r)
	}
	return nil
}

// FormatDSHSQLite names a session read from DSH's schema-17 SQLite store.
const FormatDSHSQLite = "dsh-sqlite-17"

// FormatName names a JSONL log's format as dsh records it: jsonl-vN for
// session format N, -zstd appended when compressed.
func FormatName(version int64, c Compression) string {
	name := "jsonl-v" + strconv.FormatInt(version, 10)
	if c == CompressionZstd {
		name += "-zstd"
	}
	return name
}

// ParseFormatName reads a FormatName; ok is false for anything else (a
// session from an SQLite store, or written by dsh).
func ParseFormatName(name string) (version int64, c Compression, ok bool) {
	rest, isJSONL := strings.CutPrefix(name, "jsonl-v")
	if !isJSONL {
		return 0, 0, false
	}
	c = CompressionNone
	if r, zstd := strings.CutSuffix(rest, "-zstd"); zstd {
		rest, c = r, CompressionZstd
	}
	v, err := strconv.ParseInt(rest, 10, 64)
	if err != nil || strconv.FormatInt(v, 10) != rest {
		return 0, 0, false
	}
	return v, c, true
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
	if _, err := mkdirSynced(dir); err != nil {
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
// each new directory's parent so the entry is durable. It returns the
// directories it created, parents first.
func mkdirSynced(dir string) ([]string, error) {
	info, err := os.Stat(dir)
	if err == nil {
		if !info.IsDir() {
			return nil, fmt.Errorf("%s is not a directory", dir)
		}
		return nil, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	var created []string
	parent := filepath.Dir(dir)
	if parent != dir {
		if created, err = mkdirSynced(parent); err != nil {
			return created, err
		}
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return created, syncDir(parent)
		}
		return created, err
	}
	return append(created, dir), syncDir(parent)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
