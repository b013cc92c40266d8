package session

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/dsh-project/dsh/internal/jsjson"
)

// This file reads raw JSON the way DSH's JavaScript sees it after JSON.parse,
// without building Go maps: key lookups are exact (encoding/json matches
// struct fields case-insensitively), a duplicated key resolves to its last
// value, and numbers are compared by their double value (1.0 is the integer 1).
//
// Every helper here expects syntactically valid JSON (callers check with
// json.Valid first) but stays within bounds on anything, so bad input can
// only produce a "not that kind of value" answer, never a panic.

// maxSafeInteger is JavaScript's Number.MAX_SAFE_INTEGER.
const maxSafeInteger = 1<<53 - 1

// member is one key/value pair of a JSON object; val is the raw value text.
type member struct {
	key string
	val []byte
}

// object is a parsed JSON object: members in text order, duplicates kept.
type object []member

// get returns the value JSON.parse would keep for key (the last occurrence).
func (o object) get(key string) ([]byte, bool) {
	for i := len(o) - 1; i >= 0; i-- {
		if o[i].key == key {
			return o[i].val, true
		}
	}
	return nil, false
}

func (o object) has(key string) bool {
	_, ok := o.get(key)
	return ok
}

// keys returns the distinct keys in the order JavaScript enumerates them.
func (o object) keys() []string {
	seen := make(map[string]bool, len(o))
	keys := make([]string, 0, len(o))
	for _, m := range o {
		if !seen[m.key] {
			seen[m.key] = true
			keys = append(keys, m.key)
		}
	}
	return jsjson.PropertyOrder(keys)
}

// hasOnlyKeys reports whether every key is in required or optional and every
// required key is present.
func (o object) hasOnlyKeys(required []string, optional ...string) bool {
	for _, m := range o {
		if !slices.Contains(required, m.key) && !slices.Contains(optional, m.key) {
			return false
		}
	}
	for _, k := range required {
		if !o.has(k) {
			return false
		}
	}
	return true
}

// hasExactKeys reports whether the distinct key set is exactly keys.
func (o object) hasExactKeys(keys ...string) bool {
	return o.hasOnlyKeys(keys) && len(o.keys()) == len(keys)
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func trimJSON(raw []byte) []byte {
	return bytes.TrimFunc(raw, func(r rune) bool { return r < 0x80 && isSpace(byte(r)) })
}

// parseObject splits a JSON object into its members; ok is false when raw is
// not an object.
func parseObject(raw []byte) (object, bool) {
	raw = trimJSON(raw)
	if len(raw) < 2 || raw[0] != '{' {
		return nil, false
	}
	var o object
	i := jsjson.SkipSpace(raw, 1)
	if i < len(raw) && raw[i] == '}' {
		return object{}, true
	}
	for i < len(raw) {
		if raw[i] != '"' {
			return nil, false
		}
		end := jsjson.StringEnd(raw, i)
		key, ok := parseString(raw[i:end])
		if !ok {
			return nil, false
		}
		i = jsjson.SkipSpace(raw, end)
		if i >= len(raw) || raw[i] != ':' {
			return nil, false
		}
		i = jsjson.SkipSpace(raw, i+1)
		vend := jsjson.ValueEnd(raw, i)
		o = append(o, member{key: key, val: raw[i:vend]})
		i = jsjson.SkipSpace(raw, vend)
		if i >= len(raw) {
			return nil, false
		}
		if raw[i] == '}' {
			return o, true
		}
		if raw[i] != ',' {
			return nil, false
		}
		i = jsjson.SkipSpace(raw, i+1)
	}
	return nil, false
}

// parseArray splits a JSON array into its elements; ok is false when raw is
// not an array.
func parseArray(raw []byte) ([][]byte, bool) {
	raw = trimJSON(raw)
	if len(raw) < 2 || raw[0] != '[' {
		return nil, false
	}
	elems := [][]byte{}
	i := jsjson.SkipSpace(raw, 1)
	if i < len(raw) && raw[i] == ']' {
		return elems, true
	}
	for i < len(raw) {
		end := jsjson.ValueEnd(raw, i)
		elems = append(elems, raw[i:end])
		i = jsjson.SkipSpace(raw, end)
		if i >= len(raw) {
			return nil, false
		}
		if raw[i] == ']' {
			return elems, true
		}
		if raw[i] != ',' {
			return nil, false
		}
		i = jsjson.SkipSpace(raw, i+1)
	}
	return nil, false
}

func isArray(raw []byte) bool {
	raw = trimJSON(raw)
	return len(raw) > 0 && raw[0] == '['
}

func isNull(raw []byte) bool { return string(trimJSON(raw)) == "null" }

func isTrue(raw []byte) bool { return string(trimJSON(raw)) == "true" }

// parseString decodes a JSON string literal; ok is false for any other value.
func parseString(raw []byte) (string, bool) {
	raw = trimJSON(raw)
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	body := raw[1 : len(raw)-1]
	if bytes.IndexByte(body, '\\') < 0 && utf8.Valid(body) {
		return string(body), true
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false
	}
	return s, true
}

// nonEmptyString reports whether raw is a string other than "".
func nonEmptyString(raw []byte) bool {
	s, ok := parseString(raw)
	return ok && s != ""
}

// parseNumber reads a JSON number as JavaScript's JSON.parse does: the
// nearest double, with out-of-range magnitudes becoming ±Infinity.
func parseNumber(raw []byte) (float64, bool) {
	raw = trimJSON(raw)
	if len(raw) == 0 || (raw[0] != '-' && (raw[0] < '0' || raw[0] > '9')) {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil && !math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

// safeInteger reports whether f passes Number.isSafeInteger.
func safeInteger(f float64) bool { return f == math.Trunc(f) && math.Abs(f) <= maxSafeInteger }

// parseSafeInt reads a JSON number that passes Number.isSafeInteger.
func parseSafeInt(raw []byte) (int64, bool) {
	f, ok := parseNumber(raw)
	if !ok || !safeInteger(f) {
		return 0, false
	}
	return int64(f), true
}

// isNegativeZero reports whether raw is a number JSON.parse reads as -0.
func isNegativeZero(raw []byte) bool {
	f, ok := parseNumber(raw)
	return ok && f == 0 && math.Signbit(f)
}

// path follows object keys from raw; ok is false as soon as a step is not an
// object or lacks the key.
func path(raw []byte, keys ...string) ([]byte, bool) {
	for _, k := range keys {
		o, ok := parseObject(raw)
		if !ok {
			return nil, false
		}
		if raw, ok = o.get(k); !ok {
			return nil, false
		}
	}
	return raw, true
}

// appendCanonical appends a form of raw in which two values are byte-equal
// exactly when JavaScript deep equality over JSON values says they are equal:
// keys sorted and deduplicated, numbers and strings re-encoded.
func appendCanonical(dst, raw []byte) []byte {
	raw = trimJSON(raw)
	if len(raw) == 0 {
		return dst
	}
	switch raw[0] {
	case '{':
		o, _ := parseObject(raw)
		keys := o.keys()
		slices.Sort(keys)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			v, _ := o.get(k)
			dst = jsjson.AppendString(dst, k)
			dst = append(dst, ':')
			dst = appendCanonical(dst, v)
		}
		return append(dst, '}')
	case '[':
		elems, _ := parseArray(raw)
		dst = append(dst, '[')
		for i, e := range elems {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendCanonical(dst, e)
		}
		return append(dst, ']')
	case '"':
		s, _ := parseString(raw)
		return jsjson.AppendString(dst, s)
	case 't', 'f', 'n':
		return append(dst, raw...)
	default:
		f, _ := parseNumber(raw)
		return jsjson.AppendFloat(dst, f)
	}
}

// compactJSON returns raw unchanged when it has no insignificant whitespace,
// and otherwise the JSON.stringify form of it.
func compactJSON(raw []byte) ([]byte, error) {
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; {
		case c == '"':
			i = jsjson.StringEnd(raw, i) - 1
		case isSpace(c):
			return jsjson.Compact(raw)
		}
	}
	return raw, nil
}

// jsString renders a JSON value as JavaScript's String(value) would, for the
// few messages DSH builds by interpolating a value of unknown type.
func jsString(raw []byte, present bool) string {
	if !present {
		return "undefined"
	}
	raw = trimJSON(raw)
	if len(raw) == 0 {
		return "undefined"
	}
	switch raw[0] {
	case '"':
		s, _ := parseString(raw)
		return s
	case '{':
		return "[object Object]"
	case '[':
		elems, _ := parseArray(raw)
		var b []byte
		for i, e := range elems {
			if i > 0 {
				b = append(b, ',')
			}
			if !isNull(e) {
				b = append(b, jsString(e, true)...)
			}
		}
		return string(b)
	case 't', 'f', 'n':
		return string(raw)
	default:
		f, _ := parseNumber(raw)
		switch {
		case math.IsInf(f, 1):
			return "Infinity"
		case math.IsInf(f, -1):
			return "-Infinity"
		}
		return string(jsjson.AppendFloat(nil, f))
	}
}
