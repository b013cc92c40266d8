package session

import (
	"path/filepath"
	"slices"
	"strconv"

	"github.com/dsh-project/dsh/internal/jsjson"
)

// knownTypes is DSH 0.1.0-rc.8's KNOWN_SESSION_EVENT_TYPES (48 entries). An
// event of any other type is a format refusal unless it is marked ignorable.
var knownTypes = map[string]bool{
	"agent-preset/selected": true, "agent/inbox/spliced": true, "approval/asked": true,
	"approval/decided": true, "approval/policy": true, "assistant/chunk": true,
	"assistant/message": true, "command/done": true, "command/run": true,
	"compaction/end": true, "compaction/prune": true, "compaction/start": true,
	"compaction/summary": true, "feedback/record": true, "goal/change": true,
	"hook/invoked": true, "hook/result": true, "llm/retry": true,
	"llm/retry-started": true, "permission/preset": true, "plan/mode": true,
	"request/context": true, "request/header": true, "sandbox/mode": true,
	"schedule/change": true, "session/end-seed": true, "session/title": true,
	"session/title-llm-request": true, "step/end": true, "step/start": true,
	"subagent/descriptor": true, "team/member": true, "team/message/delivered": true,
	"team/message/queued": true, "team/task": true, "todo/write": true,
	"tool-workflow/agent-end": true, "tool-workflow/agent-start": true,
	"tool-workflow/run-end": true, "tool-workflow/run-start": true, "tool/call": true,
	"tool/code-dispatch": true, "tool/code-dispatch-start": true, "tool/result": true,
	"turn/end": true, "turn/start": true, "user/message": true,
	"web/deepseek-search-llm-request": true,
}

// ValidateHeader applies DSH's header restore validation: a format version
// dsh reads (0, or a later format 2–4; any other is a format refusal), a non-empty id, createdAt a
// non-negative safe integer, cwd absolute, seedLength and delegationDepth
// non-negative safe integers, origin "subagent".
func ValidateHeader(h Header) error {
	if !IsReadableFormat(h.Version) {
		return headerFail(RuleFormatVersion, formatRefusal(h.ID, strconv.FormatInt(h.Version, 10), h.Version > FormatVersion))
	}
	if h.ID == "" {
		return headerFail(RuleHeaderID, "session header id must be a non-empty string")
	}
	if h.CreatedAt < 0 || h.CreatedAt > jsjson.MaxSafeInteger {
		return headerFail(RuleHeaderCreatedAt, "session header createdAt must be a non-negative safe integer")
	}
	if h.Cwd != nil && !filepath.IsAbs(*h.Cwd) {
		return headerFail(RuleHeaderCwd, `session header cwd must be an absolute path, got "`+*h.Cwd+`"`)
	}
	if h.SeedLength != nil && (*h.SeedLength < 0 || *h.SeedLength > jsjson.MaxSafeInteger) {
		return headerFail(RuleHeaderSeedLength, "session header seedLength must be a non-negative safe integer")
	}
	if h.Origin != nil && *h.Origin != OriginSubagent {
		return headerFail(RuleHeaderOrigin, `session header origin must be "subagent"`)
	}
	if h.DelegationDepth != nil && (*h.DelegationDepth < 0 || *h.DelegationDepth > jsjson.MaxSafeInteger) {
		return headerFail(RuleHeaderDelegationDepth, "session header delegationDepth must be a non-negative safe integer")
	}
	return nil
}

// Validator checks a session log one event at a time, exactly as DSH does
// when it restores a session, and keeps only the fold state the next event
// needs (the expected seq and the surface), so an append batch is checked in
// O(batch) once the state is restored. A Validator is not safe for
// concurrent use.
type Validator struct {
	header      Header
	rules       formatRules
	id          string
	next        int64
	nodes       []int64
	replaceGen  int64
	toolResults map[int64]string
}

// NewValidator starts validating the log of the session h describes. The
// header itself is checked by ValidateHeader, not here.
func NewValidator(h Header) *Validator {
	return &Validator{header: h, rules: rulesFor(h.Version), id: h.ID, toolResults: map[int64]string{}}
}

// Next is the seq the next event must carry.
func (v *Validator) Next() int64 { return v.next }

// Add validates e as the next event of the log and, when it passes, folds it
// in. A rejected event leaves the validator unchanged. The error is a
// *ValidationError.
func (v *Validator) Add(e Event) error {
	pos := v.next
	if err := checkEventPrechecks(v.rules, v.id, e, pos); err != nil {
		return err
	}
	if err := checkEnvelope(e, pos); err != nil {
		return err
	}
	if err := checkRequestHeader(e, pos); err != nil {
		return err
	}
	if e.Seq != pos {
		return failf(pos, RuleSeqContiguous, "session event seq %d is not contiguous; expected %d", e.Seq, pos)
	}
	if err := checkLineage(v.header, e, pos); err != nil {
		return err
	}
	plan, err := v.planSurface(e, pos)
	if err != nil {
		return err
	}
	v.apply(e.Seq, plan)
	v.next++
	return nil
}

func (v *Validator) apply(seq int64, plan surfacePlan) {
	if !plan.join {
		return
	}
	if plan.replace {
		for _, s := range v.nodes[plan.startIdx : plan.endIdx+1] {
			delete(v.toolResults, s)
		}
		v.nodes = slices.Replace(v.nodes, plan.startIdx, plan.endIdx+1, seq)
		v.replaceGen++
	} else {
		v.nodes = append(v.nodes, seq)
	}
	if plan.rest != "" {
		v.toolResults[seq] = plan.rest
	}
}

// checkEventPrechecks runs the checks DSH's read pipeline applies to every
// stored event before it constructs a session: data present and JSON, the
// always-rejected legacy vocabulary, message shapes, and the unknown-type
// refusal.
func checkEventPrechecks(r formatRules, id string, e Event, pos int64) *ValidationError {
	if e.Data == nil {
		return failf(pos, RuleEnvelopeData, "seed event at index %d has an invalid event envelope: data is absent", pos)
	}
	if !jsjson.Valid(e.Data) {
		return failf(pos, RuleEnvelopeData, "seed event at index %d has an invalid event envelope: data is not valid JSON", pos)
	}
	if err := checkLegacyVocabulary(id, e, pos); err != nil {
		return err
	}
	if err := checkMessageShape(r, e, pos); err != nil {
		return err
	}
	return checkKnownType(r, id, e, pos)
}

// IsKnownType reports whether typ is an event type DSH defines in some
// session format dsh reads.
func IsKnownType(typ string) bool {
	for _, r := range []formatRules{rulesV0, rulesV2, rulesV3, rulesV4} {
		if r.isKnownType(typ) {
			return true
		}
	}
	return false
}

func checkKnownType(r formatRules, id string, e Event, pos int64) *ValidationError {
	if r.isKnownType(e.Type) || e.Ignorable {
		return nil
	}
	return failf(pos, RuleUnknownType, `session "%s" contains event type "%s" (seq %d) unknown to this harness and not marked ignorable; refusing to interpret the log — it was likely written by a newer harness`, id, e.Type, e.Seq)
}

// checkEnvelope is the part of DSH's envelope check a typed Event can still
// fail: unknown keys and out-of-range seq/time. (A non-true ignorable or a
// non-integer seq cannot be decoded into an Event at all.)
func checkEnvelope(e Event, pos int64) *ValidationError {
	if len(e.UnknownKeys) > 0 {
		return failf(pos, RuleEnvelopeKeys, "seed event at index %d has an invalid event envelope: unknown key %q", pos, e.UnknownKeys[0])
	}
	if e.Seq < 0 || e.Seq > jsjson.MaxSafeInteger {
		return failf(pos, RuleEnvelopeSeq, "seed event at index %d has an invalid event envelope: seq %d is not a non-negative safe integer", pos, e.Seq)
	}
	if e.Time < -jsjson.MaxSafeInteger || e.Time > jsjson.MaxSafeInteger {
		return failf(pos, RuleEnvelopeTime, "seed event at index %d has an invalid event envelope: time %d is not a safe integer", pos, e.Time)
	}
	return nil
}

// ValidateLog validates a whole stored session as DSH restores it. Checks run
// in DSH's order, so a log with several problems reports the one DSH would:
// the header's format version, then the legacy vocabulary, message shapes and
// unknown types across the whole log, then the rest of the header, then each
// event's envelope, seq and surface in log order.
func ValidateLog(h Header, events []Event) error {
	if !IsReadableFormat(h.Version) {
		return ValidateHeader(h)
	}
	r := rulesFor(h.Version)
	for i, e := range events {
		if err := checkLegacyVocabulary(h.ID, e, int64(i)); err != nil {
			return err
		}
	}
	for i, e := range events {
		if e.Data == nil || !jsjson.Valid(e.Data) {
			continue // reported below, in log order, as an envelope failure
		}
		if err := checkMessageShape(r, e, int64(i)); err != nil {
			return err
		}
	}
	for i, e := range events {
		if err := checkKnownType(r, h.ID, e, int64(i)); err != nil {
			return err
		}
	}
	if err := ValidateHeader(h); err != nil {
		return err
	}
	v := NewValidator(h)
	for _, e := range events {
		if err := v.Add(e); err != nil {
			return err
		}
	}
	if err := checkLineageEnd(h, events); err != nil {
		return err
	}
	return nil
}
