package backend

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/google/uuid"

	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/session"
)

// Sentinel errors, matched with errors.Is. A backend wraps them in a
// *dsherr.Error carrying the code the CLI maps to an exit status.
var (
	// ErrNoDatabase: a read-only open found no database, or one that was
	// never initialized (STORE_UNAVAILABLE).
	ErrNoDatabase = errors.New("no database")
	// ErrNotFound: no session with the requested id (NOT_FOUND).
	ErrNotFound = errors.New("session not found")
	// ErrDuplicate: a session with that id already exists (ALREADY_EXISTS; start reports DUPLICATE_CHILD).
	ErrDuplicate = errors.New("session already exists")
	// ErrCorrupt: a stored row before the last committed turn/end cannot be
	// decoded or breaks seq contiguity (INVALID_LOG).
	ErrCorrupt = errors.New("corrupt session log")
	// ErrLogUnreadable: one session's log could not be read where it is
	// kept — a foreign corpus's file that vanished, changed or stopped
	// being a regular file after the corpus was enumerated
	// (STORE_UNAVAILABLE for that session alone: an audit reports it and
	// goes on).
	ErrLogUnreadable = errors.New("session log cannot be read")
	// ErrLeaseHeld: another live process holds the session (NOT_DELIVERED).
	ErrLeaseHeld = errors.New("session is held by another live process")
	// ErrLeaseLost: the caller's lease was taken over (it had expired and
	// another process acquired it) or released; the caller must stop
	// writing (NOT_DELIVERED).
	ErrLeaseLost = errors.New("lease lost")
	// ErrSchemaTooNew: the database was migrated by a newer dsh
	// (STORE_UNAVAILABLE; upgrade dsh).
	ErrSchemaTooNew = errors.New("database schema is newer than this dsh")
	// ErrSchemaTooOld: a read-only open found a schema that dsh init has
	// not yet migrated (STORE_UNAVAILABLE).
	ErrSchemaTooOld = errors.New("database schema is older than this dsh")
	// ErrForeignDatabase: the database (a SQLite file, a PostgreSQL
	// schema) holds tables dsh did not create (STORE_UNAVAILABLE).
	ErrForeignDatabase = errors.New("not a dsh database")
	// ErrUnreachable: no database server answered at the address
	// (STORE_UNAVAILABLE).
	ErrUnreachable = errors.New("database server unreachable")
	// ErrAuthentication: the database server refused the user or password
	// (STORE_UNAVAILABLE).
	ErrAuthentication = errors.New("database authentication failed")
)

// Inspection is a session as a reader sees it.
type Inspection struct {
	Header session.Header
	// Events is the valid stored prefix of the log, without Closers.
	Events []session.Event
	// Torn is non-nil when a torn tail was cut off: by Inspect only in the
	// result, by Load in the store.
	Torn *TornTail
	// Closers are the events that close an interrupted turn (empty when the
	// log ends balanced): what Load would append (Inspect) or has appended
	// (Load). Events followed by Closers is the balanced log.
	Closers []session.Event
	// Verified reports that the log is recorded as validated by dsh's own
	// write paths and unchanged since.
	Verified bool
}

// TornTail is a physically incomplete suffix of a log: rows from FromSeq on
// that cannot be read, or bytes an import kept as they were.
type TornTail struct {
	FromSeq int64
	Reason  string
	// Raw is opaque: the stored bytes of the first torn row, or the bytes
	// an import recorded.
	Raw []byte
}

// DamagedLog is what an import kept of a log damaged inside its committed
// region (migration 0005): the events rows hold the valid prefix, seqs below
// FromSeq, and Raw the stored data from the damage on, exactly as found. Such
// a log never reads: every reader reports it as committed-row corruption at
// FromSeq (a *CorruptRowError with Reason).
type DamagedLog struct {
	FromSeq int64
	// Reason is why the source's reader could not read the log.
	Reason string
	// Encoding says how Raw holds the data: "jsonl-text", "jsonl-zstd" or
	// "dsh-sqlite-rows" (see migrations/0005_damaged_logs.sql).
	Encoding string
	Raw      []byte
}

// SeqGap is a run of seqs missing from a session's stored rows: every seq
// from From to To (inclusive) is absent although a later row exists. Only a
// faithful import or damage outside dsh can leave one.
type SeqGap struct {
	From, To int64
}

// AuditRead is a session read for diagnosis: everything Inspect sees, with
// the verdict kept apart from the data instead of replacing it.
type AuditRead struct {
	Header session.Header
	// Events is the contiguous decodable prefix of the log (what Inspect
	// returns when ReadErr is nil); nil when a committed row is corrupt.
	Events []session.Event
	// Torn is the torn tail a reader cuts off, nil when none.
	Torn *TornTail
	// Closers are what Load would append to close an interrupted turn.
	Closers []session.Event
	// Gaps lists the holes in the stored seqs, in order, including rows
	// after a torn tail's start.
	Gaps []SeqGap
	// Verified reports the log is recorded as validated by dsh's writes.
	Verified bool
	// ReadErr is exactly the error Inspect returns for this log (nil when
	// it reads): one wrapping *session.ValidationError or ErrCorrupt.
	ReadErr error
	// Damaged is what an import kept of a log damaged inside its committed
	// region (ReadErr then reports it); Prefix holds the events before the
	// damage, as stored.
	Damaged *DamagedLog
	Prefix  []session.Event
	// TextReplaced: the log's events were read from text holding bytes
	// that are not UTF-8, which the reader replaced with U+FFFD (in place,
	// or by the import that stored them); nil when none.
	TextReplaced *TextReplaced
}

// TextReplaced says which events of a log were read from stored text
// holding bytes that are not UTF-8, each ill-formed sequence replaced with
// U+FFFD as DSH's own (lenient) decoding does. An event counts when the
// line or row it was read from held such bytes: every event a packed row
// expands to counts. Only the events a read keeps count (not a torn tail
// or the damage after them, kept as found).
type TextReplaced struct {
	// FirstSeq is the first such event's seq; Events how many there are.
	FirstSeq int64
	Events   int
}

// ImportResult reports how an imported log reads back.
type ImportResult struct {
	// Events is the number of event rows written.
	Events int
	// Torn is the torn tail the log reads back with (the one given, or
	// rows that cannot be read after the last turn/end), nil when none.
	Torn *TornTail
	// Verified: the log passes DSH's validation and has no torn tail; it
	// was recorded as verified.
	Verified bool
	// Invalid is the error Inspect returns for the imported log (a
	// validation failure or committed-row corruption); nil when it reads.
	Invalid error
}

// StaleWriterError rejects an append whose writer's view of the log is out of
// date: it expected the next seq to be Expected, but the stored log ends at
// Stored-1. Nothing was written.
type StaleWriterError struct {
	ID       string
	Expected int64
	Stored   int64
}

func (e *StaleWriterError) Error() string {
	return fmt.Sprintf("stale writer for session %q: append starts at seq %d, stored next seq is %d", e.ID, e.Expected, e.Stored)
}

// CorruptRowError names the committed row that cannot be read. It matches
// ErrCorrupt with errors.Is.
type CorruptRowError struct {
	ID     string
	Seq    int64
	Reason string
}

func (e *CorruptRowError) Error() string {
	return fmt.Sprintf("corrupt session log %q: invalid committed row at seq %d: %s", e.ID, e.Seq, e.Reason)
}

func (e *CorruptRowError) Is(target error) bool { return target == ErrCorrupt }

// LeaseHolder identifies a process that holds leases and how long each of
// its leases lives. When a lease expires is decided by the backend's clock.
type LeaseHolder struct {
	// ID is unique per holding process run; ownership is decided on it.
	ID string
	// PID and Host are recorded so people (and diagnose) can find the holder.
	PID  int
	Host string
	// TTL is how long a lease lives after each acquisition or heartbeat.
	TTL time.Duration
}

// NewLeaseHolder returns a holder for this process: a fresh random id, this
// process's pid and host name, and the given TTL.
func NewLeaseHolder(ttl time.Duration) LeaseHolder {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown"
	}
	return LeaseHolder{ID: uuid.NewString(), PID: os.Getpid(), Host: host, TTL: ttl}
}

// Check refuses a holder a backend cannot record: no id, or a TTL that is
// not positive.
func (h LeaseHolder) Check() error {
	if h.ID == "" {
		return dsherr.New(dsherr.Internal, "lease holder has no id")
	}
	if h.TTL <= 0 {
		return dsherr.New(dsherr.InvalidInput, "lease TTL must be positive (got %s)", h.TTL)
	}
	return nil
}

// LiveSnapshot is what a holder publishes about the session it runs: the
// view of its `subagent` projection unit as of AsOfSeq. Subagent nil means
// nothing published yet.
type LiveSnapshot struct {
	Subagent json.RawMessage
	AsOfSeq  int64
	// UnitFailure is set when the holder's projection unit failed.
	UnitFailure string
}

// SnapshotColumns are a lease row's nullable snapshot columns (subagent,
// as_of_seq, unit_failure) as either store scans them; nil is NULL.
type SnapshotColumns struct {
	Subagent    *string
	AsOfSeq     *int64
	UnitFailure *string
}

// Snapshot is the published snapshot the columns hold: none unless a
// subagent view or a unit failure was published.
func (c SnapshotColumns) Snapshot() *LiveSnapshot {
	if c.Subagent == nil && c.UnitFailure == nil {
		return nil
	}
	snap := &LiveSnapshot{}
	if c.AsOfSeq != nil {
		snap.AsOfSeq = *c.AsOfSeq
	}
	if c.UnitFailure != nil {
		snap.UnitFailure = *c.UnitFailure
	}
	if c.Subagent != nil {
		snap.Subagent = json.RawMessage(*c.Subagent)
	}
	return snap
}

// Lease is one stored lease. Times are epoch milliseconds of the backend's
// clock.
type Lease struct {
	SessionID   string
	Holder      string
	PID         int
	Host        string
	AcquiredAt  int64
	HeartbeatAt int64
	ExpiresAt   int64
	// Snapshot is the published live snapshot, nil when none yet.
	Snapshot *LiveSnapshot
}

// Expired reports whether the lease's holder stopped renewing it: a lease
// expiring at or before now (the backend's Now) no longer makes its session
// live.
func (l Lease) Expired(now time.Time) bool { return l.ExpiresAt <= now.UnixMilli() }

// LeaseHeldError names the live holder that refused an acquisition.
type LeaseHeldError struct {
	Lease Lease
	// Now is when the backend looked, epoch ms.
	Now int64
}

func (e *LeaseHeldError) Error() string {
	l := e.Lease
	return fmt.Sprintf("session %q is held by another live process (pid %d on %s, holder %s, lease expires in %s); not delivered",
		l.SessionID, l.PID, l.Host, l.Holder, time.Duration(l.ExpiresAt-e.Now)*time.Millisecond)
}

func (e *LeaseHeldError) Is(target error) bool { return target == ErrLeaseHeld }

// LeaseLost is the error a backend returns when h no longer holds the lease
// on session id.
func LeaseLost(id string, h LeaseHolder) error {
	return &dsherr.Error{
		Code: dsherr.NotDelivered,
		Msg:  fmt.Sprintf("session %q: the lease of holder %s was taken over or released; not delivered", id, h.ID),
		Err:  ErrLeaseLost,
	}
}

// Live is what a live holder publishes about the session it runs, as a
// listing reads it.
type Live struct {
	Holder string
	// Header is the stored header of the held session. A live record's
	// header wins its id wholesale over the persisted one, as in DSH.
	Header session.Header
	// Subagent is the raw view of the holder's `subagent` projection unit
	// (`null` or an identity object), or nil when the holder has not
	// published a snapshot yet.
	Subagent json.RawMessage
	// AsOfSeq is the last event seq the published snapshot covers.
	AsOfSeq int64
	// UnitFailure is set when the holder's projection unit failed; the row
	// for such a child is `corrupt`.
	UnitFailure string
}

// Unoffered is a session a corpus holds but cannot offer at all: its header
// cannot be read or is refused, or its id is ambiguous. ID is "" when no id
// could be read; Location says where the session is stored.
type Unoffered struct {
	Location string
	ID       string
	Err      error
}

// The codes of a Refusal: the diagnose finding it gives, the one diagnose
// --source gives for the same damage in place.
const (
	// RefusedHeader: the header cannot be read or kept, or the id is in
	// several files; no listing shows the session.
	RefusedHeader = "HEADER_UNREADABLE"
	// RefusedFormat: the log is in a format dsh does not read.
	RefusedFormat = "UNSUPPORTED_FORMAT"
	// RefusedLog: the log cannot be read (at Seq, when known).
	RefusedLog = "LOG_UNREADABLE"
)

// Refusal is a session an import found but could not store, as the store
// records it (backend.RefusalRecorder).
type Refusal struct {
	// Location is the file or database the session was found in.
	Location string
	// ID is the id read, "" when none could be read or kept.
	ID string
	// Code is RefusedHeader, RefusedFormat or RefusedLog; Seq is the seq
	// a RefusedLog failure is at, when known.
	Code   string
	Seq    *int64
	Reason string
	// Header, given to RecordRefusal, is the session's header when it
	// was read: the store keeps it as a listed session whose every read
	// fails with the refusal. Listed, read back, says the store did.
	Header *session.Header
	Listed bool
}

// RefusedError is what a read of a session kept only as a refused header
// fails with; it unwraps to a *CorruptRowError (or ErrCorrupt) for a
// RefusedLog refusal, as a read of the damaged source does.
type RefusedError struct{ Refusal Refusal }

func (e *RefusedError) Error() string { return e.Refusal.Reason }

func (e *RefusedError) Unwrap() error {
	r := e.Refusal
	switch {
	case r.Code != RefusedLog:
		return nil
	case r.Seq != nil:
		return &CorruptRowError{ID: r.ID, Seq: *r.Seq, Reason: r.Reason}
	}
	return ErrCorrupt
}

// Error is the error every read of the refused session gives: code
// UNSUPPORTED_FORMAT for RefusedFormat, INVALID_LOG otherwise.
func (r Refusal) Error() error {
	code := dsherr.InvalidLog
	if r.Code == RefusedFormat {
		code = dsherr.UnsupportedFormat
	}
	return &dsherr.Error{Code: code, Msg: r.Reason, Err: &RefusedError{Refusal: r}}
}

// CheckpointRecord is one stored projection checkpoint. The backend keeps
// it whole; package projcache decides what it means.
type CheckpointRecord struct {
	// Witness is the header the rows were folded from; Witness.ID is the
	// session the record belongs to. Absent optional fields stay absent.
	Witness session.Header
	// AsOfSeq is the last durable event seq the rows cover (-1: none).
	AsOfSeq int64
	// Rows is package projcache's encoding of the unit rows, stored as given.
	Rows []byte
}

// ColdVerdict is what a store recorded about a cold read of a log.
type ColdVerdict struct {
	// ReadErr, when not nil, is the error a read of the log gives (its
	// text is Inspect's error's), recorded by the import that stored a log
	// failing DSH's validation or holding damage.
	ReadErr error
	// RegistryFold, when not nil, is what a writer recorded with
	// RecordRegistryFold.
	RegistryFold []byte
}

// ResolvedRow is one subagent child's listing row as the ladder resolved
// it with nothing live (see ResolvedRowReader): Kind "child" with Mode and
// Label, or "diagnostic" with Reason. Resolver is the stamp of who resolved
// it, "" when the row is stale (then the other resolved fields say
// nothing). HasChildren is read with the row, never stored.
type ResolvedRow struct {
	ID          string
	CreatedAt   int64
	Resolver    string
	Kind        string
	Reason      string
	Mode        string
	Label       *string
	HasChildren bool
}

// CatalogView is what a --dsh-compat 0.1.7 listing computes from one
// session's own log (see CatalogViewReader): Reason "corrupt" when DSH
// refuses the session's catalog whatever its children say (a root listing
// still computes its error); else its own entries, which are its catalog
// unless Backfill (a V0-V3 session: DSH's back-fill completes them with its
// children's evidence when listed). EvidenceCount and EvidenceDescriptor
// are its own evidence for its parent's back-fill (0 and nil when its log
// cannot be read or its first own descriptor is malformed). Resolver is
// the stamp of who resolved it.
type CatalogView struct {
	ID                 string
	Resolver           string
	Reason             string
	Backfill           bool
	Entries            []CatalogEntry
	EvidenceCount      int
	EvidenceDescriptor []byte
	// Children are, as CatalogViews reads a back-fill view, its subagent
	// children in no particular order; never written.
	Children []CatalogChild
}

// CatalogEntry is one entry of a catalog view: the child's id, its
// childCreatedAt, mode and label (nil: the fact has none).
type CatalogEntry struct {
	ID        string
	CreatedAt int64
	Mode      string
	Label     *string
}

// CatalogChild is a subagent child of a back-fill view as read with it:
// its header's id and createdAt and, when Current (its own view carries
// the stamp asked for), its own evidence.
type CatalogChild struct {
	ID                 string
	CreatedAt          int64
	Current            bool
	EvidenceCount      int
	EvidenceDescriptor []byte
}

// ListedChild is one subagent child as a warm listing needs it, read in the
// same row as its header (a backend's one-query ChildListing).
type ListedChild struct {
	Header      session.Header
	HasChildren bool
	// Checkpoint is the rows text of the child's checkpoint record when its
	// lifecycle witness equals the header (nil: no such record).
	Checkpoint []byte
	// Cold, from a listing that reads cold logs with the headers, is what
	// a batch cold read of this child's log gives; nil when not read (it
	// has a record and no seed, or its log must be read on its own).
	Cold *ListedColdRead
}

// ListedColdRead is a batch cold read of one listed child, read in the
// same statement as its header: ColdVerdicts' verdict when one is
// recorded, otherwise InspectVerifiedTypes' inspection of its verified,
// untorn log.
type ListedColdRead struct {
	Verdict *ColdVerdict
	Log     *Inspection
}
