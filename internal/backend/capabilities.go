package backend

import (
	"context"
	"encoding/json"
	"reflect"

	"github.com/dsh-project/dsh/internal/session"
)

// The capabilities: every interface a consumer finds on a store or corpus
// value by type assertion is declared here and listed in Capabilities,
// and a consumer asserts to nothing else (TestCapabilitiesAreTheAssertions
// in this package type-checks the module and enumerates them). Two kinds:
//
//   - required: part of Backend, so every dsh store has it; it is
//     asserted only on a narrower value (a read side, which a foreign DSH
//     corpus may be) and a corpus without it has none of what it reads;
//   - optional: a fast path or an extra a backend may leave out; without
//     it the consumer takes the slow path the capability must equal, and
//     internal/storetest compares the two on every backend that has it.
//
// | capability | kind | fast path of (must equal) |
// |---|---|---|
// | Viewer, Transactor | required | — |
// | CheckpointWriter | required | — |
// | SubagentParentReader | required | HasSubagentChild per id |
// | SourceFormatReader | required | — |
// | RefusalReader | required | — |
// | TextReplacementReader | required | — |
// | DescriptorReader | required | reading each log |
// | SubtreeReader | optional | ChildrenOf walked from the root |
// | ChildrenPager | optional | ChildrenOf |
// | ChildListingReader | optional | ChildrenOf, SubagentParents, CheckpointsOf |
// | SubtreeListingReader | optional | SubtreeOf, SubagentParents, CheckpointsOf |
// | ColdChildListingReader | optional | ChildListing, InspectColdBatch |
// | VerifiedBatchReader | optional | InspectTypes per id |
// | ColdBatchReader | optional | ColdVerdicts, InspectVerifiedTypes |
// | BatchAuditor | optional | Audit per id |
// | ColdVerdictReader | optional | reading the log |
// | RegistryFoldRecorder | optional | — (what ColdVerdicts returns) |
// | Unverifier | optional | — (benchmark corpora) |
// | ChangeNotifier | optional | — (watchers; changes.go) |
// | UnofferedReader | optional (foreign corpora only) | — (a store keeps RefusalReader's records) |
// | UsageReader | optional | AsFoundReader's logs summed by package usage |
// | AsFoundReader | optional (foreign corpora only) | — (a store keeps UsageReader's totals) |
// | SearchReader | optional | AsFoundReader's logs matched by package search |
// | HeaderBatchReader | optional | Header per id |
// | PipelinedUpdater | optional | Transactor.Update |
//
// RefusalRecorder, TextReplacementRecorder and SourceFormatWriter are part
// of Writer: an import cannot do without them, and nothing asserts them.

// ChildrenPager is a ChildrenReader that can resume a parent's children
// after a place in their order, so that a caller walking a 100,000-child
// parent a page at a time holds one page, not the whole parent.
type ChildrenPager interface {
	// ChildrenAfter calls fn for at most limit sessions whose
	// parentSession is parentID, in ChildrenOf's order (createdAt, then
	// id as the store orders ids), beginning strictly after after (nil:
	// at the first). An error from fn stops the walk and is returned as
	// is.
	ChildrenAfter(ctx context.Context, parentID string, after *ChildKey, limit int, fn func(session.Header) error) error
}

// ChildKey is a child's place in ChildrenOf's order.
type ChildKey struct {
	CreatedAt int64
	ID        string
}

// SubagentParentReader answers hasChildren for many sessions at once (part
// of ChildrenReader; a consumer that takes only ChildrenOf and
// HasSubagentChild finds it by assertion).
type SubagentParentReader interface {
	// SubagentParents is HasSubagentChild for many ids at once: the set of
	// ids (each mapped to true) that some subagent-origin session names as
	// its parent. Ids not in the result have no subagent child.
	SubagentParents(ctx context.Context, ids []string) (map[string]bool, error)
}

// SubtreeReader reads a whole subtree at once.
type SubtreeReader interface {
	// SubtreeOf calls fn for every session reachable from root by parent
	// links, of any origin, in no particular order, each once: root itself
	// only when a cycle leads back to it. It equals walking ChildrenOf
	// from root, and its cost depends on the size of the subtree.
	SubtreeOf(ctx context.Context, root string, fn func(session.Header) error) error
}

// ChildListingReader is a warm listing's children in one query.
type ChildListingReader interface {
	// ChildListing calls fn for every subagent-origin child of parent in
	// (createdAt, id) order — whatever plan the store chooses — with its
	// hasChildren (SubagentParents: a subagent-origin child of its own; a
	// fork does not count) and the rows text of its checkpoint record when
	// the record's witness equals the header (CheckpointsOf, nil
	// otherwise). It equals ChildrenOf filtered to origin "subagent" with
	// those two reads; Cold is never set.
	ChildListing(ctx context.Context, parent string, fn func(ListedChild) error) error
}

// SubtreeListingReader is ChildListingReader for a whole tree.
type SubtreeListingReader interface {
	// SubtreeListing calls fn for every session SubtreeOf(root) gives, of
	// any origin, in no particular order, with its hasChildren and
	// witness-matched checkpoint text as ChildListing gives them, in one
	// query.
	SubtreeListing(ctx context.Context, root string, fn func(ListedChild) error) error
}

// ColdChildListingReader is ChildListingReader that also reads the cold
// children's logs with the headers (a listing without it asks
// ColdBatchReader, or ColdVerdictReader and VerifiedBatchReader, next).
type ColdChildListingReader interface {
	// ChildListingCold is ChildListing that also sets Cold, for every child
	// without a checkpoint record, every seeded child (a seed field in its
	// header) and every child whose record text does not contain mark
	// ("" = none such), to what InspectColdBatch(types) gives for it: its
	// recorded verdict, or its verified, untorn log's events of types.
	// Cold stays nil for a child the batch read leaves out.
	ChildListingCold(ctx context.Context, parent string, types []string, mark string, fn func(ListedChild) error) error
}

// VerifiedBatchReader reads many verified logs at once.
type VerifiedBatchReader interface {
	// InspectVerifiedTypes is InspectTypes for many sessions at once,
	// limited to those whose logs are recorded as verified and have no
	// torn tail, in a fixed number of statements. For each id it returns,
	// InspectTypes(id, types...) returns the same header and events; ids
	// left out (unknown, unverified, torn) must be read one at a time.
	// Closers are not computed, so types must not include a type a closer
	// can have (tool/result, step/end, turn/end).
	InspectVerifiedTypes(ctx context.Context, ids []string, types []string) (map[string]*Inspection, error)
}

// ColdBatchReader is a cold listing's whole batch read in one call (one
// statement in SQLite, one snapshot in PostgreSQL).
type ColdBatchReader interface {
	// InspectColdBatch returns ColdVerdicts(ids) and InspectVerifiedTypes
	// of the ids without a recorded verdict, read together.
	InspectColdBatch(ctx context.Context, ids []string, types []string) (map[string]ColdVerdict, map[string]*Inspection, error)
}

// BatchAuditor audits many logs in a few queries (a diagnosis reads every
// log of a chunk of sessions).
type BatchAuditor interface {
	// AuditEach calls fn with Audit's result for every id of ids, in no
	// particular order; an unknown id is an error wrapping ErrNotFound.
	// fn must not read the store: a cursor may be open while it runs.
	AuditEach(ctx context.Context, ids []string, fn func(*AuditRead) error) error
}

// ColdVerdictReader is a store that records, when it stores a log, what a
// cold read of it gives, so that a listing need not read the log to learn
// it; any later change to the log, by dsh or anything else, voids the
// record.
type ColdVerdictReader interface {
	// ColdVerdicts returns, of ids, the sessions whose logs carry such a
	// record. Ids left out must be read to know. It writes nothing, ever.
	ColdVerdicts(ctx context.Context, ids []string) (map[string]ColdVerdict, error)
}

// RegistryFoldRecorder is a store that keeps, beside a log, the outcome of
// dsh's projection registry folded over it (an opaque text the store only
// keeps), voided by any later change to the log and by ClearCheckpoints.
type RegistryFoldRecorder interface {
	// RecordRegistryFold records fold for session id. Call it only in the
	// write transaction that stored the log, holding a fold of the whole
	// log as stored. An unknown id wraps ErrNotFound.
	RecordRegistryFold(ctx context.Context, id string, fold []byte) error
}

// DescriptorReader is the point read the 0.1.0-rc.8 listing makes of the
// descriptors dsh's folds name (checkpoints, recorded folds, live
// snapshots), to refuse an identity whose descriptor rc.8 cannot read.
type DescriptorReader interface {
	// DescriptorsAt returns, for each id of at, the data of its event at
	// the given seq, bytes as stored, when that event is a
	// subagent/descriptor whose version is 3; an id whose event is missing
	// (a seq past the log, an unknown session) or of another type is left
	// out; a descriptor of another version may be given or left out. It
	// writes nothing.
	DescriptorsAt(ctx context.Context, at map[string]int64) (map[string]json.RawMessage, error)
}

// SourceFormatWriter records the foreign format a session was imported
// from (migration 0006), in the transaction that stores it.
type SourceFormatWriter interface {
	// SetSourceFormat records format (a dshformat.FormatName) for session
	// id. An unknown id wraps ErrNotFound.
	SetSourceFormat(ctx context.Context, id, format string) error
}

// SourceFormatReader reads what SourceFormatWriter recorded; a foreign
// corpus answers with its own format.
type SourceFormatReader interface {
	// SourceFormat returns the format session id was imported from, ""
	// for a session dsh created itself. An unknown id wraps ErrNotFound.
	SourceFormat(ctx context.Context, id string) (string, error)
}

// RefusalRecorder is a store that keeps a record of every session an import
// found but could not store (migration 0009), written in the import's
// transaction.
type RefusalRecorder interface {
	// RecordRefusal records r, replacing the record of the same location
	// and id. An id the store holds as a session (not as a refused header)
	// is not recorded: the store has that session. With r.Header, and an
	// id and header a store can keep, the header is kept as a listed
	// session every read of which fails with r.Error().
	RecordRefusal(ctx context.Context, r Refusal) error
	// ClearRefusals deletes the records of id (of any location) and the
	// id-less ones of location, and the refused header kept for id: call
	// it before storing a session id read from location.
	ClearRefusals(ctx context.Context, location, id string) error
	// RefusedOnly reports whether id is held only as a refused header.
	RefusedOnly(ctx context.Context, id string) (bool, error)
}

// RefusalReader reads the records of RefusalRecorder.
type RefusalReader interface {
	// Refusals calls fn for every record, by location then id.
	Refusals(ctx context.Context, fn func(Refusal) error) error
}

// TextReplacementRecorder is a store that records, beside a log an import
// stored, which of its events the source's reader read from text that is
// not UTF-8 (migration 0010).
type TextReplacementRecorder interface {
	// RecordTextReplaced records r for session id, or clears the record
	// when r is nil. Call it only in the write transaction that stored
	// the log. An unknown id wraps ErrNotFound.
	RecordTextReplaced(ctx context.Context, id string, r *TextReplaced) error
}

// TextReplacementReader reads the records of TextReplacementRecorder.
type TextReplacementReader interface {
	// TextReplacedOf returns, of ids, the sessions with a record. It
	// writes nothing, ever.
	TextReplacedOf(ctx context.Context, ids []string) (map[string]TextReplaced, error)
}

// Unverifier marks logs as changed outside dsh's write paths, as a store's
// triggers do after a foreign edit: their next read validates them in
// full. The benchmark generator uses it for corpora of cold reads.
type Unverifier interface {
	// UnverifyChildren marks the logs of parent's children.
	UnverifyChildren(ctx context.Context, parent string) error
}

// ResolvedRowReader is a store that keeps, beside each subagent child, the
// row a listing's ladder gives it when nothing is live (ResolvedRow),
// stamped with who resolved it and voided by any write to what the ladder
// reads of the child, whoever writes it.
type ResolvedRowReader interface {
	// ResolvedRows calls fn for every subagent-origin child of parent in
	// (createdAt, id) order, as ChildListing enumerates them, with its
	// resolved row (Resolver "" when the row is stale) and hasChildren. It
	// writes nothing, ever.
	ResolvedRows(ctx context.Context, parent string, fn func(ResolvedRow) error) error
}

// ResolvedRowWriter fills in resolved rows. Use it only inside a write
// transaction (Transactor.Update): LockResolvedRows then the reads the
// ladder makes then PutResolvedRows, so that no write of another
// transaction to a child's log, header or checkpoint falls between the
// read and the row (it waits for the lock, and makes the row stale after).
type ResolvedRowWriter interface {
	// LockResolvedRows locks the rows of the subagent children among ids
	// whose Resolver is not stamp and returns their headers in id order.
	LockResolvedRows(ctx context.Context, ids []string, stamp string) ([]session.Header, error)
	// PutResolvedRows writes each row's resolved fields and Resolver to
	// the row of its ID (a row that no longer exists is skipped).
	PutResolvedRows(ctx context.Context, rows []ResolvedRow) error
}

// CatalogViewReader is a store that keeps, beside each session, what a
// --dsh-compat 0.1.7 listing computes from that session's own log
// (CatalogView), stamped with who resolved it and voided by any write to
// that log or header, whoever writes it.
type CatalogViewReader interface {
	// CatalogViews calls fn, in no particular order, for each of ids whose
	// stored view carries stamp, with its own entries in catalog order
	// and, for a back-fill view, its subagent children as they stand, each
	// with its own evidence when its view carries stamp too. An id whose
	// view is stale, of another stamp or absent is left out. It writes
	// nothing, ever.
	CatalogViews(ctx context.Context, ids []string, stamp string, fn func(CatalogView) error) error
}

// CatalogViewWriter fills in catalog views. Use it only inside a write
// transaction, as ResolvedRowWriter: LockCatalogViews, then the reads the
// views are computed from, then PutCatalogViews.
type CatalogViewWriter interface {
	// LockCatalogViews locks the views not carrying stamp among ids and
	// returns their session ids in id order.
	LockCatalogViews(ctx context.Context, ids []string, stamp string) ([]string, error)
	// PutCatalogViews writes each view (its Children aside), entries
	// included, over the view of its ID (one whose session no longer
	// exists is skipped).
	PutCatalogViews(ctx context.Context, views []CatalogView) error
}

// UnofferedReader is a foreign corpus that holds sessions it cannot offer
// at all (files whose header cannot be read). A dsh store has none: an
// import records them as refusals (RefusalReader).
type UnofferedReader interface {
	Unoffered() []Unoffered
}

// Capability is one entry of Capabilities.
type Capability struct {
	// Type is the interface.
	Type reflect.Type
	// Required: part of Backend, which every store implements; only a
	// read-only foreign corpus may lack it. Otherwise a backend may leave
	// it out and the consumer takes the slow path.
	Required bool
	// ForeignOnly: only a foreign corpus has it.
	ForeignOnly bool
}

// Capabilities is every interface a consumer asserts a store or corpus
// value to, in the order of the table above.
var Capabilities = []Capability{
	{Type: reflect.TypeFor[Viewer](), Required: true},
	{Type: reflect.TypeFor[Transactor](), Required: true},
	{Type: reflect.TypeFor[CheckpointWriter](), Required: true},
	{Type: reflect.TypeFor[SubagentParentReader](), Required: true},
	{Type: reflect.TypeFor[SourceFormatReader](), Required: true},
	{Type: reflect.TypeFor[RefusalReader](), Required: true},
	{Type: reflect.TypeFor[TextReplacementReader](), Required: true},
	{Type: reflect.TypeFor[DescriptorReader](), Required: true},
	{Type: reflect.TypeFor[SubtreeReader]()},
	{Type: reflect.TypeFor[ChildrenPager]()},
	{Type: reflect.TypeFor[ChildListingReader]()},
	{Type: reflect.TypeFor[SubtreeListingReader]()},
	{Type: reflect.TypeFor[ColdChildListingReader]()},
	{Type: reflect.TypeFor[VerifiedBatchReader]()},
	{Type: reflect.TypeFor[ColdBatchReader]()},
	{Type: reflect.TypeFor[BatchAuditor]()},
	{Type: reflect.TypeFor[ColdVerdictReader]()},
	{Type: reflect.TypeFor[RegistryFoldRecorder]()},
	{Type: reflect.TypeFor[Unverifier]()},
	{Type: reflect.TypeFor[ChangeNotifier]()},
	{Type: reflect.TypeFor[UnofferedReader](), ForeignOnly: true},
	{Type: reflect.TypeFor[UsageReader]()},
	{Type: reflect.TypeFor[ResolvedRowReader]()},
	{Type: reflect.TypeFor[ResolvedRowWriter]()},
	{Type: reflect.TypeFor[CatalogViewReader]()},
	{Type: reflect.TypeFor[CatalogViewWriter]()},
	{Type: reflect.TypeFor[AsFoundReader](), ForeignOnly: true},
	{Type: reflect.TypeFor[SearchReader]()},
	{Type: reflect.TypeFor[HeaderBatchReader]()},
	{Type: reflect.TypeFor[PipelinedUpdater]()},
}

// HeaderBatchReader reads many sessions' headers in one query: what an
// import asks of a batch of sessions before it writes them.
type HeaderBatchReader interface {
	// HeadersOf returns the stored headers of those of ids the store
	// holds, by id.
	HeadersOf(ctx context.Context, ids []string) (map[string]session.Header, error)
}

// PipelinedUpdater is a store whose write transaction can hold back the
// writes whose results nobody waits for and send them together (a
// client–server store saves a round trip per statement; PostgreSQL's
// pipeline).
type PipelinedUpdater interface {
	// UpdatePipelined is Transactor.Update, except that a held-back write
	// that fails fails the whole transaction, even inside a nested Update
	// (a savepoint), which cannot undo it: use it where any failure of
	// the store ends the transaction, as an import's batch does.
	UpdatePipelined(ctx context.Context, fn func(tx Store) error) error
}
