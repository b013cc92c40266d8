// Package dshformat reads session corpora written by DeepSeek Harness (DSH)
// 0.1.0-rc.8 and later releases — JSONL session files (plain or zstd-framed) and DSH's schema-17
// SQLite store — and DSH's projection cache file, and writes DSH JSONL
// session files. It knows DSH's formats and nothing about dsh's CLI or
// database.
//
// Reading follows DSH's non-mutating inspect at the storage layer: the
// header, the contiguous valid event prefix with packed chunk rows expanded
// into their logical assistant/chunk events, and a torn tail (physically
// incomplete or invalid data after the last committed turn/end) reported
// separately instead of failing the read. Damage before a later valid
// turn/end is corruption. Semantic validation of the events (surface rules,
// message shapes, known types) is left to package session, as DSH leaves it
// to Session construction.
//
// JSONL session formats 0 and 2–4 are read (session.jsonl and
// session.vN.jsonl, plain or zstd; the highest generation in a directory
// wins, as in DSH), and SQLite schema 17. Other versions — V1, V5 and
// later, a header whose version is not its file name's, other SQLite
// schema versions — and the later-format constructs dsh has not verified
// against DSH's files are refused with an *UnsupportedVersionError, never
// read partially; such a session is still listed by Headers when its
// header can be read, so that it shows as an unavailable row.
package dshformat

import (
	"context"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/session"
)

// Source is a read-only foreign DSH corpus. Nothing a Source does writes to
// the corpus. Implementations are safe for concurrent use.
type Source interface {
	// Headers returns the header of every session the source can offer,
	// sorted by id. As in DSH's listing, a header whose format version is
	// not 0 but which otherwise has today's shape is included (its Version
	// says so) and only refused by Read.
	Headers(ctx context.Context) ([]session.Header, error)
	// Read returns one session as DSH's non-mutating inspect reads it from
	// storage. Errors are *CorruptError (matching ErrCorrupt),
	// *UnsupportedVersionError, or wrap ErrNotFound.
	Read(ctx context.Context, id string) (*Session, error)
	// ReadAsFound is Read for a faithful copy: damage inside the committed
	// region, which makes Read fail, is returned in Session.Damage (with the
	// error Read would return) together with the events before it and the
	// stored data from the damage on. Its other errors are Read's.
	ReadAsFound(ctx context.Context, id string) (*Session, error)
	// Problems lists the sessions found but not offered by Headers:
	// unreadable or refused headers, ambiguous ids.
	Problems() []Problem
	Close() error
}

// Session is one session as read from a foreign corpus.
type Session struct {
	Header session.Header
	// Events is the contiguous valid prefix (seq i at index i), packed rows
	// expanded, without the synthetic closers DSH's inspect would add.
	Events []session.Event
	// Torn is non-nil when stored data after Events was cut off as a torn
	// tail (JSONL: an unterminated, unparsable or out-of-sequence suffix, or
	// an incomplete final zstd frame; SQLite: undecodable or non-contiguous
	// rows after the last committed turn/end).
	Torn *Torn
	// Location is the file or database the session was read from.
	Location string
	// Format names the format the session was stored in (FormatName):
	// jsonl-vN[-zstd] or dsh-sqlite-17.
	Format string
	// Damage is set only by ReadAsFound, for a log DSH's inspect refuses
	// because stored data inside its committed region cannot be read
	// (Events is then the valid prefix before the damage, Torn is nil).
	Damage *Damage
	// TextReplaced: some of Events were read from text holding bytes that
	// are not UTF-8, replaced with U+FFFD as DSH's lenient decoding
	// replaces them; nil when none.
	TextReplaced *backend.TextReplaced
}

// RawEncoding says how Damage.Raw holds the stored data.
type RawEncoding string

// The encodings of Damage.Raw.
const (
	// RawJSONLText is decoded JSONL text starting at the damaged line.
	RawJSONLText RawEncoding = "jsonl-text"
	// RawZstdFrames is a zstd session file's bytes after its header frame,
	// as stored.
	RawZstdFrames RawEncoding = "jsonl-zstd"
	// RawSQLiteRows is schema-17 events rows from the damaged one on, one
	// JSON object per line (see encodeTornRows).
	RawSQLiteRows RawEncoding = "dsh-sqlite-rows"
)

// Damage is where and how a log is damaged inside its committed region.
type Damage struct {
	// FromSeq is the first logical seq not in Events (len(Events)).
	FromSeq int64
	// Err is the error Read returns for the session.
	Err *CorruptError
	// Raw is the stored data from the damage on, as found.
	Raw      []byte
	Encoding RawEncoding
	// Recorded is the reason a dsh database keeps for a damaged log it
	// holds (a dsh database read as a source); "" for a foreign corpus,
	// whose reason is Err's message.
	Recorded string
}

// Reason is why the log does not read: the recorded reason, else Err's
// message.
func (d *Damage) Reason() string {
	if d.Recorded != "" {
		return d.Recorded
	}
	return d.Err.Error()
}

// Seq is the seq a reader reports the damage at: the physical row of an
// SQLite store, else the first seq not read.
func (d *Damage) Seq() int64 {
	if d.Err.Seq >= 0 {
		return d.Err.Seq
	}
	return d.FromSeq
}

// Torn describes a torn tail.
type Torn struct {
	// FromSeq is the first logical seq not in Events (len(Events)).
	FromSeq int64
	// Marker is DSH's repair marker: for JSONL the file offset DSH's load
	// would truncate the file to; for SQLite the physical seq of the first
	// torn row (rows with seq >= Marker are the tail).
	Marker int64
	// Reason says why the tail is torn.
	Reason string
	// Raw is the tail as stored: for JSONL the file bytes from Marker on;
	// for SQLite one JSON line per torn row (see sqliteTornRow).
	Raw []byte
	// Recovered counts the events at the end of Events that were salvaged
	// from an incomplete final zstd frame (DSH keeps and re-writes them).
	Recovered int
}
