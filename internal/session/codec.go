package session

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/dsh-project/dsh/internal/jsjson"
)

// MarshalJSON writes the event as DSH writes it: envelope keys in the order
// type, seq, time, data, sourceEventSeqs?, surfaceOp?, ignorable? (ignorable
// only when true), Data and SurfaceOp passed through byte for byte (only
// compacted if they carry whitespace). Unknown keys are dropped.
//
// The one exception is the tool/result closer DSH's crash repair writes for a
// recorded but unanswered call: DSH builds that event with surfaceOp before
// sourceEventSeqs, and such an event is recognisable by its message id
// prefix, so it is written in that order.
//
// Callers that need the exact bytes must call MarshalJSON directly:
// json.Marshal re-escapes <, > and & in a Marshaler's output.
func (e Event) MarshalJSON() ([]byte, error) {
	if e.Data == nil {
		return nil, fmt.Errorf("event %d (%s): data is absent", e.Seq, e.Type)
	}
	if !json.Valid(e.Data) {
		return nil, fmt.Errorf("event %d (%s): data is not valid JSON", e.Seq, e.Type)
	}
	data, err := compactJSON(e.Data)
	if err != nil {
		return nil, fmt.Errorf("event %d (%s): data: %w", e.Seq, e.Type, err)
	}
	var op []byte
	if e.SurfaceOp != nil {
		if !json.Valid(e.SurfaceOp) {
			return nil, fmt.Errorf("event %d (%s): surfaceOp is not valid JSON", e.Seq, e.Type)
		}
		if op, err = compactJSON(e.SurfaceOp); err != nil {
			return nil, fmt.Errorf("event %d (%s): surfaceOp: %w", e.Seq, e.Type, err)
		}
	}
	b := make([]byte, 0, len(data)+len(e.Type)+64)
	b = append(b, `{"type":`...)
	b = jsjson.AppendString(b, e.Type)
	b = append(b, `,"seq":`...)
	b = jsjson.AppendInt(b, e.Seq)
	b = append(b, `,"time":`...)
	b = jsjson.AppendInt(b, e.Time)
	b = append(b, `,"data":`...)
	b = append(b, data...)
	if isRepairToolResult(e) {
		b = appendSurfaceOp(b, op)
		b = appendSourceSeqs(b, e)
	} else {
		b = appendSourceSeqs(b, e)
		b = appendSurfaceOp(b, op)
	}
	if e.Ignorable {
		b = append(b, `,"ignorable":true`...)
	}
	return append(b, '}'), nil
}

func appendSourceSeqs(b []byte, e Event) []byte {
	if !e.HasSourceEventSeqs {
		return b
	}
	b = append(b, `,"sourceEventSeqs":[`...)
	for i, s := range e.SourceEventSeqs {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsjson.AppendInt(b, s)
	}
	return append(b, ']')
}

func appendSurfaceOp(b, op []byte) []byte {
	if op == nil {
		return b
	}
	b = append(b, `,"surfaceOp":`...)
	return append(b, op...)
}

// repairResultIDPrefix starts the message id of every tool/result closer
// DSH's crash repair synthesises; no live writer produces such an id.
const repairResultIDPrefix = "interrupted-tool-result-"

// isRepairToolResult reports whether e is a repair closer for a recorded
// call (the only closer that carries sourceEventSeqs, appended with the
// literal surfaceOp "append").
func isRepairToolResult(e Event) bool {
	if e.Type != TypeToolResult || !e.HasSourceEventSeqs || string(trimJSON(e.SurfaceOp)) != `"append"` {
		return false
	}
	id, ok := jsjson.Path(e.Data, "message", "id")
	if !ok {
		return false
	}
	s, ok := jsjson.StringValue(id)
	return ok && strings.HasPrefix(s, repairResultIDPrefix)
}

// UnmarshalJSON decodes one event object. Envelope keys DSH does not define
// are recorded in UnknownKeys (validation rejects them); the known keys must
// have their DSH types: type a string, seq and time safe integers (1.0 and 1e3
// count as integers, as in JavaScript), data present, sourceEventSeqs an
// array of safe integers, ignorable exactly true when present.
func (e *Event) UnmarshalJSON(b []byte) error {
	if !json.Valid(b) {
		return errors.New("event is not valid JSON")
	}
	raw := slices.Clone(trimJSON(b))
	o, ok := jsjson.SplitObject(raw)
	if !ok {
		return errors.New("event is not a JSON jsjson.Object")
	}
	var out Event
	var haveType, haveSeq, haveTime bool
	for _, m := range o {
		switch m.Key {
		case "type":
			s, ok := jsjson.StringValue(m.Value)
			if !ok {
				return errors.New(`event "type" is not a string`)
			}
			out.Type, haveType = s, true
		case "seq":
			n, _, ok := jsjson.SafeInteger(m.Value)
			if !ok {
				return fmt.Errorf(`event "seq" %s is not a safe integer`, m.Value)
			}
			out.Seq, haveSeq = n, true
		case "time":
			n, _, ok := jsjson.SafeInteger(m.Value)
			if !ok {
				return fmt.Errorf(`event "time" %s is not a safe integer`, m.Value)
			}
			out.Time, haveTime = n, true
		case "data":
			out.Data = json.RawMessage(slices.Clip(m.Value))
		case "sourceEventSeqs":
			seqs, err := decodeSourceSeqs(m.Value)
			if err != nil {
				return err
			}
			out.SourceEventSeqs, out.HasSourceEventSeqs = seqs, true
		case "surfaceOp":
			out.SurfaceOp = json.RawMessage(slices.Clip(m.Value))
		case "ignorable":
			if !isTrue(m.Value) {
				return fmt.Errorf(`event "ignorable" is %s; it must be exactly true when present`, m.Value)
			}
			out.Ignorable = true
		default:
			if !slices.Contains(out.UnknownKeys, m.Key) {
				out.UnknownKeys = append(out.UnknownKeys, m.Key)
			}
		}
	}
	switch {
	case !haveType:
		return errors.New(`event lacks "type"`)
	case !haveSeq:
		return errors.New(`event lacks "seq"`)
	case !haveTime:
		return errors.New(`event lacks "time"`)
	case out.Data == nil:
		return errors.New(`event lacks "data"`)
	}
	*e = out
	return nil
}

func decodeSourceSeqs(raw []byte) ([]int64, error) {
	elems, ok := jsjson.ArrayElements(raw)
	if !ok {
		return nil, fmt.Errorf(`event "sourceEventSeqs" %s is not an array`, raw)
	}
	seqs := make([]int64, len(elems))
	for i, el := range elems {
		n, _, ok := jsjson.SafeInteger(el)
		if !ok {
			return nil, fmt.Errorf(`event "sourceEventSeqs" element %s is not a safe integer`, el)
		}
		seqs[i] = n
	}
	return seqs, nil
}

// MarshalJSONL returns the JSONL header line (without the newline) exactly as
// DSH's JSONL backend writes it: keys type, version, id, createdAt, cwd?,
// parentSession?, seedLength? (later formats: isSeeded, always), origin?,
// delegationDepth (always; 0 when absent), agentPreset?.
func (h Header) MarshalJSONL() []byte {
	b := make([]byte, 0, 160)
	b = append(b, `{"type":"session","version":`...)
	b = jsjson.AppendInt(b, h.Version)
	b = append(b, `,"id":`...)
	b = jsjson.AppendString(b, h.ID)
	b = append(b, `,"createdAt":`...)
	b = jsjson.AppendInt(b, h.CreatedAt)
	if h.Cwd != nil {
		b = append(b, `,"cwd":`...)
		b = jsjson.AppendString(b, *h.Cwd)
	}
	if h.ParentSession != nil {
		b = append(b, `,"parentSession":`...)
		b = jsjson.AppendString(b, *h.ParentSession)
	}
	switch {
	case IsLaterFormat(h.Version):
		// Later formats carry lineage as isSeeded on every header; the cut
		// is the tagged end-seed marker in the log.
		b = append(b, `,"isSeeded":`...)
		b = strconv.AppendBool(b, h.IsSeeded())
	case h.SeedLength != nil:
		b = append(b, `,"seedLength":`...)
		b = jsjson.AppendInt(b, *h.SeedLength)
	}
	if h.Origin != nil {
		b = append(b, `,"origin":`...)
		b = jsjson.AppendString(b, *h.Origin)
	}
	b = append(b, `,"delegationDepth":`...)
	b = jsjson.AppendInt(b, h.Depth())
	if h.AgentPreset != nil {
		b = append(b, `,"agentPreset":`...)
		b = jsjson.AppendString(b, *h.AgentPreset)
	}
	return append(b, '}')
}

// notAHeader is the JSONL backend's corruption text for a first line that
// fails the header shape check.
const notAHeader = "first line is not a session header"

// ParseHeaderJSON reads a JSONL header line with DSH's rules: a numeric
// version other than 0 is a format refusal before anything else is checked;
// then the shape check (type "session", numeric version, string id,
// createdAt and delegationDepth non-negative safe integers and not -0, origin
// absent or "subagent", agentPreset absent or a string); then the retired
// policy fields are rejected. Unknown keys are dropped. cwd, parentSession and
// seedLength are left to ValidateHeader except where Go cannot hold the value
// at all (a non-string cwd, a fractional seedLength), which fails here with
// ValidateHeader's message.
func ParseHeaderJSON(line []byte) (Header, error) {
	if !json.Valid(line) {
		return Header{}, headerFail(RuleHeaderShape, notAHeader+": not valid JSON")
	}
	o, ok := jsjson.SplitObject(line)
	if !ok {
		return Header{}, headerFail(RuleHeaderShape, notAHeader+": not a JSON jsjson.Object")
	}
	version, hasVersion := o.Get("version")
	if v, isNum := jsjson.NumberValue(version); hasVersion && isNum && v != FormatVersion {
		id, hasID := o.Get("id")
		return Header{}, headerFail(RuleFormatVersion, formatRefusal(jsString(id, hasID), jsString(version, true), v > FormatVersion))
	}
	var h Header
	if s, ok := jsjson.StringValue(fieldOr(o, "type")); !ok || s != "session" {
		return Header{}, headerFail(RuleHeaderShape, notAHeader+`: type is not "session"`)
	}
	if _, ok := jsjson.NumberValue(version); !ok {
		return Header{}, headerFail(RuleHeaderShape, notAHeader+": version is not a number")
	}
	h.Version = FormatVersion
	if h.ID, ok = jsjson.StringValue(fieldOr(o, "id")); !ok {
		return Header{}, headerFail(RuleHeaderShape, notAHeader+": id is not a string")
	}
	createdAt := fieldOr(o, "createdAt")
	if h.CreatedAt, _, ok = jsjson.SafeInteger(createdAt); !ok || h.CreatedAt < 0 || isNegativeZero(createdAt) {
		return Header{}, headerFail(RuleHeaderShape, notAHeader+": createdAt is not a non-negative safe integer")
	}
	depthRaw := fieldOr(o, "delegationDepth")
	depth, _, ok := jsjson.SafeInteger(depthRaw)
	if !ok || depth < 0 || isNegativeZero(depthRaw) {
		return Header{}, headerFail(RuleHeaderShape, notAHeader+": delegationDepth is not a non-negative safe integer")
	}
	h.DelegationDepth = &depth
	if raw, present := o.Get("origin"); present {
		s, ok := jsjson.StringValue(raw)
		if !ok || s != OriginSubagent {
			return Header{}, headerFail(RuleHeaderShape, notAHeader+`: origin is not "subagent"`)
		}
		h.Origin = &s
	}
	if raw, present := o.Get("agentPreset"); present {
		s, ok := jsjson.StringValue(raw)
		if !ok {
			return Header{}, headerFail(RuleHeaderShape, notAHeader+": agentPreset is not a string")
		}
		h.AgentPreset = &s
	}
	if o.Has("sandboxMode") || o.Has("approvalPolicy") {
		return Header{}, headerFail(RuleHeaderRetiredFields, "session header uses retired policy baseline fields")
	}
	if raw, present := o.Get("cwd"); present {
		s, ok := jsjson.StringValue(raw)
		if !ok {
			return Header{}, headerFail(RuleHeaderCwd, "session header cwd must be a string")
		}
		h.Cwd = &s
	}
	if raw, present := o.Get("parentSession"); present {
		s, ok := jsjson.StringValue(raw)
		if !ok {
			return Header{}, headerFail(RuleHeaderParentSession, "session header parentSession must be a string")
		}
		h.ParentSession = &s
	}
	if raw, present := o.Get("seedLength"); present {
		n, _, ok := jsjson.SafeInteger(raw)
		if !ok {
			return Header{}, headerFail(RuleHeaderSeedLength, "session header seedLength must be a non-negative safe integer")
		}
		h.SeedLength = &n
	}
	return h, nil
}

// fieldOr returns the value of key, or nil (which no parser accepts) when
// the key is absent.
func fieldOr(o jsjson.Object, key string) []byte {
	v, _ := o.Get(key)
	return v
}

// formatRefusal is DSH's direction-aware text for a log whose format version
// this build does not read.
func formatRefusal(id, version string, newer bool) string {
	if newer {
		return fmt.Sprintf("session \"%s\" uses log format v%s, but this harness reads only v%d and v%d–v%d: the log was written by a newer harness — upgrade the harness to open it", id, version, FormatVersion, MinLaterFormat, MaxLaterFormat)
	}
	return fmt.Sprintf("session \"%s\" uses log format v%s, older than the supported v%d, and this build ships no upgrade path for it", id, version, FormatVersion)
}
