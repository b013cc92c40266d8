package subagent

import (
	"bytes"
	"encoding/json"

	"github.com/dsh-project/dsh/internal/jsjson"
)

// object is a decoded JSON object as JavaScript holds it after JSON.parse:
// keys in property order, each with its raw value. The order matters because
// DSH reports the first unknown key it meets in Object.keys order.
type object struct {
	keys []string
	vals map[string]json.RawMessage
}

// decodeObject decodes valid JSON text that should be an object. ok is false
// when the text is some other JSON value.
func decodeObject(raw json.RawMessage) (obj object, ok bool) {
	if kindOf(raw) != kindObject {
		return object{}, false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil {
		return object{}, false
	}
	obj.vals = map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return object{}, false
		}
		key, isKey := tok.(string)
		if !isKey {
			return object{}, false
		}
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return object{}, false
		}
		// A repeated key keeps its first position and takes the last
		// value, as JSON.parse does.
		if _, seen := obj.vals[key]; !seen {
			obj.keys = append(obj.keys, key)
		}
		obj.vals[key] = val
	}
	obj.keys = jsjson.PropertyOrder(obj.keys)
	return obj, true
}

func (o object) get(key string) (json.RawMessage, bool) {
	v, ok := o.vals[key]
	return v, ok
}

// firstUnknown returns the first key, in property order, outside allowed.
func (o object) firstUnknown(allowed map[string]bool) (string, bool) {
	for _, k := range o.keys {
		if !allowed[k] {
			return k, true
		}
	}
	return "", false
}
