package dshformat

import (
	"errors"
	"fmt"
	"strconv"

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
	members, err := jsjson.ParseObject(jsjson.WellFormedUTF8(line))
	if err != nil {
		return h, false, fmt.Errorf("%w: %w", errNotHeader, err)
	}
	if v, ok := jsjson.LastMember(members, "version"); ok {
		if f, isNum := jsjson.NumberValue(v.Value); isNum && f != 0 {
			if session.IsLaterFormat(int64(f)) && float64(int64(f)) == f {
				h, listable, err := laterHeaderShape(members, int64(f))
				if err == nil || listable {
					return h, listable, err
				}
				// Not a later-format header after all (no isSeeded, …):
				// listed as today's shape allows and refused when read,
				// never read as something it may not be.
				refusal := &UnsupportedVersionError{Version: string(jsjson.AppendFloat(nil, f)),
					Detail: fmt.Sprintf("header is not a format-%d header: %v", int64(f), err)}
				if id, ok := jsjson.LastMember(members, "id"); ok {
					refusal.Session = displayID(id.Value)
				}
				shaped, shapeErr := headerShape(members)
				return shaped, shapeErr == nil, refusal
			}
			refusal := &UnsupportedVersionError{Version: string(jsjson.AppendFloat(nil, f)), Detail: "header version"}
			if id, ok := jsjson.LastMember(members, "id"); ok {
				refusal.Session = displayID(id.Value)
			}
			// A refused header is listable in whichever shape it has: a
			// later format's (isSeeded) or today's.
			if _, later := jsjson.LastMember(members, "isSeeded"); later {
				if shaped, _, shapeErr := laterHeaderShape(members, -1); shapeErr == nil {
					shaped.Version = int64(f)
					return shaped, true, refusal
				}
			}
			shaped, shapeErr := headerShape(members)
			return shaped, shapeErr == nil, refusal
		}
	}
	h, err = headerShape(members)
	return h, err == nil, err
}

// laterHeaderKeys is the exact key set of a format 2–4 header.
var laterHeaderKeys = map[string]bool{
	"type": true, "version": true, "id": true, "createdAt": true, "cwd": true, "parentSession": true,
	"isSeeded": true, "origin": true, "delegationDepth": true, "agentPreset": true,
}

// laterHeaderShape decodes a format 2–4 header (later-formats §4): today's
// fields, lineage as a required boolean isSeeded instead of seedLength, and
// no other keys — a key outside the set is a construct dsh cannot vouch
// for, so the session is refused (listable) rather than read. version < 0
// skips the key-set check (a refused header read only for listing).
//
// A seeded header's SeedLength is 0 here: the cut of a later format is
// the seq of its last tagged end-seed marker, known only once the log is
// read (Source.Read returns the header with it).
func laterHeaderShape(members []jsjson.Member, version int64) (session.Header, bool, error) {
	v0 := make([]jsjson.Member, 0, len(members))
	var unknown string
	for _, m := range members {
		if !laterHeaderKeys[m.Key] && unknown == "" {
			unknown = m.Key
		}
		if m.Key != "isSeeded" && m.Key != "seedLength" {
			v0 = append(v0, m)
		}
	}
	h, err := headerShape(v0)
	if err != nil {
		return h, false, err
	}
	raw, present := jsjson.LastMember(members, "isSeeded")
	switch {
	case !present:
		return session.Header{}, false, fmt.Errorf(`%w: "isSeeded" is missing`, errNotHeader)
	case string(raw.Value) == "true":
		zero := int64(0)
		h.SeedLength = &zero
	case string(raw.Value) != "false":
		return session.Header{}, false, fmt.Errorf(`%w: "isSeeded" is not a boolean`, errNotHeader)
	}
	if h.DelegationDepth == nil {
		return session.Header{}, false, fmt.Errorf(`%w: "delegationDepth" is missing`, errNotHeader)
	}
	if version < 0 {
		return h, true, nil
	}
	h.Version = version
	if unknown != "" {
		return h, true, &UnsupportedVersionError{Session: h.ID, Version: strconv.FormatInt(version, 10),
			Detail: fmt.Sprintf("header key %q is not part of format %d", unknown, version)}
	}
	return h, true, nil
}

// displayID renders a header id for a message the way DSH does (String(id)),
// also when it is not a string.
func displayID(raw []byte) string {
	if s, ok := jsjson.StringValue(raw); ok {
		return s
	}
	return string(raw)
}

func headerShape(members []jsjson.Member) (session.Header, error) {
	var h session.Header
	bad := func(format string, args ...any) (session.Header, error) {
		return session.Header{}, fmt.Errorf("%w: %s", errNotHeader, fmt.Sprintf(format, args...))
	}
	get := func(key string) ([]byte, bool) {
		m, ok := jsjson.LastMember(members, key)
		return m.Value, ok
	}
	if t, _ := get("type"); jsjson.UnquoteIfString(t) != "session" {
		return bad(`"type" is not "session"`)
	}
	v, _ := get("version")
	f, ok := jsjson.NumberValue(v)
	if !ok {
		return bad(`"version" is not a number`)
	}
	h.Version = int64(f)
	id, _ := get("id")
	if h.ID, ok = jsjson.StringValue(id); !ok {
		return bad(`"id" is not a string`)
	}
	created, _ := get("createdAt")
	n, negZero, ok := jsjson.SafeInteger(created)
	if !ok || n < 0 || negZero {
		return bad(`"createdAt" is not a non-negative safe integer`)
	}
	h.CreatedAt = n
	// DSH's JSONL reader also requires delegationDepth to be present (its
	// writer always writes it). dsh reads a header without it as depth
	// absent (= 0), as DSH's SQLite store does: some of DSH's own snapshot
	// logs were written without it.
	if depth, present := get("delegationDepth"); present {
		d, negZero, ok := jsjson.SafeInteger(depth)
		if !ok || d < 0 || negZero {
			return bad(`"delegationDepth" is not a non-negative safe integer`)
		}
		h.DelegationDepth = &d
	}
	if raw, present := get("origin"); present {
		o, ok := jsjson.StringValue(raw)
		if !ok || o != session.OriginSubagent {
			return bad(`"origin" is not "subagent"`)
		}
		h.Origin = &o
	}
	if raw, present := get("agentPreset"); present {
		p, ok := jsjson.StringValue(raw)
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
		c, ok := jsjson.StringValue(raw)
		if !ok {
			return session.Header{}, errors.New(`session header "cwd" is not a string`)
		}
		h.Cwd = &c
	}
	if raw, present := get("parentSession"); present {
		p, ok := jsjson.StringValue(raw)
		if !ok {
			return session.Header{}, errors.New(`session header "parentSession" is not a string`)
		}
		h.ParentSession = &p
	}
	if raw, present := get("seedLength"); present {
		n, _, ok := jsjson.SafeInteger(raw)
		if !ok || n < 0 {
			return session.Header{}, errors.New(`session header "seedLength" is not a non-negative safe integer`)
		}
		h.SeedLength = &n
	}
	return h, nil
}
