// Package backend is the contract between dsh's session stores and the code
// that reads and writes them: the values a store hands out (an Inspection,
// a Lease, a CheckpointRecord, …), the sentinel errors callers branch on,
// and the interfaces a backend implements.
//
// The interfaces are grouped by the job a consumer does — reading headers,
// reading logs, writing, leases, checkpoints — so that a consumer names only
// the group it needs and a read-only corpus (a DSH JSONL tree, DSH's
// schema-17 file) can stand in for a store on the read side.
// Backend is the whole contract a store must meet; the capabilities a
// consumer discovers by type assertion (a fast path, or a part of Backend
// a read-only corpus lacks) are declared in capabilities.go and listed in
// Capabilities. sqlitepersist.Store and pgstore.Store implement them all;
// internal/storetest checks a backend against the contract written in the
// doc comments.
//
// Every method takes a context first and returns promptly with ctx.Err()
// (possibly wrapped) once it is done. Errors carry dsherr codes; the
// sentinels below are matched with errors.Is.
package backend

import (
	"context"
	"time"

	"github.com/dsh-project/dsh/internal/session"
)

// HeaderReader reads one session's header.
type HeaderReader interface {
	// Header returns the stored header of session id exactly as stored:
	// optional fields that were absent are nil, never zero. An unknown id
	// is an error wrapping ErrNotFound.
	Header(ctx context.Context, id string) (session.Header, error)
}

// ChildrenReader answers the two questions a subagent listing asks of the
// persisted headers. It never reads an event log.
type ChildrenReader interface {
	// ChildrenOf calls fn for every session, of any origin, whose
	// parentSession is parentID, in DSH's order: createdAt ascending,
	// then id (the caller re-sorts ties by JavaScript localeCompare, see
	// corpus.SortHeaders). The cost must depend on the number of children,
	// not on the size of the store. An unknown parent has no children. An
	// error from fn stops the walk and is returned as is.
	ChildrenOf(ctx context.Context, parentID string, fn func(session.Header) error) error
	// HasSubagentChild reports whether any session with origin "subagent"
	// names id as its parent.
	HasSubagentChild(ctx context.Context, id string) (bool, error)
	SubagentParentReader
}

// SessionLister streams every session of a corpus. Memory use must not
// grow with the number of sessions; an error from fn stops a walk and is
// returned as is.
type SessionLister interface {
	// ListHeaders calls fn for every stored header, one at a time, in a
	// stable order (the store's insertion order).
	ListHeaders(ctx context.Context, fn func(session.Header) error) error
	// CountSessions counts the stored sessions, or only those with origin
	// "subagent" when subagentOnly is set.
	CountSessions(ctx context.Context, subagentOnly bool) (int, error)
	// HasSessions reports whether any session is stored. Its cost must
	// not grow with the store: it answers a read command's "is this
	// corpus empty?" check on every run (CountSessions counts them all).
	HasSessions(ctx context.Context) (bool, error)
	// EachParent calls fn with every distinct parentSession value, in
	// byte order: of any session, or of subagent-origin sessions when
	// subagentOnly is set. No read stays open while fn runs, so fn may
	// call the store.
	EachParent(ctx context.Context, subagentOnly bool, fn func(parent string) error) error
	// RootHeaders calls fn for every session without a parentSession
	// (only the subagent-origin ones when subagentOnly is set), in
	// (createdAt, id) order.
	RootHeaders(ctx context.Context, subagentOnly bool, fn func(session.Header) error) error
	// CatalogSessions calls fn, in id order, with every session whose log
	// may hold a subagent/catalog event (own or inherited below a fork's
	// cut): every one that does, and possibly some that do not, which a
	// caller reading the log finds out. No read stays open while fn runs.
	CatalogSessions(ctx context.Context, fn func(id string) error) error
}

// LogReader reads event logs without changing anything.
type LogReader interface {
	// Inspect returns the session as DSH's non-mutating inspect reads it:
	// the header, the valid stored prefix of the log (a torn tail cut off
	// in the result only, reported in Torn) and the Closers a repairing
	// Load would append. A committed row that cannot be read is an error
	// wrapping ErrCorrupt (a *CorruptRowError); a log failing DSH's
	// validation is an error wrapping *session.ValidationError; an unknown
	// id wraps ErrNotFound. It writes nothing, ever.
	Inspect(ctx context.Context, id string) (*Inspection, error)
	// InspectTypes is Inspect keeping only the events and closers whose
	// type is in types (the verdict is the same as Inspect's: the whole
	// log is judged).
	InspectTypes(ctx context.Context, id string, types ...string) (*Inspection, error)
	// Audit reads the raw facts a diagnosis needs and Inspect hides: the
	// stored seqs' gaps and, beside the valid prefix, the reason the log
	// cannot be read (ReadErr is exactly Inspect's error). Only a failure
	// to read the store, or an unknown id (ErrNotFound), is an error.
	Audit(ctx context.Context, id string) (*AuditRead, error)
}

// Reader is the whole read side: what every corpus offers, a dsh store and
// a foreign DSH corpus alike.
type Reader interface {
	HeaderReader
	ChildrenReader
	SessionLister
	LogReader
}

// Writer writes sessions. Every write is atomic: a refused or failed write
// leaves nothing behind.
type Writer interface {
	// CreateSession stores a new session with its initial events. The log
	// is validated as DSH validates one it restores; an invalid one is an
	// error wrapping *session.ValidationError. An existing id is an error
	// wrapping ErrDuplicate.
	CreateSession(ctx context.Context, h session.Header, initial []session.Event) error
	// Append adds events to the end of session id's log. expectedNext is
	// the seq the writer believes comes next; when the stored log
	// disagrees the append is refused with an error wrapping
	// *StaleWriterError (code STALE_WRITER). An invalid batch wraps
	// *session.ValidationError. An empty batch is a no-op. No append ever
	// changes an earlier row.
	Append(ctx context.Context, id string, expectedNext int64, events []session.Event) error
	// Load is the repairing read a writer does before it resumes a
	// session: it deletes a torn tail and appends the Closers of an
	// interrupted turn, once; a second Load finds nothing to repair and
	// writes nothing. It returns the log as it is afterwards. Errors as
	// Inspect's.
	Load(ctx context.Context, id string) (*Inspection, error)
	// ImportSession stores a foreign session exactly as found, even when
	// DSH would reject it (gaps, invalid events), with the torn tail's
	// bytes kept beside the log. It is the only write path that accepts
	// invalid logs. The result says how the log reads back. An existing id
	// is an error wrapping ErrDuplicate.
	ImportSession(ctx context.Context, h session.Header, events []session.Event, tail *TornTail) (ImportResult, error)
	// ImportDamagedSession stores a foreign session whose log is damaged
	// inside its committed region: the header, the valid events before
	// the damage and the rest as found. Every reader then reports the log
	// as committed-row corruption at damage.FromSeq (the result's
	// Invalid), as DSH's inspect fails on the source. An existing id is an
	// error wrapping ErrDuplicate.
	ImportDamagedSession(ctx context.Context, h session.Header, prefix []session.Event, damage DamagedLog) (ImportResult, error)
	// What an import records beside the logs it stores: without these an
	// import would lose a session's format, a refused session or the
	// text its reader replaced (capabilities.go).
	SourceFormatWriter
	RefusalRecorder
	TextReplacementRecorder
}

// LeaseReader reads the leases that make a session live: at most one
// unexpired lease per session, judged by the backend's clock (Now), never
// by the caller's. A corpus no dsh process writes has no leases.
type LeaseReader interface {
	// Leases lists every lease, expired ones included, by session id.
	Leases(ctx context.Context) ([]Lease, error)
	// LiveSessions returns every session whose lease has not expired at
	// Now, keyed by id, with its stored header and the published snapshot.
	LiveSessions(ctx context.Context) (map[string]Live, error)
	// Now is the backend's clock, the one leases are judged by.
	Now(ctx context.Context) (time.Time, error)
}

// Leaser takes, renews and gives up leases.
type Leaser interface {
	LeaseReader
	// AcquireLease takes the lease on session id for h as one
	// compare-and-set: a lease h already holds is renewed; an unexpired
	// lease of another holder refuses with an error wrapping
	// *LeaseHeldError (code NOT_DELIVERED) and writes nothing; an expired
	// one is taken over and returned as replaced. The new lease expires
	// h.TTL after Now and has no published snapshot. An unknown session
	// wraps ErrNotFound. Of any number of concurrent acquirers — goroutines
	// or processes — exactly one succeeds.
	AcquireLease(ctx context.Context, id string, h LeaseHolder) (replaced *Lease, err error)
	// HeartbeatLease renews h's lease for another h.TTL from Now and, when
	// snap is not nil, publishes it atomically with the renewal. A lease
	// that is no longer h's is an error wrapping ErrLeaseLost and nothing
	// is written. Inside Update it makes the transaction's appends
	// conditional on still holding the lease.
	HeartbeatLease(ctx context.Context, id string, h LeaseHolder, snap *LiveSnapshot) error
	// ReleaseLease deletes h's lease on id; a lease that is no longer h's
	// is left alone and reported as an error wrapping ErrLeaseLost.
	ReleaseLease(ctx context.Context, id string, h LeaseHolder) error
}

// CheckpointReader reads stored projection checkpoints. The backend stores
// records; their format and the rules for using them belong to package projcache.
type CheckpointReader interface {
	// Checkpoint returns session id's record; found is false when there
	// is none.
	Checkpoint(ctx context.Context, id string) (rec CheckpointRecord, found bool, err error)
	// CheckpointsOf calls fn for the record of every id in ids that has
	// one, in no particular order.
	CheckpointsOf(ctx context.Context, ids []string, fn func(CheckpointRecord) error) error
	// ChildCheckpoints calls fn for every record whose witness names
	// parent as parentSession (one index range, for a listing of parent's
	// children), in no particular order.
	ChildCheckpoints(ctx context.Context, parent string, fn func(CheckpointRecord) error) error
	// EachCheckpoint calls fn for every record, by session id (byte
	// order).
	EachCheckpoint(ctx context.Context, fn func(CheckpointRecord) error) error
}

// CheckpointWriter changes stored checkpoints.
type CheckpointWriter interface {
	// PutCheckpoint replaces the record of rec.Witness.ID as a whole (no
	// field of an older record survives). The backend does not check the
	// rows; package projcache does before it calls.
	PutCheckpoint(ctx context.Context, rec CheckpointRecord) error
	// DeleteCheckpoint removes id's record; a missing record is not an
	// error.
	DeleteCheckpoint(ctx context.Context, id string) error
	// ClearCheckpoints removes every record, and every registry fold
	// recorded beside a log (RegistryFoldRecorder: derived data too), and
	// returns how many records there were.
	ClearCheckpoints(ctx context.Context) (int64, error)
}

// Store is everything one open backend offers, and what the views handed
// to View and Update callbacks offer: besides the read side every corpus
// offers, transactions (a view's nest in it), the writes, leases and checkpoints, the reads of what an import
// records beside the logs, and the descriptor point read without which a
// 0.1.0-rc.8 listing would trust dsh's own folds (capabilities.go).
type Store interface {
	Reader
	Transactor
	Writer
	Leaser
	CheckpointReader
	CheckpointWriter
	SourceFormatReader
	RefusalReader
	TextReplacementReader
	DescriptorReader
}

// Viewer holds one consistent snapshot of a corpus for several reads.
type Viewer interface {
	// View runs fn with a Store whose reads all see one consistent
	// snapshot; writes through it fail. Inside a view it reuses the view.
	View(ctx context.Context, fn func(view Store) error) error
}

// Transactor runs several calls as one unit.
type Transactor interface {
	Viewer
	// Update runs fn with a Store bound to one write transaction and
	// commits when fn returns nil; any error rolls back everything fn
	// wrote. A concurrent writer waits or fails, it never interleaves.
	// Inside an Update it nests: a failed inner Update undoes only its own
	// writes. On a read-only open it fails with code STORE_UNAVAILABLE.
	Update(ctx context.Context, fn func(tx Store) error) error
}

// Backend is an open session store: the whole contract.
type Backend interface {
	Store
	// ReadOnly reports whether the backend was opened for reading only:
	// then nothing, not even a file beside the store, is written.
	ReadOnly() bool
	Close() error
}
