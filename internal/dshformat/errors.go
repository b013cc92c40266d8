package dshformat

import (
	"errors"
	"fmt"
	"strings"
)

// ErrCorrupt is matched (errors.Is) by every error that reports damaged or
// malformed stored data: a *CorruptError, a malformed projection cache file.
var ErrCorrupt = errors.New("corrupt DSH session data")

// ErrNotFound is returned (wrapped) by Source.Read for an id the source does
// not hold.
var ErrNotFound = errors.New("session not found")

// CorruptError reports stored data that cannot be read as DSH would read it.
// The location fields say where: a JSONL file line and byte offset, a zstd
// frame, or an SQLite row.
type CorruptError struct {
	Path    string // file or database path
	Session string // session id; "" when not known
	// Line is the 1-based event line of a JSONL log (the header line is not
	// counted, as in DSH's messages); 0 when not applicable.
	Line int64
	// Offset is the byte offset of the damage in the decoded JSONL text
	// (for an uncompressed file, the file offset); -1 when not applicable.
	Offset int64
	// Frame is the file offset of the zstd frame involved; -1 when not
	// applicable.
	Frame int64
	// Seq is the physical row seq of an SQLite events row; -1 when not
	// applicable.
	Seq int64
	Msg string
	Err error
}

func (e *CorruptError) Error() string {
	var b strings.Builder
	b.WriteString(e.Path)
	if e.Session != "" {
		fmt.Fprintf(&b, ": session %q", e.Session)
	}
	var where []string
	if e.Line > 0 {
		where = append(where, fmt.Sprintf("line %d", e.Line))
	}
	if e.Offset >= 0 {
		where = append(where, fmt.Sprintf("byte %d", e.Offset))
	}
	if e.Frame >= 0 {
		where = append(where, fmt.Sprintf("zstd frame at byte %d", e.Frame))
	}
	if e.Seq >= 0 {
		where = append(where, fmt.Sprintf("row seq %d", e.Seq))
	}
	if len(where) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(where, ", "))
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

func (e *CorruptError) Unwrap() error { return e.Err }

// Is makes every CorruptError match ErrCorrupt.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// corruptAt builds a CorruptError without location fields.
func corruptAt(path, id, msg string, err error) *CorruptError {
	return &CorruptError{Path: path, Session: id, Offset: -1, Frame: -1, Seq: -1, Msg: msg, Err: err}
}

// UnsupportedVersionError is DSH's format refusal: the data was written in a
// format version dsh does not read (DSH format version 0 and SQLite schema
// 17 are the only ones it does). Such data is never read partially.
type UnsupportedVersionError struct {
	Path    string
	Session string // "" for a whole store
	// Version is the version found, rendered as a JavaScript number (a
	// header's "version", the N of session.vN.jsonl, or an SQLite
	// user_version).
	Version string
	// Detail says where the version came from, e.g. "header", "file name",
	// "SQLite user_version".
	Detail string
}

func (e *UnsupportedVersionError) Error() string {
	var b strings.Builder
	b.WriteString(e.Path)
	if e.Session != "" {
		fmt.Fprintf(&b, ": session %q", e.Session)
	}
	fmt.Fprintf(&b, ": unsupported DSH session format version %s", e.Version)
	if e.Detail != "" {
		fmt.Fprintf(&b, " (%s)", e.Detail)
	}
	return b.String()
}

// Problem is one session a source found but cannot offer: its header is
// unreadable or refused, or its id is ambiguous. ID is "" when no id could
// be read.
type Problem struct {
	Path string
	ID   string
	Err  error
}

// FileError is a session file that was enumerated but could not be read
// when its log was: it vanished, was replaced by something that is not a
// regular file, kept changing, or the system refused the read. It
// concerns that session alone, never the whole corpus.
type FileError struct {
	Path    string
	Session string
	Err     error
}

func (e *FileError) Error() string {
	msg := e.Err.Error()
	if !strings.Contains(msg, e.Path) {
		msg = e.Path + ": " + msg
	}
	return fmt.Sprintf("session %q: log file cannot be read since the corpus was opened: %s", e.Session, msg)
}

func (e *FileError) Unwrap() error { return e.Err }
