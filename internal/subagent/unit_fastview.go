package subagent

import (
	"bytes"
	"strconv"
)

// canonicalIdentity reads a view in exactly the form Identity.appendJSON
// writes — {"mode":…[,"label":…],"seq":N} with no whitespace, a label free
// of escapes and seq a plain non-negative integer — without a general JSON
// decode. Checkpoints and live snapshots hold views in this form, and a warm
// listing reads one per child. ok is false for any other text, which the
// general decoder then judges, so this never changes a verdict.
func canonicalIdentity(raw []byte) (id Identity, ok bool) {
	rest, found := bytes.CutPrefix(raw, []byte(`{"mode":"`))
	if !found {
		return id, false
	}
	switch {
	case bytes.HasPrefix(rest, []byte(`continuable"`)):
		id.Mode, rest = ModeContinuable, rest[len(`continuable"`):]
	case bytes.HasPrefix(rest, []byte(`one-shot"`)):
		id.Mode, rest = ModeOneShot, rest[len(`one-shot"`):]
	default:
		return id, false
	}
	if after, found := bytes.CutPrefix(rest, []byte(`,"label":"`)); found {
		end := bytes.IndexByte(after, '"')
		if end < 0 || bytes.IndexByte(after[:end], '\\') >= 0 || !plainText(after[:end]) {
			return id, false
		}
		label := string(after[:end])
		id.Label, rest = &label, after[end+1:]
	} else if id.Mode == ModeContinuable {
		return id, false
	}
	digits, found := bytes.CutPrefix(rest, []byte(`,"seq":`))
	if !found || len(digits) < 2 || digits[len(digits)-1] != '}' {
		return id, false
	}
	digits = digits[:len(digits)-1]
	if len(digits) > 1 && digits[0] == '0' {
		return id, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return id, false
		}
	}
	seq, err := strconv.ParseInt(string(digits), 10, 64)
	if err != nil || seq > maxSafeInteger {
		return id, false
	}
	id.Seq = seq
	return id, true
}

// plainText reports whether s is printable ASCII. Anything else (control
// characters, non-ASCII bytes the general decoder may normalise) goes to the
// general path.
func plainText(s []byte) bool {
	for _, c := range s {
		if c < 0x20 || c >= 0x80 {
			return false
		}
	}
	return true
}
