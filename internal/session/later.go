package session

import (
	"slices"

	"github.com/dsh-project/dsh/internal/jsjson"
)

// DSH's later session formats (docs/compatibility.md): versions 2, 3 and 4
// are read alongside format 0. dsh maps them onto the same logical model —
// a Header whose Version is the file's format version and whose SeedLength
// is the inherited-event cut — and validates each with the rules that the
// spec marks as seen in DSH's files. Constructs known only from research
// (developer/message, assistant/attempt, tool/ptc-dispatch, feedback/message-*)
// are not in the known-type lists below, so a log using them is a format
// refusal (UNSUPPORTED_FORMAT), never a guess.
const (
	MinLaterFormat = 2
	MaxLaterFormat = 4
)

// IsLaterFormat reports whether v is one of the later formats dsh reads.
func IsLaterFormat(v int64) bool { return v >= MinLaterFormat && v <= MaxLaterFormat }

// IsReadableFormat reports whether dsh reads session format version v.
func IsReadableFormat(v int64) bool { return v == FormatVersion || IsLaterFormat(v) }

// Event types of the later formats that format 0 does not have.
const (
	TypeSystemMessage = "system/message"   // V3+: the system prompt as a surface message
	TypeCatalog       = "subagent/catalog" // a parent's fact about a child it started
	TypeChunk         = "assistant/chunk"  // V0 only: gone from V2 on
)

// formatRules is what differs between the format versions for validation.
type formatRules struct {
	version int64
	// surface is the set of surface-eligible types.
	surface []string
	// replaceStart/replaceEnd name the keys of a replace surfaceOp.
	replaceStart, replaceEnd string
	// toolRole is the role a tool/result message carries.
	toolRole string
}

var (
	rulesV0 = formatRules{version: 0, surface: surfaceTypes, replaceStart: "start", replaceEnd: "end", toolRole: "user"}
	// V2 keeps V0's surface and replace form; the system prompt is still
	// part of request/header.
	rulesV2 = formatRules{version: 2, surface: surfaceTypes, replaceStart: "start", replaceEnd: "end", toolRole: "user"}
	// V3 adds system/message to the surface and renames the replace keys.
	rulesV3 = formatRules{version: 3, surface: append(slices.Clip(surfaceTypes), TypeSystemMessage), replaceStart: "startSeq", replaceEnd: "endSeq", toolRole: "user"}
	// V4 turns tool results into tool-role messages.
	rulesV4 = formatRules{version: 4, surface: rulesV3.surface, replaceStart: "startSeq", replaceEnd: "endSeq", toolRole: "tool"}
)

func rulesFor(version int64) formatRules {
	switch version {
	case 2:
		return rulesV2
	case 3:
		return rulesV3
	case 4:
		return rulesV4
	}
	return rulesV0
}

func (r formatRules) isSurface(t string) bool { return slices.Contains(r.surface, t) }

// isKnownType is KNOWN_SESSION_EVENT_TYPES of the format: format 0's list,
// without assistant/chunk from V2 on (deltas live in assistant/message),
// with subagent/catalog from V2 on and system/message from V3 on.
func (r formatRules) isKnownType(t string) bool {
	if r.version < MinLaterFormat {
		return knownTypes[t]
	}
	switch t {
	case TypeChunk:
		return false
	case TypeCatalog:
		return true
	case TypeSystemMessage:
		return r.version >= 3
	}
	return knownTypes[t]
}

// IsTaggedEndSeed reports whether e is the tagged inherited-prefix marker of
// a later format: session/end-seed with data.inherited === true. Untagged
// markers (data {}) never set the cut.
func IsTaggedEndSeed(e Event) bool {
	if e.Type != TypeEndSeed {
		return false
	}
	raw, ok := jsjson.Path(e.Data, "inherited")
	return ok && isTrue(raw)
}

// LaterFormatCut derives the cut of a later-format log: 0 when unseeded,
// else the seq of the last tagged end-seed marker. ok is false for a
// seeded log without a tagged marker (ValidateLog then reports it).
func LaterFormatCut(seeded bool, events []Event) (cut int64, ok bool) {
	if !seeded {
		return 0, true
	}
	for i := len(events) - 1; i >= 0; i-- {
		if IsTaggedEndSeed(events[i]) {
			return events[i].Seq, true
		}
	}
	return 0, false
}

// checkLineage is the later formats' lineage rule for the event at pos: an
// unseeded log holds no tagged marker; a seeded log's event at the cut is
// the tagged marker and none follows it.
func checkLineage(h Header, e Event, pos int64) *ValidationError {
	if !IsLaterFormat(h.Version) {
		return nil
	}
	tagged := IsTaggedEndSeed(e)
	switch {
	case !h.IsSeeded() && tagged:
		return failf(pos, RuleLineageMarker, "unseeded session %q contains a tagged session/end-seed at seq %d", h.ID, e.Seq)
	case h.IsSeeded() && pos == h.InheritedCut() && !tagged:
		return failf(pos, RuleLineageMarker, "seeded session %q has no tagged session/end-seed at its cut (seq %d)", h.ID, pos)
	case h.IsSeeded() && pos > h.InheritedCut() && tagged:
		return failf(pos, RuleLineageMarker, "seeded session %q has a tagged session/end-seed at seq %d after its cut %d", h.ID, e.Seq, h.InheritedCut())
	}
	return nil
}

// checkLineageEnd reports a seeded later-format log that ends before its
// tagged marker.
func checkLineageEnd(h Header, events []Event) *ValidationError {
	if !IsLaterFormat(h.Version) || !h.IsSeeded() || int64(len(events)) > h.InheritedCut() {
		return nil
	}
	return failf(int64(len(events)), RuleLineageMarker, "seeded session %q has no tagged session/end-seed marker", h.ID)
}

// checkSystemMessage validates a V3+ system/message: a system-role message
// with an id, a source kind and content.
func checkSystemMessage(e Event, pos int64) *ValidationError {
	fail := func(problem string) *ValidationError {
		return failf(pos, RuleSystemMessageShape, "session event at seq %d %s", e.Seq, problem)
	}
	msgRaw, ok := jsjson.Path(e.Data, "message")
	if !ok {
		return fail("lacks an identified message")
	}
	msg, ok := jsjson.SplitObject(msgRaw)
	if !ok || !nonEmptyString(fieldOr(msg, "id")) {
		return fail("lacks an identified message")
	}
	if role, ok := jsjson.StringValue(fieldOr(msg, "role")); !ok || role != "system" {
		return fail(`message must have role "system"`)
	}
	source, ok := jsjson.SplitObject(fieldOr(msg, "source"))
	if !ok || !nonEmptyString(fieldOr(source, "kind")) {
		return fail("message has invalid source")
	}
	if !isArray(fieldOr(msg, "content")) {
		return fail("message has invalid content")
	}
	return nil
}

// checkToolRoleResult validates a V4 tool/result message: role "tool", a
// tool source whose callId equals toolCallId, content an array, isError a
// boolean.
func checkToolRoleResult(msg jsjson.Object, fail func(string) *ValidationError) *ValidationError {
	source, _ := jsjson.SplitObject(fieldOr(msg, "source"))
	callID, ok := jsjson.StringValue(fieldOr(source, "callId"))
	if kind, _ := jsjson.StringValue(fieldOr(source, "kind")); kind != "tool" || !ok || callID == "" {
		return fail("message must have tool source")
	}
	if id, ok := jsjson.StringValue(fieldOr(msg, "toolCallId")); !ok || id != callID {
		return fail("message has mismatched tool call ids")
	}
	if !isArray(fieldOr(msg, "content")) {
		return fail("message has invalid content")
	}
	if v := string(trimJSON(fieldOr(msg, "isError"))); v != "true" && v != "false" {
		return fail("message must have a boolean isError")
	}
	return nil
}
