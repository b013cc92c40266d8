// Package jsjson writes JSON text byte-identical to JavaScript's
// JSON.stringify, which is how DSH writes every header, event and storage
// row. encoding/json differs: it escapes <, >, &, U+2028 and U+2029, replaces
// invalid UTF-8 with U+FFFD and formats some numbers differently, and DSH's
// size thresholds (4 KiB compression, 1 MiB packed rows) are measured on the
// JavaScript text.
package jsjson

import (
	"bytes"
	"math"
	"strconv"
	"unicode/utf8"
)

// AppendString appends s as a JSON string literal the way JSON.stringify
// writes it: only '"', '\\' and control characters below 0x20 are escaped
// (\b \f \n \r \t by name, the rest as \u00xx). Bytes that are not valid
// UTF-8 are written as U+FFFD, which is what Node's lenient UTF-8 decoding
// turns them into before JSON.stringify ever sees them. Escapes are written
// by appendCodeUnit, the one escaper Compact and Canonical use too.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = appendCodeUnit(append(dst, s[start:i]...), rune(c))
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, "\uFFFD"...)
			i++
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// String returns s as a JSON string literal (see AppendString).
func String(s string) string { return string(AppendString(nil, s)) }

// AppendInt appends an integer. Callers use it for safe integers only.
func AppendInt(dst []byte, v int64) []byte { return strconv.AppendInt(dst, v, 10) }

// AppendFloat appends a finite number in ECMAScript Number::toString form.
// -0 is written as 0, as JSON.stringify does.
func AppendFloat(dst []byte, f float64) []byte {
	if f == 0 {
		return append(dst, '0')
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(dst, "null"...)
	}
	abs := math.Abs(f)
	if abs >= 1e21 || abs < 1e-6 {
		// Exponent form: Go writes e+21 / e-07; JavaScript writes e+21 / e-7.
		b := strconv.AppendFloat(nil, f, 'e', -1, 64)
		if i := bytes.IndexByte(b, 'e'); i >= 0 {
			mant, exp := b[:i], b[i+1:]
			sign := exp[0]
			digits := bytes.TrimLeft(exp[1:], "0")
			dst = append(dst, mant...)
			dst = append(dst, 'e', sign)
			return append(dst, digits...)
		}
		return append(dst, b...)
	}
	return strconv.AppendFloat(dst, f, 'f', -1, 64)
}

// Compact re-serialises raw JSON text the way JSON.stringify(JSON.parse(raw))
// would: whitespace removed, object key order kept, strings re-escaped in the
// JavaScript style (a lone surrogate escape such as \ud800 stays one, as a
// JavaScript string keeps it) and numbers written in their JavaScript form.
// Duplicate keys are kept as they are (JSON.parse would keep the last one;
// DSH never writes duplicates). It validates with ParseValue, the same
// parser every reader of DSH's records uses.
func Compact(raw []byte) ([]byte, error) {
	v, canonical, err := ParseValue(raw)
	if err != nil {
		return nil, err
	}
	if canonical {
		return append([]byte(nil), v...), nil
	}
	return Canonical(v, false), nil
}

// StringArray is ss as a JSON array of strings, e.g. for SQLite's
// json_each(?) to bind a list of ids as one parameter.
func StringArray(ss []string) string {
	b := []byte{'['}
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendString(b, s)
	}
	return string(append(b, ']'))
}
