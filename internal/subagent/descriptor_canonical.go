package subagent

import "bytes"

// scanCanonicalDescriptor reads a descriptor payload in exactly the form
// Descriptor.MarshalJSON writes — no whitespace, keys in its order, version
// 2 or 3, strings of printable ASCII with nothing to escape, no toolFilter —
// and returns its mode and label (nil when absent). Such text is valid JSON
// that ParseDescriptor accepts with that mode and label, so the identity
// unit needs neither a separate validity pass nor a general decode for the
// descriptors dsh itself writes. ok is false for any other text, which
// ParseDescriptor then judges in full, so this never changes a verdict.
func scanCanonicalDescriptor(raw []byte) (mode Mode, label []byte, ok bool) {
	rest, found := bytes.CutPrefix(raw, []byte(`{"version":`))
	if !found || len(rest) == 0 || (rest[0] != '2' && rest[0] != '3') {
		return "", nil, false
	}
	later := rest[0] == '3'
	rest = rest[1:]
	if rest, found = bytes.CutPrefix(rest, []byte(`,"mode":"`)); !found {
		return "", nil, false
	}
	if mode, rest, found = cutMode(rest); !found {
		return "", nil, false
	}
	if _, rest, found = plainMember(rest, `,"provider":"`); !found {
		return "", nil, false
	}
	label, rest, found = plainMember(rest, `,"label":"`)
	if !found && mode == ModeContinuable {
		return "", nil, false
	}
	if mode == ModeContinuable {
		// The optional keys a continuable payload may add, in
		// MarshalJSON's order; agentReasoningEffort only at version 3.
		for _, key := range []string{`,"agentProvider":"`, `,"agentModel":"`, `,"agentReasoningEffort":"`, `,"persona":"`} {
			if key == `,"agentReasoningEffort":"` && !later {
				continue
			}
			if _, next, present := plainMember(rest, key); present {
				rest = next
			}
		}
	}
	if len(rest) != 1 || rest[0] != '}' {
		return "", nil, false
	}
	return mode, label, true
}

// plainMember reads `prefix` then a string of printable ASCII with no
// escapes and its closing quote at the start of rest. found is false, with
// rest unchanged, when rest does not start so.
func plainMember(rest []byte, prefix string) (value, after []byte, found bool) {
	body, ok := bytes.CutPrefix(rest, []byte(prefix))
	if !ok {
		return nil, rest, false
	}
	end := bytes.IndexByte(body, '"')
	if end < 0 || bytes.IndexByte(body[:end], '\\') >= 0 || !plainText(body[:end]) {
		return nil, rest, false
	}
	return body[:end:end], body[end+1:], true
}
