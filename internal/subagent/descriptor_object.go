package subagent

import (
	"encoding/json"
	"slices"

	"github.com/dsh-project/dsh/internal/jsjson"
)

// object is a decoded JSON object as JavaScript holds it after JSON.parse:
// each key once, at the position of its first occurrence, with the raw text
// of its last value. The order matters because DSH reports the first unknown
// key it meets in Object.keys order (see firstUnknown).
type object struct {
	members []member
}

type member struct {
	key string
	val json.RawMessage
}

// decodeObject decodes JSON text that should be an object; raw must be
// valid JSON (ParseDescriptor checks the payload once, and every value
// inside valid JSON is valid). ok is false when the text is some other JSON
// value.
//
// It walks the text by hand rather than through encoding/json's tokens: a
// cold listing parses one descriptor per child, and the token decoder
// allocates per token (and builds a syntax error for every value it ends).
// Validity is already established, so only the structure is followed.
//
// The members are appended to buf (which may be nil), so that a caller can
// hold them in an array of its own.
func decodeObject(raw json.RawMessage, buf []member) (obj object, ok bool) {
	if kindOf(raw) != kindObject {
		return object{}, false
	}
	i := skipSpace(raw, 0) + 1 // past '{'
	obj.members = buf
	for {
		i = skipSpace(raw, i)
		switch raw[i] {
		case '}':
			return obj, true
		case ',':
			i = skipSpace(raw, i+1)
		}
		end := stringEnd(raw, i)
		key, ok := knownKey(raw[i+1 : end-1])
		if !ok {
			if key, ok = stringValue(raw[i:end]); !ok {
				return object{}, false
			}
		}
		i = skipSpace(raw, end) + 1 // past ':'
		i = skipSpace(raw, i)
		end = valueEnd(raw, i)
		// A repeated key keeps its first position and takes the last
		// value, as JSON.parse does.
		if k := obj.index(key); k >= 0 {
			obj.members[k].val = raw[i:end]
		} else {
			obj.members = append(obj.members, member{key: key, val: raw[i:end]})
		}
		i = end
	}
}

// knownKey returns the key a descriptor may hold whose quoted text is
// exactly lit, without allocating: every payload repeats these.
func knownKey(lit []byte) (string, bool) {
	switch string(lit) {
	case "version":
		return "version", true
	case "mode":
		return "mode", true
	case "provider":
		return "provider", true
	case "label":
		return "label", true
	case "agentProvider":
		return "agentProvider", true
	case "agentModel":
		return "agentModel", true
	case "agentReasoningEffort":
		return "agentReasoningEffort", true
	case "persona":
		return "persona", true
	case "toolFilter":
		return "toolFilter", true
	case "allow":
		return "allow", true
	case "deny":
		return "deny", true
	}
	return "", false
}

func (o object) index(key string) int {
	for k := range o.members {
		if o.members[k].key == key {
			return k
		}
	}
	return -1
}

func (o object) get(key string) (json.RawMessage, bool) {
	if k := o.index(key); k >= 0 {
		return o.members[k].val, true
	}
	return nil, false
}

// firstUnknown returns the first key, in property order, outside allowed.
func (o object) firstUnknown(allowed map[string]bool) (string, bool) {
	if !slices.ContainsFunc(o.members, func(m member) bool { return !allowed[m.key] }) {
		return "", false // the usual case: no order to compute
	}
	keys := make([]string, len(o.members))
	for k, m := range o.members {
		keys[k] = m.key
	}
	for _, k := range jsjson.PropertyOrder(keys) {
		if !allowed[k] {
			return k, true
		}
	}
	return "", false
}

// skipSpace returns the index of the first non-whitespace byte at or after i.
func skipSpace(raw []byte, i int) int {
	for i < len(raw) {
		switch raw[i] {
		case ' ', '\t', '\r', '\n':
			i++
		default:
			return i
		}
	}
	return i
}

// stringEnd returns the index just past the string starting at raw[i] (a
// quote) in valid JSON text.
func stringEnd(raw []byte, i int) int {
	for i++; i < len(raw); i++ {
		switch raw[i] {
		case '\\':
			i++ // the escaped byte cannot end the string
		case '"':
			return i + 1
		}
	}
	return i
}

// valueEnd returns the index just past the value starting at raw[i] in
// valid JSON text.
func valueEnd(raw []byte, i int) int {
	switch raw[i] {
	case '"':
		return stringEnd(raw, i)
	case '{', '[':
		depth := 0
		for i < len(raw) {
			switch raw[i] {
			case '"':
				i = stringEnd(raw, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	}
	// A number or literal runs to the next delimiter.
	for i < len(raw) {
		switch raw[i] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			return i
		}
		i++
	}
	return i
}
