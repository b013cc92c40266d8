package jsjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"
)

// DSH parses every stored record with JSON.parse and writes it back with
// JSON.stringify, so the logical value of a record is what survives that
// round trip. This file validates JSON text, splits objects and arrays into
// raw member spans without building Go maps (key order must survive), and
// produces the JSON.stringify form of a value when the stored text is not
// already in it. Only the standard library's string unquoting is borrowed.

// maxJSONDepth bounds container nesting. JSON.parse has no such limit, but
// an unbounded recursive descent over hostile input (a line of 100,000 '[')
// must not be able to exhaust the stack; encoding/json uses the same bound.
const maxJSONDepth = 10000

var errJSONDepth = errors.New("JSON nesting deeper than 10000 levels")

// SyntaxError reports malformed JSON text at a byte offset of the value
// being parsed.
type SyntaxError struct {
	Offset int
	Msg    string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("invalid JSON at byte %d: %s", e.Offset, e.Msg)
}

// Member is one member of a JSON object: its decoded key and the raw
// text of its value.
type Member struct {
	Key       string
	Value     []byte
	Canonical bool // Value is known to be in JSON.stringify form (set by ParseObject only)
}

// parser validates JSON text and records whether it is canonical, i.e.
// byte-identical to JSON.stringify(JSON.parse(text)).
type parser struct {
	b         []byte
	canonical bool
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func (p *parser) skipSpace(i int) int {
	for i < len(p.b) && isSpace(p.b[i]) {
		p.canonical = false
		i++
	}
	return i
}

func (p *parser) fail(i int, msg string) error { return &SyntaxError{Offset: i, Msg: msg} }

// value validates the value starting at b[i] (no leading whitespace) and
// returns the offset just past it.
func (p *parser) value(i, depth int) (int, error) {
	if i >= len(p.b) {
		return i, p.fail(i, "unexpected end of input")
	}
	switch c := p.b[i]; {
	case c == '{':
		_, end, err := p.object(i, depth+1, nil, false)
		return end, err
	case c == '[':
		return p.array(i, depth+1)
	case c == '"':
		return p.str(i)
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number(i)
	case c == 't':
		return p.literal(i, "true")
	case c == 'f':
		return p.literal(i, "false")
	case c == 'n':
		return p.literal(i, "null")
	default:
		return i, p.fail(i, fmt.Sprintf("unexpected character %q", c))
	}
}

func (p *parser) literal(i int, lit string) (int, error) {
	if !bytes.HasPrefix(p.b[i:], []byte(lit)) {
		return i, p.fail(i, "invalid literal")
	}
	return i + len(lit), nil
}

// object validates an object; with collect every member is appended to
// members, which it returns (top level only, so nested members are not
// collected).
func (p *parser) object(i, depth int, members []Member, collect bool) ([]Member, int, error) {
	if depth > maxJSONDepth {
		return nil, i, errJSONDepth
	}
	i = p.skipSpace(i + 1)
	if i < len(p.b) && p.b[i] == '}' {
		return members, i + 1, nil
	}
	for {
		if i >= len(p.b) || p.b[i] != '"' {
			return nil, i, p.fail(i, "expected object key")
		}
		keyStart := i
		end, err := p.str(i)
		if err != nil {
			return nil, end, err
		}
		key := p.b[keyStart:end]
		i = p.skipSpace(end)
		if i >= len(p.b) || p.b[i] != ':' {
			return nil, i, p.fail(i, "expected ':' after object key")
		}
		i = p.skipSpace(i + 1)
		outer := p.canonical
		p.canonical = true
		valStart := i
		if i, err = p.value(i, depth); err != nil {
			return nil, i, err
		}
		if collect {
			members = append(members, Member{Key: unquote(key), Value: p.b[valStart:i], Canonical: p.canonical})
		}
		p.canonical = outer && p.canonical
		i = p.skipSpace(i)
		if i >= len(p.b) {
			return nil, i, p.fail(i, "unterminated object")
		}
		switch p.b[i] {
		case ',':
			i = p.skipSpace(i + 1)
		case '}':
			return members, i + 1, nil
		default:
			return nil, i, p.fail(i, "expected ',' or '}' in object")
		}
	}
}

// array validates an array.
func (p *parser) array(i, depth int) (int, error) {
	if depth > maxJSONDepth {
		return i, errJSONDepth
	}
	i = p.skipSpace(i + 1)
	if i < len(p.b) && p.b[i] == ']' {
		return i + 1, nil
	}
	for {
		var err error
		if i, err = p.value(i, depth); err != nil {
			return i, err
		}
		i = p.skipSpace(i)
		if i >= len(p.b) {
			return i, p.fail(i, "unterminated array")
		}
		switch p.b[i] {
		case ',':
			i = p.skipSpace(i + 1)
		case ']':
			return i + 1, nil
		default:
			return i, p.fail(i, "expected ',' or ']' in array")
		}
	}
}

// str validates a string literal and notes escapes JSON.stringify would not
// have written.
func (p *parser) str(i int) (int, error) {
	start := i
	i++
	for i < len(p.b) {
		c := p.b[i]
		switch {
		case c == '"':
			return i + 1, nil
		case c < 0x20:
			return i, p.fail(i, "control character in string")
		case c == '\\':
			if i+1 >= len(p.b) {
				return i, p.fail(i, "unterminated escape")
			}
			switch p.b[i+1] {
			case '"', '\\', 'b', 'f', 'n', 'r', 't':
				i += 2
			case '/':
				p.canonical = false
				i += 2
			case 'u':
				u, ok := hex4(p.b, i+2)
				if !ok {
					return i, p.fail(i, "invalid \\u escape")
				}
				if !canonicalUEscape(p.b, i, u) {
					p.canonical = false
				}
				i += 6
			default:
				return i, p.fail(i, "invalid escape")
			}
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRune(p.b[i:])
			if r == utf8.RuneError && size == 1 {
				p.canonical = false
			}
			i += size
		default:
			i++
		}
	}
	return start, p.fail(start, "unterminated string")
}

// canonicalUEscape reports whether the \u escape at b[i:i+6] with value u is
// one JSON.stringify writes: a control character without a short form, or a
// lone surrogate, both in lower-case hex.
func canonicalUEscape(b []byte, i int, u rune) bool {
	for _, h := range b[i+2 : i+6] {
		if h >= 'A' && h <= 'F' {
			return false
		}
	}
	switch {
	case u < 0x20:
		return u != '\b' && u != '\f' && u != '\n' && u != '\r' && u != '\t'
	case u >= 0xD800 && u <= 0xDBFF:
		// A high surrogate is escaped only when no low surrogate follows.
		if next, ok := followingUEscape(b, i+6); ok && next >= 0xDC00 && next <= 0xDFFF {
			return false
		}
		return true
	case u >= 0xDC00 && u <= 0xDFFF:
		// A low surrogate is escaped only when it does not complete a pair;
		// pairs were already rejected at their high half.
		return true
	default:
		return false
	}
}

func followingUEscape(b []byte, i int) (rune, bool) {
	if i+1 < len(b) && b[i] == '\\' && b[i+1] == 'u' {
		return hex4(b, i+2)
	}
	return 0, false
}

func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	return r, true
}

func (p *parser) number(i int) (int, error) {
	start := i
	if p.b[i] == '-' {
		i++
	}
	switch {
	case i < len(p.b) && p.b[i] == '0':
		i++
	case i < len(p.b) && p.b[i] >= '1' && p.b[i] <= '9':
		for i < len(p.b) && p.b[i] >= '0' && p.b[i] <= '9' {
			i++
		}
	default:
		return i, p.fail(i, "invalid number")
	}
	plain := true
	if i < len(p.b) && p.b[i] == '.' {
		plain = false
		i++
		if i >= len(p.b) || p.b[i] < '0' || p.b[i] > '9' {
			return i, p.fail(i, "invalid number fraction")
		}
		for i < len(p.b) && p.b[i] >= '0' && p.b[i] <= '9' {
			i++
		}
	}
	if i < len(p.b) && (p.b[i] == 'e' || p.b[i] == 'E') {
		plain = false
		i++
		if i < len(p.b) && (p.b[i] == '+' || p.b[i] == '-') {
			i++
		}
		if i >= len(p.b) || p.b[i] < '0' || p.b[i] > '9' {
			return i, p.fail(i, "invalid number exponent")
		}
		for i < len(p.b) && p.b[i] >= '0' && p.b[i] <= '9' {
			i++
		}
	}
	tok := p.b[start:i]
	// Up to 15 digits an integer is exact in a double and prints as itself;
	// everything else is compared with its ECMAScript rendering.
	digits := len(tok)
	if tok[0] == '-' {
		digits--
	}
	if !(plain && digits <= 15 && string(tok) != "-0") && !bytes.Equal(tok, canonicalNumber(tok)) {
		p.canonical = false
	}
	return i, nil
}

// canonicalNumber renders a valid JSON number token as JSON.stringify would
// after JSON.parse (overflow becomes Infinity, which stringifies as null).
func canonicalNumber(tok []byte) []byte {
	f, _ := strconv.ParseFloat(string(tok), 64)
	return AppendFloat(nil, f)
}

// ParseValue validates that b holds exactly one JSON value (surrounding
// whitespace allowed) and reports whether the value is canonical.
func ParseValue(b []byte) (value []byte, canonical bool, err error) {
	p := parser{b: b, canonical: true}
	start := p.skipSpace(0)
	p.canonical = true
	end, err := p.value(start, 0)
	if err != nil {
		return nil, false, err
	}
	canonical = p.canonical
	if rest := p.skipSpace(end); rest != len(b) {
		return nil, false, p.fail(rest, "unexpected data after JSON value")
	}
	return b[start:end], canonical, nil
}

// ErrNotObject is returned by ParseObject for valid JSON that is not an
// object.
var ErrNotObject = errors.New("JSON value is not an object")

// ParseObject validates that b holds exactly one JSON object and returns its
// members in text order (duplicates included; Object.Get resolves them as
// JSON.parse does).
func ParseObject(b []byte) (Object, error) {
	p := parser{b: b, canonical: true}
	i := p.skipSpace(0)
	if i >= len(b) || b[i] != '{' {
		if _, _, err := ParseValue(b); err != nil {
			return nil, err
		}
		return nil, ErrNotObject
	}
	// Gathered on the stack, copied out once at their final size (as
	// SplitObject does).
	var buf [8]Member
	members, end, err := p.object(i, 1, buf[:0], true)
	if err != nil {
		return nil, err
	}
	if rest := p.skipSpace(end); rest != len(b) {
		return nil, p.fail(rest, "unexpected data after JSON value")
	}
	out := make(Object, len(members))
	copy(out, members)
	return out, nil
}

// LastMember returns the value of the last member named key, as JSON.parse
// keeps the last of duplicate keys.
func LastMember(members []Member, key string) (Member, bool) {
	for i := len(members) - 1; i >= 0; i-- {
		if members[i].Key == key {
			return members[i], true
		}
	}
	return Member{}, false
}

// unquote decodes a valid JSON string literal (the text between the quotes
// when it is not one).
func unquote(lit []byte) string {
	if s, ok := decodeString(lit); ok {
		return s
	}
	return string(lit[1 : len(lit)-1])
}

// decodeString decodes a JSON string literal, quotes included. Lone
// surrogates and bytes that are not UTF-8 become U+FFFD, which only matters
// for keys and identifiers; values are kept as raw text. ok is false for a
// literal that is not valid.
func decodeString(lit []byte) (string, bool) {
	if body := lit[1 : len(lit)-1]; bytes.IndexByte(body, '\\') < 0 && utf8.Valid(body) {
		return string(body), true // no escapes: the text between the quotes is the string
	}
	var s string
	if err := json.Unmarshal(lit, &s); err != nil {
		return "", false
	}
	return s, true
}

// IsString reports whether raw is a JSON string literal.
func IsString(raw []byte) bool { return len(raw) >= 2 && raw[0] == '"' }

// StringValue returns the decoded string if raw (valid JSON text,
// surrounding whitespace allowed) is a string literal.
func StringValue(raw []byte) (string, bool) {
	raw = trim(raw)
	if !IsString(raw) || raw[len(raw)-1] != '"' {
		return "", false
	}
	return decodeString(raw)
}

// IsNumber reports whether raw is a JSON number token.
func IsNumber(raw []byte) bool {
	return len(raw) > 0 && (raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9'))
}

// MaxSafeInteger is Number.MAX_SAFE_INTEGER.
const MaxSafeInteger = 1<<53 - 1

// NumberValue parses a JSON number token (surrounding whitespace allowed)
// as JavaScript's JSON.parse does: the nearest double, an out-of-range
// magnitude becoming ±Infinity.
func NumberValue(raw []byte) (float64, bool) {
	raw = trim(raw)
	if !IsNumber(raw) {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, false
	}
	return f, true
}

// SafeInteger parses raw as a JavaScript safe integer (Number.isSafeInteger).
// negZero reports a -0, which some header fields reject.
func SafeInteger(raw []byte) (v int64, negZero, ok bool) {
	f, ok := NumberValue(raw)
	if !ok || f != math.Trunc(f) || math.Abs(f) > MaxSafeInteger {
		return 0, false, false
	}
	return int64(f), f == 0 && math.Signbit(f), true
}

// Canonical returns the JSON.stringify form of an already validated
// value. Text that is canonical is returned as is.
func Canonical(raw []byte, canonical bool) []byte {
	if canonical {
		return raw
	}
	return appendCanonical(make([]byte, 0, len(raw)), raw)
}

// appendCanonical appends the JSON.stringify form of the valid JSON value
// at the start of raw. Whitespace is dropped, strings are re-escaped the
// JavaScript way and numbers are rendered as ECMAScript does. Object member
// order is kept; JSON.parse would also move integer-like keys first and keep
// only the last duplicate, which DSH-written text never needs.
func appendCanonical(dst, raw []byte) []byte {
	dst, _ = appendCanonicalAt(dst, raw, 0)
	return dst
}

func appendCanonicalAt(dst, b []byte, i int) ([]byte, int) {
	for isSpace(b[i]) {
		i++
	}
	switch c := b[i]; {
	case c == '{' || c == '[':
		closer := byte('}')
		if c == '[' {
			closer = ']'
		}
		dst = append(dst, c)
		i++
		first := true
		for {
			for isSpace(b[i]) {
				i++
			}
			if b[i] == closer {
				return append(dst, closer), i + 1
			}
			if b[i] == ',' {
				i++
				continue
			}
			if !first {
				dst = append(dst, ',')
			}
			first = false
			if c == '{' {
				dst, i = appendCanonicalAt(dst, b, i)
				for b[i] != ':' {
					i++
				}
				dst = append(dst, ':')
				i++
			}
			dst, i = appendCanonicalAt(dst, b, i)
		}
	case c == '"':
		end := StringEnd(b, i)
		return appendCanonicalString(dst, b[i:end]), end
	case c == 't':
		return append(dst, "true"...), i + 4
	case c == 'f':
		return append(dst, "false"...), i + 5
	case c == 'n':
		return append(dst, "null"...), i + 4
	default:
		end := i
		for end < len(b) && !isSpace(b[end]) && b[end] != ',' && b[end] != ']' && b[end] != '}' {
			end++
		}
		return append(dst, canonicalNumber(b[i:end])...), end
	}
}

// AppendStringLiteral appends a valid JSON string literal in JSON.stringify
// form, copying it when it already is (no escapes, valid UTF-8).
func AppendStringLiteral(dst, lit []byte) []byte {
	if bytes.IndexByte(lit, '\\') < 0 && utf8.Valid(lit) {
		return append(dst, lit...)
	}
	return appendCanonicalString(dst, lit)
}

// appendCanonicalString re-encodes a valid JSON string literal as
// JSON.stringify writes the string it denotes, keeping lone surrogates as
// \udxxx escapes (Go strings cannot hold them, so this works on the text).
func appendCanonicalString(dst, lit []byte) []byte {
	dst = append(dst, '"')
	body := lit[1 : len(lit)-1]
	for i := 0; i < len(body); {
		c := body[i]
		if c != '\\' {
			if c < utf8.RuneSelf {
				dst = append(dst, c)
				i++
				continue
			}
			r, size := utf8.DecodeRune(body[i:])
			if r == utf8.RuneError && size == 1 {
				dst = append(dst, "\uFFFD"...)
			} else {
				dst = append(dst, body[i:i+size]...)
			}
			i += size
			continue
		}
		switch e := body[i+1]; e {
		case 'u':
			u, _ := hex4(body, i+2)
			i += 6
			if u >= 0xD800 && u <= 0xDBFF {
				if lo, ok := followingUEscape(body, i); ok && lo >= 0xDC00 && lo <= 0xDFFF {
					dst = utf8.AppendRune(dst, 0x10000+(u-0xD800)<<10+(lo-0xDC00))
					i += 6
					continue
				}
			}
			dst = appendCodeUnit(dst, u)
		case '/':
			dst = append(dst, '/')
			i += 2
		default: // ", \, b, f, n, r, t are already in their JSON.stringify form
			dst = append(dst, '\\', e)
			i += 2
		}
	}
	return append(dst, '"')
}

// appendCodeUnit writes one UTF-16 code unit the way JSON.stringify does.
func appendCodeUnit(dst []byte, u rune) []byte {
	const hexDigits = "0123456789abcdef"
	switch {
	case u == '"':
		return append(dst, '\\', '"')
	case u == '\\':
		return append(dst, '\\', '\\')
	case u == '\b':
		return append(dst, '\\', 'b')
	case u == '\f':
		return append(dst, '\\', 'f')
	case u == '\n':
		return append(dst, '\\', 'n')
	case u == '\r':
		return append(dst, '\\', 'r')
	case u == '\t':
		return append(dst, '\\', 't')
	case u < 0x20 || (u >= 0xD800 && u <= 0xDFFF):
		return append(dst, '\\', 'u', hexDigits[u>>12&0xf], hexDigits[u>>8&0xf], hexDigits[u>>4&0xf], hexDigits[u&0xf])
	default:
		return utf8.AppendRune(dst, u)
	}
}

// WellFormedUTF8 returns b with every ill-formed UTF-8 sequence replaced by
// U+FFFD the way a WHATWG TextDecoder (Node's lenient decoding of JSONL
// text) does: one replacement per maximal subpart. Valid input is returned
// unchanged and not copied.
func WellFormedUTF8(b []byte) []byte {
	if utf8.Valid(b) {
		return b
	}
	out := make([]byte, 0, len(b)+8)
	for i := 0; i < len(b); {
		if b[i] < utf8.RuneSelf {
			out = append(out, b[i])
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r != utf8.RuneError || size > 1 {
			out = append(out, b[i:i+size]...)
			i += size
			continue
		}
		out = append(out, "\uFFFD"...)
		i += maximalSubpart(b[i:])
	}
	return out
}

// maximalSubpart is the length of the ill-formed sequence starting at b[0]:
// the longest prefix of a well-formed sequence, at least one byte.
func maximalSubpart(b []byte) int {
	lo, hi := byte(0x80), byte(0xBF)
	var need int
	switch c := b[0]; {
	case c >= 0xC2 && c <= 0xDF:
		need = 1
	case c == 0xE0:
		need, lo = 2, 0xA0
	case c == 0xED:
		need, hi = 2, 0x9F
	case c >= 0xE1 && c <= 0xEF:
		need = 2
	case c == 0xF0:
		need, lo = 3, 0x90
	case c == 0xF4:
		need, hi = 3, 0x8F
	case c >= 0xF1 && c <= 0xF3:
		need = 3
	default:
		return 1
	}
	n := 1
	for n <= need && n < len(b) && b[n] >= lo && b[n] <= hi {
		lo, hi = 0x80, 0xBF
		n++
	}
	return n
}

// UnquoteIfString returns the decoded string, or "" when raw is not a string.
func UnquoteIfString(raw []byte) string {
	s, _ := StringValue(raw)
	return s
}
