package jsjson

import (
	"bytes"
	"unicode/utf8"
)

// The one reader of JSON objects as DSH's JavaScript holds them after
// JSON.parse, without building Go maps: ParseObject validates and splits,
// SplitObject and AppendObject split text already known to be valid (a
// stored record dsh validated when it was written, a member of a validated
// value), and every reader asks the result the same way. Lookups are exact
// (encoding/json matches struct fields case-insensitively), a duplicated
// key resolves to its last value and keeps the place of its first, and keys
// enumerate in JavaScript's property order.
//
// The splitters stay within bounds on any input, so text that is not valid
// can only produce a "not an object" answer or odd members, never a panic.

// Object is a JSON object's members in text order, duplicates kept.
type Object []Member

// Get returns the value JSON.parse keeps for key: the last occurrence.
func (o Object) Get(key string) ([]byte, bool) {
	for i := len(o) - 1; i >= 0; i-- {
		if o[i].Key == key {
			return o[i].Value, true
		}
	}
	return nil, false
}

// Has reports whether key is present.
func (o Object) Has(key string) bool {
	_, ok := o.Get(key)
	return ok
}

// Keys returns the distinct keys in the order JavaScript enumerates them
// (Object.keys).
func (o Object) Keys() []string {
	seen := make(map[string]bool, len(o))
	keys := make([]string, 0, len(o))
	for _, m := range o {
		if !seen[m.Key] {
			seen[m.Key] = true
			keys = append(keys, m.Key)
		}
	}
	return PropertyOrder(keys)
}

// HasOnlyKeys reports whether every key is in required or optional and
// every required key is present.
func (o Object) HasOnlyKeys(required []string, optional ...string) bool {
	for _, m := range o {
		if !contains(required, m.Key) && !contains(optional, m.Key) {
			return false
		}
	}
	for _, k := range required {
		if !o.Has(k) {
			return false
		}
	}
	return true
}

// HasExactKeys reports whether the distinct key set is exactly keys.
func (o Object) HasExactKeys(keys ...string) bool {
	return o.HasOnlyKeys(keys) && len(o.Keys()) == len(keys)
}

// FirstUnknown returns the first key outside allowed in property order:
// the key DSH names when it rejects an unknown field.
func (o Object) FirstUnknown(allowed map[string]bool) (string, bool) {
	unknown := false
	for _, m := range o {
		if !allowed[m.Key] {
			unknown = true
			break
		}
	}
	if !unknown {
		return "", false // the usual case: no order to compute
	}
	for _, k := range o.Keys() {
		if !allowed[k] {
			return k, true
		}
	}
	return "", false
}

func contains(list []string, s string) bool {
	for _, k := range list {
		if k == s {
			return true
		}
	}
	return false
}

// trim drops the JSON whitespace around a value.
func trim(raw []byte) []byte {
	i, j := 0, len(raw)
	for i < j && isSpace(raw[i]) {
		i++
	}
	for j > i && isSpace(raw[j-1]) {
		j--
	}
	return raw[i:j]
}

// SplitObject splits valid JSON text into its members; ok is false when it
// is not an object. A member's Canonical is false: only ParseObject, which
// reads every byte, knows.
func SplitObject(raw []byte) (Object, bool) {
	// The members are gathered on the stack and copied out once at their
	// final size: one allocation per object, not one per doubling.
	var buf [8]Member
	o, ok := AppendObject(buf[:0], raw, nil)
	if !ok {
		return nil, false
	}
	out := make(Object, len(o))
	copy(out, o)
	return out, true
}

// AppendObject is SplitObject appending to dst, so that a caller can hold
// the members in an array of its own; a key whose text is exactly one of
// known takes that string instead of a copy (readers of one record shape
// meet the same few keys in every record).
func AppendObject(dst Object, raw []byte, known []string) (Object, bool) {
	raw = trim(raw)
	if len(raw) < 2 || raw[0] != '{' {
		return nil, false
	}
	o := dst
	i := SkipSpace(raw, 1)
	if i < len(raw) && raw[i] == '}' {
		if o == nil {
			o = Object{} // present and empty, not absent
		}
		return o, true
	}
	for i < len(raw) {
		if raw[i] != '"' {
			return nil, false
		}
		end := StringEnd(raw, i)
		key, ok := knownKey(raw[i:end], known)
		if !ok {
			if key, ok = StringValue(raw[i:end]); !ok {
				return nil, false
			}
		}
		i = SkipSpace(raw, end)
		if i >= len(raw) || raw[i] != ':' {
			return nil, false
		}
		i = SkipSpace(raw, i+1)
		vend := ValueEnd(raw, i)
		o = append(o, Member{Key: key, Value: raw[i:vend]})
		i = SkipSpace(raw, vend)
		if i >= len(raw) {
			return nil, false
		}
		if raw[i] == '}' {
			return o, true
		}
		if raw[i] != ',' {
			return nil, false
		}
		i = SkipSpace(raw, i+1)
	}
	return nil, false
}

// knownKey returns the entry of known whose quoted text is exactly lit,
// without allocating.
func knownKey(lit []byte, known []string) (string, bool) {
	if len(lit) < 2 {
		return "", false
	}
	body := lit[1 : len(lit)-1]
	for _, k := range known {
		if string(body) == k {
			return k, true
		}
	}
	return "", false
}

// ArrayElements splits valid JSON text into the raw text of its elements;
// ok is false when it is not an array. An empty array gives an empty,
// non-nil slice.
func ArrayElements(raw []byte) ([][]byte, bool) {
	raw = trim(raw)
	if len(raw) < 2 || raw[0] != '[' {
		return nil, false
	}
	elems := [][]byte{}
	i := SkipSpace(raw, 1)
	if i < len(raw) && raw[i] == ']' {
		return elems, true
	}
	for i < len(raw) {
		end := ValueEnd(raw, i)
		elems = append(elems, raw[i:end])
		i = SkipSpace(raw, end)
		if i >= len(raw) {
			return nil, false
		}
		if raw[i] == ']' {
			return elems, true
		}
		if raw[i] != ',' {
			return nil, false
		}
		i = SkipSpace(raw, i+1)
	}
	return nil, false
}

// Lookup returns the value JSON.parse keeps for key in valid JSON text that
// should be an object (its last occurrence), without splitting the object:
// a key without escapes is compared where it lies. ok is false when raw is
// not an object or lacks the key.
func Lookup(raw []byte, key string) (value []byte, ok bool) {
	raw = trim(raw)
	if len(raw) < 2 || raw[0] != '{' {
		return nil, false
	}
	i := SkipSpace(raw, 1)
	if i < len(raw) && raw[i] == '}' {
		return nil, false
	}
	for i < len(raw) {
		if raw[i] != '"' {
			return nil, false
		}
		end := StringEnd(raw, i)
		lit := raw[i:end]
		if len(lit) < 2 {
			return nil, false
		}
		var match bool
		if body := lit[1 : len(lit)-1]; bytes.IndexByte(body, '\\') < 0 && utf8.Valid(body) {
			match = string(body) == key
		} else {
			k, ok := StringValue(lit)
			if !ok {
				return nil, false
			}
			match = k == key
		}
		i = SkipSpace(raw, end)
		if i >= len(raw) || raw[i] != ':' {
			return nil, false
		}
		i = SkipSpace(raw, i+1)
		vend := ValueEnd(raw, i)
		if match {
			value, ok = raw[i:vend], true
		}
		i = SkipSpace(raw, vend)
		if i >= len(raw) {
			return nil, false
		}
		if raw[i] == '}' {
			return value, ok
		}
		if raw[i] != ',' {
			return nil, false
		}
		i = SkipSpace(raw, i+1)
	}
	return nil, false
}

// Path follows object keys from raw (valid JSON text) with Lookup; ok is
// false as soon as a step is not an object or lacks the key.
func Path(raw []byte, keys ...string) ([]byte, bool) {
	for _, k := range keys {
		var ok bool
		if raw, ok = Lookup(raw, k); !ok {
			return nil, false
		}
	}
	return raw, true
}
