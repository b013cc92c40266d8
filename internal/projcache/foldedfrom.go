package projcache

import "github.com/dsh-project/dsh/internal/session"

// foldedFrom is the header identity a checkpoint was folded from (the
// record's "witness" in messages; not session.Witness, DSH's lifecycle
// witness, which has isSeeded where this has the exact cut). A record is
// served only for a header with the same identity: a recreated id, a re-import
// with another cut, or a store swapped underneath must not seed phantom
// state. It holds the later revision's lifecycle fields with the exact
// inherited cut in place of isSeeded (the cut decides which events are the
// session's own, so a record folded under another cut is another lifecycle).
type foldedFrom struct {
	version         int64
	createdAt       int64
	cwd             nullString
	parentSession   nullString
	seedLength      nullInt
	origin          nullString
	delegationDepth nullInt
	agentPreset     nullString
}

type nullString struct {
	set bool
	val string
}

type nullInt struct {
	set bool
	val int64
}

func strPtr(p *string) nullString {
	if p == nil {
		return nullString{}
	}
	return nullString{set: true, val: *p}
}

func intPtr(p *int64) nullInt {
	if p == nil {
		return nullInt{}
	}
	return nullInt{set: true, val: *p}
}

func foldedFromOf(h session.Header) foldedFrom {
	return foldedFrom{
		version:         h.Version,
		createdAt:       h.CreatedAt,
		cwd:             strPtr(h.Cwd),
		parentSession:   strPtr(h.ParentSession),
		seedLength:      intPtr(h.SeedLength),
		origin:          strPtr(h.Origin),
		delegationDepth: intPtr(h.DelegationDepth),
		agentPreset:     strPtr(h.AgentPreset),
	}
}

// diff names the first field (in column order) where w and o differ, or ""
// when they are the same lifecycle. Missing equals missing only.
func (w foldedFrom) diff(o foldedFrom) string {
	switch {
	case w.version != o.version:
		return "version"
	case w.createdAt != o.createdAt:
		return "createdAt"
	case w.cwd != o.cwd:
		return "cwd"
	case w.parentSession != o.parentSession:
		return "parentSession"
	case w.seedLength != o.seedLength:
		return "seedLength"
	case w.origin != o.origin:
		return "origin"
	case w.delegationDepth != o.delegationDepth:
		return "delegationDepth"
	case w.agentPreset != o.agentPreset:
		return "agentPreset"
	}
	return ""
}
