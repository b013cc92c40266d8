package dshformat

import (
	"errors"
	"fmt"

	"github.com/dsh-project/dsh/internal/jsjson"
	"github.com/dsh-project/dsh/internal/session"
)

// errNotHeader is DSH's "first line is not a session header" corruption.
var errNotHeader = errors.New("first line is not a session header")

// decodeHeader decodes a JSONL header line by DSH's read rules (§2.2)
// (session.ParseHeaderJSON has no way to return the listable header of a
// refused version, which discovery needs):
// a numeric version other than 0 is refused before any shape check, then
// the shape is checked, then retired policy fields are rejected; unknown
// keys are dropped. A refused header is still returned, with listable set,
// when the rest of it has today's shape: DSH lists such a session and only
// refuses it when it is read.
//
// The returned error is *UnsupportedVersionError, or a plain error (the
// caller adds the location) for anything else.
func decodeHeader(line []byte) (h session.Header, listable bool, err error) {
	members, err := parseObject(wellFormedUTF8(line))
	if err != nil {
		return h, false, fmt.Errorf("%w: %w", errNotHeader, err)
	}
	if v, ok := lastMember(members, "version"); ok {
		if f, isNum := numberValue(v.Value); isNum && f != 0 {
			refusal := &UnsupportedVersionError{Version: string(jsjson.AppendFloat(nil, f)), Detail: "header version"}
			if id, ok := lastMember(members, "id"); ok {
				refusal.Session = displayID(id.Value)
			}
			shaped, shapeErr := headerShape(members)
			return shaped, shapeErr == nil, refusal
		}
	}
	h, err = headerShape(members)
	return h, err == nil, err
}

// displayID renders a header id for a message the way DSH does (String(id)),
// also when it is not a string.
func displayID(raw []byte) string {
	if s, ok := stringValue(raw); ok {
		return s
	}
	return string(raw)
}

func headerShape(members []jsonMember) (session.Header, error) {
	var h session.Header
	bad := func(format string, args ...any) (session.Header, error) {
		return session.Header{}, fmt.Errorf("%w: %s", errNotHeader, fmt.Sprintf(format, args...))
	}
	get := func(key string) ([]byte, bool) {
		m, ok := lastMember(members, key)
		return m.Value, ok
	}
	if t, _ := get("type"); unquoteIfString(t) != "session" {
		return bad(`"type" is not "session"`)
	}
	v, _ := get("version")
	f, ok := numberValue(v)
	if !ok {
		return bad(`"version" is not a number`)
	}
	h.Version = int64(f)
	id, _ := get("id")
	if h.ID, ok = stringValue(id); !ok {
		return bad(`"id" is not a string`)
	}
	created, _ := get("createdAt")
	n, negZero, ok := safeInteger(created)
	if !ok || n < 0 || negZero {
		return bad(`"createdAt" is not a non-negative safe integer`)
	}
	h.CreatedAt = n
	// DSH's JSONL reader also requires delegationDepth to be present (its
	// writer always writes it). dsh reads a header without it as depth
	// absent (= 0), as DSH's SQLite store does: some of DSH's own snapshot
	// logs were written without it.
	if depth, present := get("delegationDepth"); present {
		d, negZero, ok := safeInteger(depth)
		if !ok || d < 0 || negZero {
			return bad(`"delegationDepth" is not a non-negative safe integer`)
		}
		h.DelegationDepth = &d
	}
	if raw, present := get("origin"); present {
		o, ok := stringValue(raw)
		if !ok || o != session.OriginSubagent {
			return bad(`"origin" is not "subagent"`)
		}
		h.Origin = &o
	}
	if raw, present := get("agentPreset"); present {
		p, ok := stringValue(raw)
		if !ok {
			return bad(`"agentPreset" is not a string`)
		}
		h.AgentPreset = &p
	}
	if _, present := get("sandboxMode"); present {
		return session.Header{}, errors.New("session header uses retired policy baseline fields")
	}
	if _, present := get("approvalPolicy"); present {
		return session.Header{}, errors.New("session header uses retired policy baseline fields")
	}
	// DSH leaves these three to header validation on restore; a value of
	// the wrong type cannot be carried in a Header, so it is refused here.
	if raw, present := get("cwd"); present {
		c, ok := stringValue(raw)
		if !ok {
			return session.Header{}, errors.New(`session header "cwd" is not a string`)
		}
		h.Cwd = &c
	}
	if raw, present := get("parentSession"); present {
		p, ok := stringValue(raw)
		if !ok {
			return session.Header{}, errors.New(`session header "parentSession" is not a string`)
		}
		h.ParentSession = &p
	}
	if raw, present := get("seedLength"); present {
		n, _, ok := safeInteger(raw)
		if !ok || n < 0 {
			return session.Header{}, errors.New(`session header "seedLength" is not a non-negative safe integer`)
		}
		h.SeedLength = &n
	}
	return h, nil
}
