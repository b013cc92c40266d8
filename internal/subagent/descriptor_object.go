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
	i := jsjson.SkipSpace(raw, 0) + 1 // past '{'
	obj.members = buf
	for {
		i = jsjson.SkipSpace(raw, i)
		switch raw[i] {
		case '}':
			return obj, true
		case ',':
			i = jsjson.SkipSpace(raw, i+1)
		}
		end := jsjson.StringEnd(raw, i)
		key, ok := knownKey(raw[i+1 : end-1])
		if !ok {
			if key, ok = stringValue(raw[i:end]); !ok {
				return object{}, false
			}
		}
		i = jsjson.SkipSpace(raw, end) + 1 // past ':'
		i = jsjson.SkipSpace(raw, i)
		end = jsjson.ValueEnd(raw, i)
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
