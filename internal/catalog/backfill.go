package catalog

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/dsh-project/dsh/internal/jsjson"
	"github.com/dsh-project/dsh/internal/session"
)

// Evidence is what DSH's persistence hands the V3→V4 back-fill about one
// child of the parent: a session whose header is readable and says
// origin "subagent" and parentSession = the parent. Children whose header
// cannot be read are not evidence at all.
type Evidence struct {
	ChildID        string
	ChildCreatedAt int64 // the child header's createdAt
	// DescriptorCount is the number of the child's own
	// `subagent/descriptor` events (seq at or after its cut); 0 when its
	// log could not be decoded (DSH then still supplies the identity).
	DescriptorCount int
	// Descriptor is the first own descriptor's payload, nil when none.
	Descriptor json.RawMessage
}

// descriptorIdentity is what the back-fill's converter takes from a
// child's only descriptor.
type descriptorIdentity struct {
	mode  Mode
	label *string
}

// supportedDescriptor reads the version of a descriptor payload; ok is
// false for a version the converter does not take (anything but 1, 2, 3),
// or a payload that is not an object.
func supportedDescriptor(raw json.RawMessage) (fields map[string][]byte, version int64, ok bool) {
	members, err := jsjson.ParseObject(raw)
	if err != nil {
		return nil, 0, false
	}
	fields = make(map[string][]byte, len(members))
	for _, m := range members {
		fields[m.Key] = m.Value
	}
	v, negZero, ok := jsjson.SafeInteger(fields["version"])
	if !ok || negZero || v < 1 || v > 3 {
		return nil, 0, false
	}
	return fields, v, true
}

// convert is the converter's reading of a supported descriptor: version 1
// is continuable; versions 2 and 3 carry one-shot or continuable, and a
// label when present. refusal names what the converter refuses (mode not
// one-shot or continuable, provider or label not a string); the mode and
// label it could read are returned either way, for comparing with an
// existing fact, which the converter never refuses.
func convert(fields map[string][]byte, version int64) (id descriptorIdentity, refusal string) {
	if version == 1 {
		id.mode = ModeContinuable
	} else {
		mode, _ := jsjson.StringValue(fields["mode"])
		switch Mode(mode) {
		case ModeOneShot, ModeContinuable:
			id.mode = Mode(mode)
		default:
			refusal = fmt.Sprintf("its version-%d descriptor's mode is not one-shot or continuable", version)
		}
	}
	if raw, ok := fields["label"]; ok {
		if label, isString := jsjson.StringValue(raw); isString {
			id.label = &label
		} else if refusal == "" {
			refusal = "its descriptor's label is not a string"
		}
	}
	if !jsjson.IsString(fields["provider"]) && refusal == "" {
		refusal = "its descriptor's provider is not a string"
	}
	return id, refusal
}

// onlyDescriptor is the evidence's identity when it has exactly one own
// descriptor of a supported version; ok is false otherwise. refusal is
// set when that descriptor is one the converter refuses.
func (ev Evidence) onlyDescriptor() (id descriptorIdentity, ok bool, refusal string) {
	if ev.DescriptorCount != 1 || ev.Descriptor == nil {
		return id, false, ""
	}
	fields, version, supported := supportedDescriptor(ev.Descriptor)
	if !supported {
		return id, false, ""
	}
	id, refusal = convert(fields, version)
	return id, true, refusal
}

// CompareCodeUnits orders strings as JavaScript's < does: by UTF-16 code
// units, not by code points (Go's <) and not by locale. The two differ
// only between a character above U+FFFF and one in U+E000…U+FFFF.
func CompareCodeUnits(a, b string) int {
	for a != "" && b != "" {
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		if ra != rb {
			ha, la := codeUnits(ra)
			hb, lb := codeUnits(rb)
			if c := cmp.Compare(ha, hb); c != 0 {
				return c
			}
			return cmp.Compare(la, lb)
		}
		a, b = a[na:], b[nb:]
	}
	return cmp.Compare(len(a), len(b))
}

// codeUnits is r's first UTF-16 code unit and, above U+FFFF, its second
// (0 otherwise, which sorts before any low surrogate).
func codeUnits(r rune) (rune, rune) {
	if r < 0x10000 {
		return r, 0
	}
	r -= 0x10000
	return 0xD800 + r>>10, 0xDC00 + r&0x3FF
}

// Backfill returns the `subagent/catalog` events DSH's V3→V4 migration
// appends to a V0–V3 parent whose log is events (inherited cut cut,
// header createdAt createdAt), given the evidence of its children, or the
// *Error that makes the migration, and so the parent, refuse:
//
//  1. The parent's own facts (seq at or after the cut: after the last
//     inherited end-seed marker) are admitted as catalogFact does (extra keys
//     kept); a child named twice refuses.
//  2. The evidence is taken by childCreatedAt, then childId in code-unit
//     order.
//  3. A child with a fact: childCreatedAt must agree, and when the child has
//     exactly one supported descriptor its mode and label must agree too;
//     the fact stays as written. A child without: with exactly one own
//     descriptor of version 1, 2 or 3, a version-0 fact from it (the
//     converter refusing a descriptor whose provider is not a string or
//     whose mode is neither one-shot nor continuable); otherwise a
//     version-1 "unknown" fact without label.
//  4. The new facts follow every source event with dense seqs, at the last
//     source event's time (the header's createdAt for an empty log).
//
// Facts without evidence are kept. evidence is not modified.
func Backfill(events []session.Event, cut, createdAt int64, evidence []Evidence) ([]session.Event, error) {
	existing := map[string]Fact{}
	for _, e := range events {
		if e.Type != session.TypeCatalog || !Own(e, cut) {
			continue
		}
		f, err := parse(e.Data, false)
		if err != nil {
			return nil, wrapAt(err, e.Seq)
		}
		if _, dup := existing[f.ChildID]; dup {
			return nil, &Error{Problem: ProblemDuplicate, Seq: e.Seq, ChildID: f.ChildID, Detail: "the V3→V4 back-fill refuses a parent naming a child twice"}
		}
		existing[f.ChildID] = f
	}
	nextSeq, time := int64(0), createdAt
	if n := len(events); n > 0 {
		nextSeq, time = events[n-1].Seq+1, events[n-1].Time
	}
	return complete(existing, nextSeq, time, evidence)
}

// complete is the back-fill's steps 2 to 4 (see Backfill) over the
// parent's admitted own facts existing, its new facts numbered from
// nextSeq at time.
func complete(existing map[string]Fact, nextSeq, time int64, evidence []Evidence) ([]session.Event, error) {
	sorted := slices.Clone(evidence)
	slices.SortStableFunc(sorted, func(a, b Evidence) int {
		if c := cmp.Compare(a.ChildCreatedAt, b.ChildCreatedAt); c != 0 {
			return c
		}
		return CompareCodeUnits(a.ChildID, b.ChildID)
	})
	var added []session.Event
	for _, ev := range sorted {
		id, hasDescriptor, refusal := ev.onlyDescriptor()
		if f, ok := existing[ev.ChildID]; ok {
			if err := agree(f, ev, id, hasDescriptor); err != nil {
				return nil, err
			}
			continue
		}
		fact := Fact{Version: VersionUnknown, ChildID: ev.ChildID, ChildCreatedAt: ev.ChildCreatedAt, Mode: ModeUnknown}
		if hasDescriptor {
			if refusal != "" {
				return nil, &Error{Problem: ProblemDescriptor, Seq: -1, ChildID: ev.ChildID, Detail: "the V3→V4 back-fill refuses: " + refusal}
			}
			fact = Fact{Version: VersionLive, ChildID: ev.ChildID, ChildCreatedAt: ev.ChildCreatedAt, Mode: id.mode, Label: id.label}
		}
		added = append(added, session.Event{Type: session.TypeCatalog, Seq: nextSeq, Time: time, Data: encode(fact)})
		nextSeq++
	}
	return added, nil
}

// OwnView is the half of View of a V0–V3 log (format version below
// NativeFormat) that reads the log alone: its own facts admitted as the
// back-fill admits them, then folded. An error refuses the parent whatever
// its children's evidence; otherwise View is Complete(OwnView, evidence).
func OwnView(events []session.Event, cut int64) ([]Entry, error) {
	if _, err := Backfill(events, cut, 0, nil); err != nil {
		return nil, err
	}
	return Fold(events, cut)
}

// Complete is View of a V0–V3 log from its OwnView own and its children's
// evidence: the back-fill's new facts, each folded as View folds it,
// after own. own is not modified.
func Complete(own []Entry, evidence []Evidence) ([]Entry, error) {
	existing := make(map[string]Fact, len(own))
	for _, e := range own {
		existing[e.ID] = Fact{ChildID: e.ID, ChildCreatedAt: e.CreatedAt, Mode: e.Mode, Label: e.Label}
	}
	added, err := complete(existing, 0, 0, evidence)
	if err != nil || len(added) == 0 {
		return own, err
	}
	more, err := Fold(added, 0)
	if err != nil {
		return nil, err
	}
	return append(slices.Clip(own), more...), nil
}

// agree checks an existing fact against its child's evidence.
func agree(f Fact, ev Evidence, id descriptorIdentity, hasDescriptor bool) error {
	conflict := func(format string, args ...any) error {
		return &Error{Problem: ProblemConflict, Seq: -1, ChildID: ev.ChildID, Detail: "the V3→V4 back-fill refuses: " + fmt.Sprintf(format, args...)}
	}
	if f.ChildCreatedAt != ev.ChildCreatedAt {
		return conflict("the fact's childCreatedAt %d is not the child header's createdAt %d", f.ChildCreatedAt, ev.ChildCreatedAt)
	}
	if !hasDescriptor {
		return nil
	}
	if f.Mode != id.mode {
		return conflict("the fact's mode %q is not its descriptor's %q", f.Mode, id.mode)
	}
	if !sameLabel(f.Label, id.label) {
		return conflict("the fact's label %s is not its descriptor's %s", labelText(f.Label), labelText(id.label))
	}
	return nil
}

func sameLabel(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func labelText(l *string) string {
	if l == nil {
		return "(none)"
	}
	return jsjson.String(*l)
}
