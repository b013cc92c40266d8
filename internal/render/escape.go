package render

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Escape makes an untrusted string safe to print on a terminal. Session ids,
// labels, paths and error messages come from data dsh did not write, and a raw
// ESC, carriage return or 8-bit CSI in them could move the cursor, rewrite
// what is already on screen or change terminal state. Escape therefore
// replaces, with a visible Go-style escape:
//   - C0 controls and DEL: \t, \n, \r by name, the rest as \xNN (ESC is \x1b);
//   - C1 controls (U+0080–U+009F) as \u0080 … \u009f;
//   - Unicode bidirectional formatting characters (they reorder what the eye
//     sees, the "Trojan Source" problem) as \u202e and so on;
//   - bytes that are not valid UTF-8 as \xNN (a lone 0x9b is CSI on some
//     terminals).
//
// Backslashes are left alone so that ordinary text (Windows paths, regular
// expressions) stays readable; Escape is for display, not for round trips.
func Escape(s string) string {
	if !needsEscape(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			b.WriteString(`\x`)
			b.WriteString(hex2(s[i]))
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			b.WriteString(`\x`)
			b.WriteString(hex2(byte(r)))
		case isC1(r) || isBidiControl(r):
			b.WriteString(`\u`)
			h := strconv.FormatInt(int64(r), 16)
			b.WriteString(strings.Repeat("0", 4-len(h)))
			b.WriteString(h)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

func needsEscape(s string) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == 0x7f {
				return true
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size <= 1) || isC1(r) || isBidiControl(r) {
			return true
		}
		i += size
	}
	return false
}

func isC1(r rune) bool { return r >= 0x80 && r <= 0x9f }

// isBidiControl reports the explicit directional formatting characters of
// Unicode's bidirectional algorithm (UAX #9): marks, embeddings, overrides
// and isolates.
func isBidiControl(r rune) bool {
	switch {
	case r == 0x061c, r == 0x200e, r == 0x200f:
		return true
	case r >= 0x202a && r <= 0x202e:
		return true
	case r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

func hex2(c byte) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[c>>4], digits[c&0x0f]})
}
