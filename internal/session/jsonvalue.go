package session

import (
	"bytes"
	"math"
	"slices"

	"github.com/dsh-project/dsh/internal/jsjson"
)

// What DSH's JavaScript does with raw JSON values beyond reading them
// (jsjson's object reader, SplitObject and Object, reads them): deep
// equality, String(value), and the few literal tests DSH's checks make.
// Numbers are compared by their double value (1.0 is the integer 1).
//
// Every helper here expects syntactically valid JSON (callers check with
// json.Valid first) but stays within bounds on anything, so bad input can
// only produce a "not that kind of value" answer, never a panic.

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func trimJSON(raw []byte) []byte {
	return bytes.TrimFunc(raw, func(r rune) bool { return r < 0x80 && isSpace(byte(r)) })
}

func isArray(raw []byte) bool {
	raw = trimJSON(raw)
	return len(raw) > 0 && raw[0] == '['
}

func isNull(raw []byte) bool { return string(trimJSON(raw)) == "null" }

func isTrue(raw []byte) bool { return string(trimJSON(raw)) == "true" }

// nonEmptyString reports whether raw is a string other than "".
func nonEmptyString(raw []byte) bool {
	s, ok := jsjson.StringValue(raw)
	return ok && s != ""
}

// safeInteger reports whether f passes Number.isSafeInteger.
func safeInteger(f float64) bool { return f == math.Trunc(f) && math.Abs(f) <= jsjson.MaxSafeInteger }

// isNegativeZero reports whether raw is a number JSON.parse reads as -0.
func isNegativeZero(raw []byte) bool {
	f, ok := jsjson.NumberValue(raw)
	return ok && f == 0 && math.Signbit(f)
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
		o, _ := jsjson.SplitObject(raw)
		keys := o.Keys()
		slices.Sort(keys)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			v, _ := o.Get(k)
			dst = jsjson.AppendString(dst, k)
			dst = append(dst, ':')
			dst = appendCanonical(dst, v)
		}
		return append(dst, '}')
	case '[':
		elems, _ := jsjson.ArrayElements(raw)
		dst = append(dst, '[')
		for i, e := range elems {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendCanonical(dst, e)
		}
		return append(dst, ']')
	case '"':
		s, _ := jsjson.StringValue(raw)
		return jsjson.AppendString(dst, s)
	case 't', 'f', 'n':
		return append(dst, raw...)
	default:
		f, _ := jsjson.NumberValue(raw)
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
		s, _ := jsjson.StringValue(raw)
		return s
	case '{':
		return "[object Object]"
	case '[':
		elems, _ := jsjson.ArrayElements(raw)
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
		f, _ := jsjson.NumberValue(raw)
		switch {
		case math.IsInf(f, 1):
			return "Infinity"
		case math.IsInf(f, -1):
			return "-Infinity"
		}
		return string(jsjson.AppendFloat(nil, f))
	}
}
