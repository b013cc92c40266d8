package jsjson

// Valid reports whether b is exactly one JSON value with optional
// whitespace around it, judging every input exactly as encoding/json.Valid
// does (TestValidAgreesWithEncodingJSON holds the two together): strings
// may hold any byte from 0x20 up, invalid UTF-8 included, escapes are the
// nine of RFC 8259, and containers nest at most 10,000 deep. It is the
// check a stored log's data text is read with, once per event, so it is
// written as one loop over the bytes with an explicit stack instead of
// encoding/json's per-byte state functions (several times slower).
func Valid(b []byte) bool {
	var buf [64]byte
	stack := buf[:0] // the open containers: '{' or '['
	i := SkipSpace(b, 0)
	for {
		// A value starts at i.
		if i >= len(b) {
			return false
		}
		switch c := b[i]; c {
		case '{', '[':
			if len(stack) >= maxJSONDepth {
				return false
			}
			stack = append(stack, c)
			i = SkipSpace(b, i+1)
			if i < len(b) && b[i] == c+2 { // '}' or ']'
				stack = stack[:len(stack)-1]
				i++
				break
			}
			if c == '{' {
				if i = memberKey(b, i); i < 0 {
					return false
				}
			}
			continue
		case '"':
			if i = stringEnd(b, i); i < 0 {
				return false
			}
		case 't':
			if i = literalEnd(b, i, "true"); i < 0 {
				return false
			}
		case 'f':
			if i = literalEnd(b, i, "false"); i < 0 {
				return false
			}
		case 'n':
			if i = literalEnd(b, i, "null"); i < 0 {
				return false
			}
		default:
			if i = numberEnd(b, i); i < 0 {
				return false
			}
		}
		// A value ended at i: close what it ends, then expect the next.
		for {
			i = SkipSpace(b, i)
			if len(stack) == 0 {
				return i == len(b)
			}
			if i >= len(b) {
				return false
			}
			top := stack[len(stack)-1]
			if b[i] == top+2 {
				stack = stack[:len(stack)-1]
				i++
				continue
			}
			if b[i] != ',' {
				return false
			}
			i = SkipSpace(b, i+1)
			if top == '{' {
				if i = memberKey(b, i); i < 0 {
					return false
				}
			}
			break
		}
	}
}

// memberKey checks an object member's key and colon at b[i], returning
// where its value starts (after whitespace), or -1.
func memberKey(b []byte, i int) int {
	if i >= len(b) || b[i] != '"' {
		return -1
	}
	if i = stringEnd(b, i); i < 0 {
		return -1
	}
	i = SkipSpace(b, i)
	if i >= len(b) || b[i] != ':' {
		return -1
	}
	return SkipSpace(b, i+1)
}

// stringEnd checks the string literal whose quote is b[i] and returns the
// offset past it, or -1.
func stringEnd(b []byte, i int) int {
	for i++; i < len(b); i++ {
		c := b[i]
		switch {
		case c == '"':
			return i + 1
		case c < 0x20:
			return -1
		case c == '\\':
			if i++; i >= len(b) {
				return -1
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(b) {
					return -1
				}
				for _, h := range b[i+1 : i+5] {
					if !isHex(h) {
						return -1
					}
				}
				i += 4
			default:
				return -1
			}
		}
	}
	return -1
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// numberEnd checks the number at b[i] (-?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?)
// and returns the offset past it, or -1.
func numberEnd(b []byte, i int) int {
	if b[i] == '-' {
		i++
	}
	switch {
	case i >= len(b) || !isDigit(b[i]):
		return -1
	case b[i] == '0':
		i++
	default:
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	if i < len(b) && b[i] == '.' {
		if i++; i >= len(b) || !isDigit(b[i]) {
			return -1
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		if i++; i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !isDigit(b[i]) {
			return -1
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	return i
}

// literalEnd checks that lit is at b[i] and returns the offset past it,
// or -1.
func literalEnd(b []byte, i int, lit string) int {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return -1
	}
	return i + len(lit)
}
