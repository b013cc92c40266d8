package subagent

import (
	"bytes"
	"strconv"

	"github.com/dsh-project/dsh/internal/jsjson"
)

// canonicalIdentity reads a view in exactly the form Identity.appendJSON
// writes — {"mode":…[,"label":…],"seq":N} with no whitespace, a label free
// of escapes and seq a plain non-negative integer — without a general JSON
// decode. Checkpoints and live snapshots hold views in this form, and a warm
// listing reads one per child. ok is false for any other text, which the
// general decoder then judges, so this never changes a verdict.
func canonicalIdentity(raw []byte) (id Identity, ok bool) {
	mode, label, seq, ok := scanCanonicalIdentity(raw)
	if !ok {
		return id, false
	}
	id = Identity{Mode: mode, Seq: seq}
	if label != nil {
		s := string(label)
		id.Label = &s
	}
	return id, true
}

// scanCanonicalIdentity is canonicalIdentity without building the
// identity: label is nil when absent (the text between its quotes, when
// present). Text it accepts is byte for byte what appendJSON writes for the
// identity it holds: such a label has nothing to escape, and seq is written
// in its only canonical form.
func scanCanonicalIdentity(raw []byte) (mode Mode, label []byte, seq int64, ok bool) {
	rest, found := bytes.CutPrefix(raw, []byte(`{"mode":"`))
	if !found {
		return "", nil, 0, false
	}
	mode, rest, found = cutMode(rest)
	if !found {
		return "", nil, 0, false
	}
	// An invalid label leaves rest at `,"label"`, which the seq below
	// refuses.
	label, rest, found = plainMember(rest, `,"label":"`)
	if !found && mode == ModeContinuable {
		return "", nil, 0, false
	}
	digits, found := bytes.CutPrefix(rest, []byte(`,"seq":`))
	if !found || len(digits) < 2 || digits[len(digits)-1] != '}' {
		return "", nil, 0, false
	}
	digits = digits[:len(digits)-1]
	if len(digits) > 1 && digits[0] == '0' {
		return "", nil, 0, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return "", nil, 0, false
		}
	}
	seq, err := strconv.ParseInt(string(digits), 10, 64)
	if err != nil || seq > jsjson.MaxSafeInteger {
		return "", nil, 0, false
	}
	return mode, label, seq, true
}

// cutMode reads a mode's name and its closing quote at the start of rest.
func cutMode(rest []byte) (Mode, []byte, bool) {
	switch {
	case bytes.HasPrefix(rest, []byte(`continuable"`)):
		return ModeContinuable, rest[len(`continuable"`):], true
	case bytes.HasPrefix(rest, []byte(`one-shot"`)):
		return ModeOneShot, rest[len(`one-shot"`):], true
	}
	return "", rest, false
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
