// Package session is DSH's logical session model as dsh needs it: the immutable
// header, the event envelope, and (in sibling files) the validation DSH applies
// when it restores a session and the closers it appends to an interrupted turn.
//
// Event data is kept as raw JSON bytes and never round-tripped through Go maps:
// DSH writes keys in insertion order, and dsh must hand them back unchanged.
package session

import "encoding/json"

// FormatVersion is the only DSH session format version dsh reads and writes
// (what DSH 0.1.0-rc.8 writes).
const FormatVersion = 0

// OriginSubagent is the only value DSH allows in Header.Origin.
const OriginSubagent = "subagent"

// Header is DSH's SessionHeader. Optional fields are pointers: nil means the
// field is absent, which DSH distinguishes from a zero value (a seeded child
// with an empty inherited prefix has SeedLength 0, an unseeded one has nil).
type Header struct {
	Version   int64
	ID        string
	CreatedAt int64 // epoch milliseconds
	Cwd       *string
	// ParentSession is the direct parent (lineage); ordinary forks set it too.
	ParentSession *string
	// SeedLength is the exact inherited-event cut: the number of leading events
	// copied from the parent. nil = unseeded.
	SeedLength      *int64
	Origin          *string
	DelegationDepth *int64
	AgentPreset     *string
}

// IsSeeded reports whether the session started from an inherited prefix
// (possibly empty).
func (h Header) IsSeeded() bool { return h.SeedLength != nil }

// InheritedCut is the number of inherited events; every event with
// seq >= InheritedCut belongs to the session's own suffix.
func (h Header) InheritedCut() int64 {
	if h.SeedLength == nil {
		return 0
	}
	return *h.SeedLength
}

// IsSubagent reports whether the header marks a subagent child.
func (h Header) IsSubagent() bool { return h.Origin != nil && *h.Origin == OriginSubagent }

// Parent returns the parent session id, or "" when there is none.
func (h Header) Parent() string {
	if h.ParentSession == nil {
		return ""
	}
	return *h.ParentSession
}

// Depth is the delegation depth with DSH's default (absent means 0).
func (h Header) Depth() int64 {
	if h.DelegationDepth == nil {
		return 0
	}
	return *h.DelegationDepth
}

// Witness is the lifecycle witness of DSH's later listing revision: the nine
// header fields that must agree between an enumerated header and the header a
// cold read returns (missing equals missing). Two Witness values compare with ==.
type Witness struct {
	Version         int64
	ID              string
	CreatedAt       int64
	Cwd             optString
	ParentSession   optString
	IsSeeded        bool
	DelegationDepth optInt
	Origin          optString
	AgentPreset     optString
}

type optString struct {
	Set   bool
	Value string
}

type optInt struct {
	Set   bool
	Value int64
}

func ostr(p *string) optString {
	if p == nil {
		return optString{}
	}
	return optString{Set: true, Value: *p}
}

// Witness returns the header's lifecycle witness.
func (h Header) Witness() Witness {
	w := Witness{
		Version:       h.Version,
		ID:            h.ID,
		CreatedAt:     h.CreatedAt,
		Cwd:           ostr(h.Cwd),
		ParentSession: ostr(h.ParentSession),
		IsSeeded:      h.IsSeeded(),
		Origin:        ostr(h.Origin),
		AgentPreset:   ostr(h.AgentPreset),
	}
	if h.DelegationDepth != nil {
		w.DelegationDepth = optInt{Set: true, Value: *h.DelegationDepth}
	}
	return w
}

// WitnessRC8 is the lifecycle witness of DSH 0.1.0-rc.8 (the first revision
// of the listing note): seven header fields compared with strict equality,
// version, id, createdAt, cwd, parentSession, seedLength and
// delegationDepth; origin and agentPreset are not part of it. A later
// format's header (version 1 and up) records only whether the session is
// seeded, its cut being a marker in the log, so for those only the presence
// of seedLength is compared: an enumerated later header cannot know its cut.
type WitnessRC8 struct {
	Version         int64
	ID              string
	CreatedAt       int64
	Cwd             optString
	ParentSession   optString
	SeedLength      optInt
	DelegationDepth optInt
}

// WitnessRC8 returns the header's DSH 0.1.0-rc.8 lifecycle witness.
func (h Header) WitnessRC8() WitnessRC8 {
	w := WitnessRC8{
		Version:       h.Version,
		ID:            h.ID,
		CreatedAt:     h.CreatedAt,
		Cwd:           ostr(h.Cwd),
		ParentSession: ostr(h.ParentSession),
	}
	if h.SeedLength != nil {
		w.SeedLength.Set = true
		if h.Version == FormatVersion {
			w.SeedLength.Value = *h.SeedLength
		}
	}
	if h.DelegationDepth != nil {
		w.DelegationDepth = optInt{Set: true, Value: *h.DelegationDepth}
	}
	return w
}

// Event is one logical DSH session event.
type Event struct {
	Type string
	Seq  int64
	Time int64 // epoch ms; may go backwards
	Data json.RawMessage
	// SourceEventSeqs is meaningful only when HasSourceEventSeqs is set: an
	// empty list and an absent one mean different things to DSH.
	SourceEventSeqs    []int64
	HasSourceEventSeqs bool
	// SurfaceOp is the raw JSON of the surface operation ("append" or a replace
	// object); nil when absent.
	SurfaceOp json.RawMessage
	Ignorable bool
	// UnknownKeys lists envelope keys DSH does not define, as found when the
	// event was decoded. Validation rejects such an event; encoding drops them.
	UnknownKeys []string
}

// Well-known event types dsh reads or writes.
const (
	TypeDescriptor   = "subagent/descriptor"
	TypeEndSeed      = "session/end-seed"
	TypeTurnStart    = "turn/start"
	TypeTurnEnd      = "turn/end"
	TypeStepStart    = "step/start"
	TypeStepEnd      = "step/end"
	TypeUserMessage  = "user/message"
	TypeAssistantMsg = "assistant/message"
	TypeToolResult   = "tool/result"
	TypeToolCall     = "tool/call"
	TypeInboxSpliced = "agent/inbox/spliced"
	TypeApproval     = "approval/policy"
)
