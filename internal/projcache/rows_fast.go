package projcache

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// canonicalSingleRow reads a record's rows text in exactly the form
// encodeRows writes for a one-unit checkpoint —
// {"<key>":{"ver":V,"seq":S,"val":<JSON>}} with a plain key — without a
// general JSON decode; a warm listing decodes one such record per child. ok
// is false for any other text, which decodeRows then judges, so this never
// changes a verdict: more than one row, escapes in the key, extra or
// repeated fields all make the val span invalid JSON or miss a prefix.
func canonicalSingleRow(text []byte) (Checkpoint, bool) {
	key, row, ok := canonicalRow(text)
	if !ok {
		return nil, false
	}
	return Checkpoint{string(key): row}, true
}

// canonicalRow is canonicalSingleRow's parse: the one row's key and row.
func canonicalRow(text []byte) (key []byte, row Row, ok bool) {
	rest, found := bytes.CutPrefix(text, []byte(`{"`))
	if !found {
		return nil, Row{}, false
	}
	end := bytes.IndexByte(rest, '"')
	if end <= 0 {
		return nil, Row{}, false
	}
	key = rest[:end]
	for _, c := range key {
		if c < 0x20 || c >= 0x80 || c == '\\' {
			return nil, Row{}, false
		}
	}
	rest, found = bytes.CutPrefix(rest[end:], []byte(`":{"ver":`))
	if !found {
		return nil, Row{}, false
	}
	ver, rest, ok := leadingInt(rest)
	if !ok || ver < 0 {
		return nil, Row{}, false
	}
	if rest, found = bytes.CutPrefix(rest, []byte(`,"seq":`)); !found {
		return nil, Row{}, false
	}
	seq, rest, ok := leadingInt(rest)
	if !ok || seq < -1 {
		return nil, Row{}, false
	}
	if rest, found = bytes.CutPrefix(rest, []byte(`,"val":`)); !found {
		return nil, Row{}, false
	}
	val, found := bytes.CutSuffix(rest, []byte("}}"))
	if !found || !json.Valid(val) {
		return nil, Row{}, false
	}
	return key, Row{Ver: int(ver), Seq: seq, Val: json.RawMessage(val)}, true
}

// leadingInt reads a canonical JSON integer (optional minus, no leading
// zeros, safe range) at the start of b.
func leadingInt(b []byte) (int64, []byte, bool) {
	n := 0
	if n < len(b) && b[n] == '-' {
		n++
	}
	start := n
	for n < len(b) && b[n] >= '0' && b[n] <= '9' {
		n++
	}
	digits := n - start
	if digits == 0 || (digits > 1 && b[start] == '0') {
		return 0, nil, false
	}
	v, err := strconv.ParseInt(string(b[:n]), 10, 64)
	if err != nil || v > maxSafeInteger || v < -maxSafeInteger {
		return 0, nil, false
	}
	return v, b[n:], true
}
