package session

import (
	"slices"
	"strconv"

	"github.com/dsh-project/dsh/internal/jsjson"
)

// NormalizeLegacy applies DSH's read-side conversions of older format-0
// records, in DSH's order, to a stored log before it is validated:
// turn/start loses its obsolete trigger, old turn/end reasons take their
// current shape, steering/message becomes user/message, and pre-identity
// messages get the wrapper shape with the id legacy-message:<session>:<seq>
// (a tool/result replacement inherits the id of the message it replaces).
// Storage is never rewritten; DSH applies these on every read.
//
// Events that need no conversion are returned unchanged (sharing their
// data); when none does, events itself is returned. A record that looks old
// but is malformed is a *ValidationError with rule legacy-shape.
func NormalizeLegacy(sessionID string, events []Event) ([]Event, error) {
	out := events
	copied := false
	// The message ids of the events before the current one, by seq, as
	// converted (the last event of a seq with an id wins). Only a legacy
	// tool/result replacement asks, so the index is built when one first
	// does and then kept up to date: no parse per event otherwise.
	var (
		messageIDs map[int64]string
		indexed    int
		current    int
	)
	messageID := func(seq int64) (string, bool) {
		if messageIDs == nil {
			messageIDs = map[int64]string{}
		}
		for ; indexed < current; indexed++ {
			if id, ok := eventMessageID(out[indexed]); ok {
				messageIDs[out[indexed].Seq] = id
			}
		}
		id, ok := messageIDs[seq]
		return id, ok
	}
	for i, e := range events {
		current = i
		converted, changed, err := convertLegacy(sessionID, e, int64(i), messageID)
		if err != nil {
			return nil, err
		}
		if changed {
			if !copied {
				out, copied = slices.Clone(events), true
			}
			out[i] = converted
		}
	}
	return out, nil
}

func convertLegacy(sessionID string, e Event, pos int64, messageID func(seq int64) (string, bool)) (Event, bool, *ValidationError) {
	if len(e.Data) == 0 {
		return e, false, nil // validation reports the missing data
	}
	switch e.Type {
	case TypeTurnStart, TypeTurnEnd, "steering/message", TypeUserMessage, TypeAssistantMsg, TypeToolResult:
	default:
		return e, false, nil // no other type has an older shape
	}
	malformed := func(t string) *ValidationError {
		return failf(pos, RuleLegacyShape, `session "%s" contains malformed pre-react-loop %s at seq %d`, sessionID, t, e.Seq)
	}
	data, isRecord := jsjson.SplitObject(e.Data)
	legacyID := func() []byte { return jsonString("legacy-message:" + sessionID + ":" + strconv.FormatInt(e.Seq, 10)) }
	switch e.Type {
	case TypeTurnStart:
		if !isRecord || !data.Has("trigger") {
			return e, false, nil
		}
		trigger, ok := jsjson.SplitObject(fieldOr(data, "trigger"))
		if !positiveTurn(data) || !data.HasOnlyKeys([]string{"turn", "trigger"}) || !ok || !nonEmptyString(fieldOr(trigger, "kind")) {
			return e, false, malformed(e.Type)
		}
		e.Data = newJSObject().set("turn", fieldOr(data, "turn")).bytes()
		return e, true, nil
	case TypeTurnEnd:
		if !isRecord {
			return e, false, nil
		}
		reason, reasonOK := jsjson.SplitObject(fieldOr(data, "reason"))
		kind, kindOK := jsjson.StringValue(fieldOr(reason, "kind"))
		if !positiveTurn(data) || !data.HasOnlyKeys([]string{"turn", "reason"}) || !reasonOK || !kindOK {
			return e, false, malformed(e.Type)
		}
		current, changed, ok := currentTurnEndReason(kind, reason)
		if !ok {
			return e, false, malformed(e.Type)
		}
		if !changed {
			return e, false, nil
		}
		e.Data = objectFrom(data).set("reason", current).bytes()
		return e, true, nil
	case "steering/message":
		if !isRecord {
			return e, false, malformed(e.Type)
		}
		_, _, turnOK := jsjson.SafeInteger(fieldOr(data, "turn"))
		if wrapped := fieldOr(data, "message"); turnOK && data.HasOnlyKeys([]string{"turn", "message"}) {
			if _, ok := jsjson.SplitObject(wrapped); ok {
				e.Type, e.Data = TypeUserMessage, compactOrNull(wrapped)
				return e, true, nil
			}
		}
		if !turnOK || !data.HasOnlyKeys([]string{"turn", "content", "source"}) {
			return e, false, malformed(e.Type)
		}
		msg := objectFrom(data).del("turn").set("id", legacyID()).set("role", []byte(`"user"`))
		e.Type, e.Data = TypeUserMessage, msg.bytes()
		return e, true, nil
	case TypeUserMessage:
		if !isRecord || data.Has("id") || data.Has("role") || data.Has("message") || !data.Has("content") || !data.Has("source") {
			return e, false, nil
		}
		e.Data = objectFrom(data).set("id", legacyID()).set("role", []byte(`"user"`)).bytes()
		return e, true, nil
	case TypeAssistantMsg:
		if !isRecord || data.Has("message") || !data.Has("content") || !data.Has("provenance") {
			return e, false, nil
		}
		source := newJSObject()
		if provenance, ok := jsjson.SplitObject(fieldOr(data, "provenance")); ok {
			source = objectFrom(provenance)
		}
		msg := newJSObject().
			set("id", legacyID()).
			set("role", []byte(`"assistant"`)).
			set("content", fieldOr(data, "content")).
			set("source", source.set("kind", []byte(`"model"`)).bytes())
		e.Data = objectFrom(data).del("content").del("provenance").set("message", msg.bytes()).bytes()
		return e, true, nil
	case TypeToolResult:
		if !isRecord || data.Has("message") || !data.Has("callId") || !data.Has("content") || !data.Has("isError") {
			return e, false, nil
		}
		callID := fieldOr(data, "callId")
		msg := newJSObject()
		if start, isReplace := replacementStart(e.SurfaceOp); !isReplace {
			msg.set("id", legacyID())
		} else if inherited, ok := messageID(start); ok {
			msg.set("id", jsonString(inherited))
		} // an unknown target leaves the id undefined, which JSON omits
		block := newJSObject().
			set("type", []byte(`"tool-result"`)).
			set("toolCallId", callID).
			set("content", fieldOr(data, "content")).
			set("isError", fieldOr(data, "isError"))
		msg.set("role", []byte(`"user"`)).
			set("content", append(append([]byte{'['}, block.bytes()...), ']')).
			set("source", newJSObject().set("kind", []byte(`"tool"`)).set("callId", callID).bytes())
		e.Data = objectFrom(data).del("callId").del("content").del("isError").set("message", msg.bytes()).bytes()
		return e, true, nil
	}
	return e, false, nil
}

// positiveTurn reports whether data.turn is a safe integer ≥ 1.
func positiveTurn(data jsjson.Object) bool {
	n, _, ok := jsjson.SafeInteger(fieldOr(data, "turn"))
	return ok && n >= 1
}

// currentTurnEndReason maps an old turn/end reason to its current shape.
// changed is false when the reason is already current (or an extension kind
// DSH passes through); ok is false when it is malformed.
func currentTurnEndReason(kind string, reason jsjson.Object) (current []byte, changed, ok bool) {
	kindOnly := reason.HasOnlyKeys([]string{"kind"})
	switch kind {
	case "completed", "blocked", "max-tokens", "interrupted":
		return nil, false, kindOnly
	case "aborted":
		if reason.Has("reason") {
			return nil, false, true
		}
		return []byte(`{"kind":"aborted","reason":{"kind":"legacy"}}`), true, kindOnly
	case "disposed":
		return []byte(`{"kind":"aborted","reason":{"kind":"disposed"}}`), true, kindOnly
	case "error":
		if reason.Has("error") {
			return nil, false, true
		}
		if step, _, ok := jsjson.SafeInteger(fieldOr(reason, "step")); !ok || step < 0 {
			return nil, false, false
		}
		if failure, isRecord := jsjson.SplitObject(fieldOr(reason, "failure")); isRecord &&
			reason.HasOnlyKeys([]string{"kind", "step", "failure"}) && validFailure(failure) {
			return newJSObject().set("kind", []byte(`"error"`)).set("error", fieldOr(reason, "failure")).bytes(), true, true
		}
		required := []string{"kind", "step", "message"}
		code, hasCode := reason.Get("code")
		if hasCode {
			required = append(required, "code")
		}
		message, messageOK := jsjson.StringValue(fieldOr(reason, "message"))
		codeText, codeOK := jsjson.StringValue(code)
		if !reason.HasOnlyKeys(required) || !messageOK || (hasCode && !codeOK) {
			return nil, false, false
		}
		if !hasCode {
			codeText = "UNKNOWN"
		}
		failure := newJSObject().set("message", jsonString(message)).set("code", jsonString(codeText))
		return newJSObject().set("kind", []byte(`"error"`)).set("error", failure.bytes()).bytes(), true, true
	}
	return nil, false, true
}

// validFailure checks an old LlmFailure record: message and code strings,
// optional numeric status/providerRetryAfterMs and string requestId, nothing
// else.
func validFailure(f jsjson.Object) bool {
	if !f.HasOnlyKeys([]string{"message", "code"}, "status", "providerRetryAfterMs", "requestId") {
		return false
	}
	_, msgOK := jsjson.StringValue(fieldOr(f, "message"))
	_, codeOK := jsjson.StringValue(fieldOr(f, "code"))
	if !msgOK || !codeOK {
		return false
	}
	for _, k := range []string{"status", "providerRetryAfterMs"} {
		if raw, present := f.Get(k); present {
			if _, ok := jsjson.NumberValue(raw); !ok {
				return false
			}
		}
	}
	if raw, present := f.Get("requestId"); present {
		if _, ok := jsjson.StringValue(raw); !ok {
			return false
		}
	}
	return true
}

// replacementStart reads surfaceOp.start of a replace marker, leaving
// malformed markers to validation.
func replacementStart(op []byte) (int64, bool) {
	o, ok := jsjson.SplitObject(op)
	if !ok {
		return 0, false
	}
	if kind, _ := jsjson.StringValue(fieldOr(o, "op")); kind != "replace" {
		return 0, false
	}
	start, isNum := jsjson.NumberValue(fieldOr(o, "start"))
	if !isNum {
		return 0, false
	}
	if !safeInteger(start) {
		return -1, true // a number, but never a stored seq: no id to inherit
	}
	return int64(start), true
}

// eventMessageID reads the id of the message an event carries, as DSH
// records it for later replacements.
func eventMessageID(e Event) (string, bool) {
	msg := []byte(e.Data)
	if e.Type != TypeUserMessage {
		var ok bool
		if msg, ok = jsjson.Path(e.Data, "message"); !ok {
			return "", false
		}
	}
	id, ok := jsjson.Path(msg, "id")
	if !ok {
		return "", false
	}
	return jsjson.StringValue(id)
}

func jsonString(s string) []byte { return jsjson.AppendString(nil, s) }

func compactOrNull(raw []byte) []byte {
	if v, err := jsjson.Compact(raw); err == nil {
		return v
	}
	return []byte("null")
}

// jsObject is a JavaScript object under construction, for the conversions
// that rebuild records with spreads: a new key goes last, a reassigned key
// keeps its place, and JSON.stringify writes array-index keys first.
type jsObject struct {
	keys []string
	vals map[string][]byte // JSON.stringify text of each value
}

func newJSObject() *jsObject { return &jsObject{vals: map[string][]byte{}} }

// objectFrom copies a parsed object (the effect of {...o}).
func objectFrom(o jsjson.Object) *jsObject {
	j := newJSObject()
	for _, k := range o.Keys() {
		j.set(k, fieldOr(o, k))
	}
	return j
}

func (j *jsObject) set(key string, raw []byte) *jsObject {
	if _, ok := j.vals[key]; !ok {
		j.keys = append(j.keys, key)
	}
	j.vals[key] = compactOrNull(raw)
	return j
}

func (j *jsObject) del(key string) *jsObject {
	if _, ok := j.vals[key]; ok {
		delete(j.vals, key)
		j.keys = slices.DeleteFunc(j.keys, func(k string) bool { return k == key })
	}
	return j
}

func (j *jsObject) bytes() []byte {
	order := jsjson.PropertyOrder(slices.Clone(j.keys))
	b := []byte{'{'}
	for i, k := range order {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsjson.AppendString(b, k)
		b = append(b, ':')
		b = append(b, j.vals[k]...)
	}
	return append(b, '}')
}
