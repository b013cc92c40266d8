// Package diagnose is dsh's read-only audit of a session store. For every
// examined session it reports the catalog row `dsh list` shows for it and
// the findings that explain that row or point at damage: descriptors that
// make a child corrupt, logs a reader cannot read or has to cut, crashed
// turns and leases, projection checkpoints that disagree with their logs,
// and children the catalog shows as continuable that resume would refuse.
//
// The audit runs in one read transaction of the store (a consistent
// snapshot) and never writes, repairs or expires anything. It streams: one
// session's log is in memory at a time.
package diagnose

import (
	"fmt"
	"strings"
)

// Severity ranks a finding. The order matters: --fail-on picks a threshold.
type Severity int

// Severities, lowest first.
const (
	Info Severity = iota
	Warning
	Error
)

var severityNames = [...]string{Info: "info", Warning: "warning", Error: "error"}

func (s Severity) String() string {
	if s < Info || s > Error {
		return fmt.Sprintf("Severity(%d)", int(s))
	}
	return severityNames[s]
}

// ParseSeverity reads a severity name (info, warning, error).
func ParseSeverity(name string) (Severity, error) {
	for s, n := range severityNames {
		if n == name {
			return Severity(s), nil
		}
	}
	return 0, fmt.Errorf("unknown severity %q (want %s)", name, strings.Join(severityNames[:], ", "))
}

// Code is a finding's stable identifier. Never rename one: CI jobs match on
// them.
type Code string

// The finding codes. Each has one fixed severity (see Severity).
const (
	// DescriptorMissing: a subagent-origin session with no
	// subagent/descriptor event at all (list: corrupt; resume: refused).
	DescriptorMissing Code = "DESCRIPTOR_MISSING"
	// DescriptorMalformed: an own-suffix descriptor that does not parse;
	// the detail is the parse message.
	DescriptorMalformed Code = "DESCRIPTOR_MALFORMED"
	// DescriptorUnsupportedVersion: an own-suffix descriptor whose version
	// is a number other than 2 or 3.
	DescriptorUnsupportedVersion Code = "DESCRIPTOR_UNSUPPORTED_VERSION"
	// DescriptorMultiple: more than one descriptor in the own suffix; the
	// detail says whether list (the last) and resume (the first) disagree.
	DescriptorMultiple Code = "DESCRIPTOR_MULTIPLE"
	// DescriptorAncestorOnly: a seeded child whose only descriptors are
	// the ancestor's copies in its inherited seed.
	DescriptorAncestorOnly Code = "DESCRIPTOR_ANCESTOR_ONLY"
	// LogUnreadable: the log fails DSH's validation or has a corrupt
	// committed row; a cold read fails (list: unavailable).
	LogUnreadable Code = "LOG_UNREADABLE"
	// UnsupportedFormat: a session of a DSH corpus read in place whose log
	// is in a format (version, or a construct of one) dsh does not read;
	// the detail names the version and the file (list: unavailable).
	UnsupportedFormat Code = "UNSUPPORTED_FORMAT"
	// LogTornTail: the log ends in rows a reader cuts off (resume's repair
	// deletes them).
	LogTornTail Code = "LOG_TORN_TAIL"
	// TurnInterrupted: the last turn has no turn/end (resume appends
	// DSH's closing events first).
	TurnInterrupted Code = "TURN_INTERRUPTED"
	// SeqGap: seqs missing from the stored rows.
	SeqGap Code = "SEQ_GAP"
	// OrphanParent: the parent session does not exist, or a
	// subagent-origin session names no parent.
	OrphanParent Code = "ORPHAN_PARENT"
	// DepthInconsistent: a subagent child's delegationDepth is not its
	// parent's plus one.
	DepthInconsistent Code = "DEPTH_INCONSISTENT"
	// LeaseStale: an expired lease left by a holder that crashed or hung.
	LeaseStale Code = "LEASE_STALE"
	// CacheStale: the projection checkpoint disagrees with a fold of the
	// log (it would serve wrong state).
	CacheStale Code = "CACHE_STALE"
	// CacheForeign: the checkpoint belongs to another lifecycle of the id
	// (readers ignore it).
	CacheForeign Code = "CACHE_FOREIGN"
	// CachePoisoned: the checkpoint does not decode (readers ignore it).
	CachePoisoned Code = "CACHE_POISONED"
	// NotResumable: the catalog shows a continuable child that resume
	// would refuse; the detail is resume's reason.
	NotResumable Code = "NOT_RESUMABLE"
	// LifecycleMismatch: the header a cold read returns is not the
	// enumerated one (list: corrupt).
	LifecycleMismatch Code = "LIFECYCLE_MISMATCH"
	// UnitFailed: the projection fold fails on the log or the live
	// holder reported a unit failure (list: corrupt).
	UnitFailed Code = "UNIT_FAILED"
	// HeaderUnreadable: the corpus holds a session whose header cannot be
	// read, is refused, or names an id another file names too; no listing
	// shows it (a foreign corpus read in place, or a store's record of
	// such a session an import refused).
	HeaderUnreadable Code = "HEADER_UNREADABLE"
	// UnknownSession: an id or parent named on the command line does not
	// exist (only with --no-strict; otherwise it is exit status 2).
	UnknownSession Code = "UNKNOWN_SESSION"

	// The catalog cross-checks (catalog.go): a parent's own subagent/catalog
	// facts, DSH 0.1.7's authority, against the sessions, rc.8's. They run
	// in every profile wherever a parent has catalog facts or is format V2+.

	// CatalogFactMalformed: an own catalog fact of the parent that does
	// not parse (wrong type, missing or extra key, an invalid combination);
	// DSH 0.1.7+ cannot read the parent at all.
	CatalogFactMalformed Code = "CATALOG_FACT_MALFORMED"
	// CatalogFactUnsupportedVersion: an own catalog fact whose version is
	// not one DSH reads; DSH 0.1.7+ cannot read the parent.
	CatalogFactUnsupportedVersion Code = "CATALOG_FACT_UNSUPPORTED_VERSION"
	// CatalogDuplicateChild: two own facts of the parent name one child;
	// DSH refuses such a V4 log at open (and the V3->V4 back-fill refuses
	// an older one).
	CatalogDuplicateChild Code = "CATALOG_DUPLICATE_CHILD"
	// CatalogBackfillRefused: the V3->V4 back-fill DSH 0.1.7+ runs on a
	// V0-V3 parent refuses because of this child's evidence (conflicting
	// facts, a descriptor the converter refuses): after an upgrade DSH
	// cannot read the parent.
	CatalogBackfillRefused Code = "CATALOG_BACKFILL_REFUSED"
	// CatalogChildMissing: the parent's catalog names a child with no
	// session (DSH 0.1.7: an unavailable row).
	CatalogChildMissing Code = "CATALOG_CHILD_MISSING"
	// CatalogChildUncataloged: a subagent session its parent's catalog
	// does not name (invisible to DSH 0.1.7+).
	CatalogChildUncataloged Code = "CATALOG_CHILD_UNCATALOGED"
	// CatalogMismatch: the catalog's childCreatedAt, mode or label for a
	// child disagrees with the child's header or descriptor.
	CatalogMismatch Code = "CATALOG_MISMATCH"
	// CatalogModeUnknown: the catalog entry of a child has mode "unknown"
	// (written, or made by the back-fill): DSH 0.1.7 lists it as
	// unsupported.
	CatalogModeUnknown Code = "CATALOG_MODE_UNKNOWN"
	// EventTextReplaced: events of the log were read from text holding
	// bytes that are not UTF-8 (a JSONL line, a schema-17 TEXT column),
	// each ill-formed sequence replaced with U+FFFD as DSH's lenient
	// decoding does; the original bytes are not kept. In place, or as the
	// import that stored the log recorded it.
	EventTextReplaced Code = "EVENT_TEXT_REPLACED"
)

// codeSeverity is each code's fixed severity, in documentation order.
var codeSeverity = []struct {
	code     Code
	severity Severity
}{
	{DescriptorMissing, Error},
	{DescriptorMalformed, Error},
	{DescriptorUnsupportedVersion, Error},
	{DescriptorAncestorOnly, Error},
	{DescriptorMultiple, Warning},
	{HeaderUnreadable, Error},
	{LogUnreadable, Error},
	{UnsupportedFormat, Error},
	{SeqGap, Error},
	{LogTornTail, Warning},
	{TurnInterrupted, Info},
	{LifecycleMismatch, Error},
	{UnitFailed, Error},
	{NotResumable, Error},
	{OrphanParent, Warning},
	{DepthInconsistent, Warning},
	{LeaseStale, Warning},
	{CacheStale, Error},
	{CachePoisoned, Warning},
	{CacheForeign, Info},
	{UnknownSession, Error},
	// Added after UNKNOWN_SESSION: byCode's keys are in this order, and
	// the contract only ever adds keys at the end.
	{CatalogFactMalformed, Error},
	{CatalogFactUnsupportedVersion, Error},
	{CatalogDuplicateChild, Error},
	{CatalogBackfillRefused, Error},
	{CatalogChildMissing, Error},
	{CatalogChildUncataloged, Warning},
	{CatalogMismatch, Warning},
	{CatalogModeUnknown, Warning},
	{EventTextReplaced, Warning},
}

// Codes returns every finding code in documentation order.
func Codes() []Code {
	out := make([]Code, len(codeSeverity))
	for i, c := range codeSeverity {
		out[i] = c.code
	}
	return out
}

// Severity is the code's fixed severity.
func (c Code) Severity() Severity {
	for _, cs := range codeSeverity {
		if cs.code == c {
			return cs.severity
		}
	}
	return Error
}

// Finding is one problem with one session.
type Finding struct {
	Code     Code
	Severity Severity
	// SessionID is the session concerned; ParentID its parentSession
	// (nil when the header has none).
	SessionID string
	ParentID  *string
	// Seq is the event the finding concerns, nil when it concerns no
	// single event.
	Seq    *int64
	Detail string
}

// RowKind is what `dsh list` shows for a session.
type RowKind string

// Row kinds. Corrupt and Unavailable are the diagnostic rows' reasons.
const (
	RowChild       RowKind = "child"
	RowCorrupt     RowKind = "corrupt"
	RowUnavailable RowKind = "unavailable"
	// RowOmitted: a running child still in its creation window.
	RowOmitted RowKind = "omitted"
	// RowNotListed: no listing of its parent has a row for it (not a
	// subagent-origin child of a parent; under --dsh-compat 0.1.7, not in
	// its parent's catalog).
	RowNotListed RowKind = "notListed"
	// RowUnsupported: under --dsh-compat 0.1.7, a catalog entry of mode
	// "unknown" (DSH 0.1.7's fifth outcome).
	RowUnsupported RowKind = "unsupported"
)

// RowKinds lists the row kinds in summary order (added kinds last: the
// summary's keys only grow at the end).
func RowKinds() []RowKind {
	return []RowKind{RowChild, RowCorrupt, RowUnavailable, RowOmitted, RowNotListed, RowUnsupported}
}
