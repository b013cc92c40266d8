// Package catalog is DSH's subagent catalog: the `subagent/catalog` facts a
// parent appends to its own log, one per child it starts (DSH 0.1.5 on), and
// the append-only view DSH 0.1.7 and later list children from.
//
// It parses a fact the two ways DSH does (the projection's strict schema, and
// format admission's catalogFact, which tolerates extra keys), folds a log's
// own facts into the view, and computes in memory the facts DSH's V3→V4
// migration would append to a V0–V3 parent (Backfill). Nothing here reads
// or writes storage: callers hand in events and evidence.
package catalog

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/dsh-project/dsh/internal/jsjson"
)

// Mode is a catalog entry's mode.
type Mode string

// Catalog modes.
const (
	ModeOneShot     Mode = "one-shot"
	ModeContinuable Mode = "continuable"
	// ModeUnknown (payload version 1) is written only by the V3→V4
	// back-fill, for a child whose identity it could not establish.
	ModeUnknown Mode = "unknown"
	// ModeExternal (payload version 2, DSH 0.2.x) is a child run by an
	// external executor: a leaf with no session of its own.
	ModeExternal Mode = "external"
)

// Payload versions.
const (
	// VersionLive is the only version DSH's live creation writes, and the
	// one dsh writes (SUBAGENT_CATALOG_VERSION).
	VersionLive = 0
	// VersionUnknown adds mode "unknown" (DSH 0.1.7).
	VersionUnknown = 1
	// VersionExternal is mode "external" only (DSH 0.2.x).
	VersionExternal = 2
)

// Fact is one parsed `subagent/catalog` payload.
type Fact struct {
	Version        int
	ChildID        string
	ChildCreatedAt int64
	Mode           Mode
	Label          *string // nil: no label key
}

// Problem says what is wrong with a catalog, in a word callers (diagnose's
// findings, the listing's errors) branch on.
type Problem string

// Problems.
const (
	// ProblemMalformed: a fact that is not a valid payload of its version
	// (not an object, a missing, extra or mistyped key, an invalid mode
	// combination).
	ProblemMalformed Problem = "malformed"
	// ProblemUnsupportedVersion: a fact whose version is a non-negative
	// integer DSH does not read (not 0, 1 or 2).
	ProblemUnsupportedVersion Problem = "unsupported-version"
	// ProblemDuplicate: two own facts name one child; DSH refuses such a
	// V4 log at admission and such a V0–V3 log at the back-fill.
	ProblemDuplicate Problem = "duplicate"
	// ProblemConflict: the back-fill met a fact that disagrees with the
	// child's evidence (createdAt, or mode/label against its descriptor).
	ProblemConflict Problem = "conflict"
	// ProblemDescriptor: the back-fill's converter refused a child's only
	// descriptor (provider not a string, mode not one-shot/continuable).
	ProblemDescriptor Problem = "descriptor"
)

// Error is a catalog that DSH refuses, and why: the parent is then
// unreadable to DSH 0.1.7 and later.
type Error struct {
	Problem Problem
	// Seq is the event the problem is at; -1 when it concerns evidence
	// rather than an event (a back-fill refusal for a child with no fact).
	Seq int64
	// ChildID is the child concerned, when known.
	ChildID string
	Detail  string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("subagent catalog")
	if e.Seq >= 0 {
		b.WriteString(" fact at seq ")
		b.WriteString(strconv.FormatInt(e.Seq, 10))
	}
	if e.ChildID != "" {
		fmt.Fprintf(&b, " (child %q)", e.ChildID)
	}
	b.WriteString(": ")
	b.WriteString(e.Detail)
	return b.String()
}

// parseError is a payload problem before the event's seq is known.
type parseError struct {
	problem Problem
	childID string
	detail  string
}

func (e *parseError) Error() string { return e.detail }

func malformed(format string, args ...any) *parseError {
	return &parseError{problem: ProblemMalformed, detail: fmt.Sprintf(format, args...)}
}

// ParseFact parses a payload as DSH's projection does: strict, so any key
// beyond the version's own makes it malformed.
func ParseFact(data []byte) (Fact, error) {
	f, err := parse(data, true)
	if err != nil {
		return Fact{}, wrapAt(err, -1)
	}
	return f, nil
}

// AdmitFact parses a payload as DSH's format admission (catalogFact) does:
// every known key is checked, extra keys are tolerated.
func AdmitFact(data []byte) (Fact, error) {
	f, err := parse(data, false)
	if err != nil {
		return Fact{}, wrapAt(err, -1)
	}
	return f, nil
}

func wrapAt(err error, seq int64) *Error {
	var pe *parseError
	if errors.As(err, &pe) {
		return &Error{Problem: pe.problem, Seq: seq, ChildID: pe.childID, Detail: pe.detail}
	}
	return &Error{Problem: ProblemMalformed, Seq: seq, Detail: err.Error()}
}

func parse(data []byte, strict bool) (Fact, error) {
	// DSH decodes the log's text before parsing it: an ill-formed byte
	// sequence in an id or label is U+FFFD to it.
	members, err := jsjson.ParseObject(jsjson.WellFormedUTF8(data))
	if err != nil {
		return Fact{}, malformed("payload is not a JSON object: %v", err)
	}
	// JSON.parse keeps the last of duplicate keys: decide on those.
	fields := make(map[string][]byte, len(members))
	var order []string
	for _, m := range members {
		if _, seen := fields[m.Key]; !seen {
			order = append(order, m.Key)
		}
		fields[m.Key] = m.Value
	}
	var f Fact
	rawVersion, ok := fields["version"]
	if !ok {
		return f, malformed("version is missing")
	}
	v, negZero, ok := jsjson.SafeInteger(rawVersion)
	switch {
	case !ok:
		return f, malformed("version %s is not an integer", rawVersion)
	case v < 0 || negZero:
		return f, malformed("version %s is negative", rawVersion)
	case v > VersionExternal:
		return f, &parseError{problem: ProblemUnsupportedVersion, detail: fmt.Sprintf("version %d is not one DSH reads (0, 1 or 2)", v)}
	}
	f.Version = int(v)
	if strict {
		for _, k := range order {
			switch k {
			case "version", "childId", "childCreatedAt", "mode", "label":
			default:
				return f, malformed("unexpected key %s", jsjson.String(k))
			}
		}
	}
	rawID, ok := fields["childId"]
	if !ok {
		return f, malformed("childId is missing")
	}
	if f.ChildID, ok = jsjson.StringValue(rawID); !ok {
		return f, malformed("childId %s is not a string", rawID)
	}
	rawCreated, ok := fields["childCreatedAt"]
	if !ok {
		return f, &parseError{problem: ProblemMalformed, childID: f.ChildID, detail: "childCreatedAt is missing"}
	}
	created, _, ok := jsjson.SafeInteger(rawCreated)
	if !ok || created < 0 {
		return f, &parseError{problem: ProblemMalformed, childID: f.ChildID, detail: fmt.Sprintf("childCreatedAt %s is not a non-negative safe integer", rawCreated)}
	}
	f.ChildCreatedAt = created
	rawMode, ok := fields["mode"]
	if !ok {
		return f, &parseError{problem: ProblemMalformed, childID: f.ChildID, detail: "mode is missing"}
	}
	mode, ok := jsjson.StringValue(rawMode)
	if !ok {
		return f, &parseError{problem: ProblemMalformed, childID: f.ChildID, detail: fmt.Sprintf("mode %s is not a string", rawMode)}
	}
	f.Mode = Mode(mode)
	if rawLabel, ok := fields["label"]; ok {
		label, ok := jsjson.StringValue(rawLabel)
		if !ok {
			return f, &parseError{problem: ProblemMalformed, childID: f.ChildID, detail: fmt.Sprintf("label %s is not a string", rawLabel)}
		}
		f.Label = &label
	}
	if detail := modeProblem(f); detail != "" {
		return f, &parseError{problem: ProblemMalformed, childID: f.ChildID, detail: detail}
	}
	return f, nil
}

// modeProblem is what is wrong with the version/mode/label combination,
// "" when nothing is.
func modeProblem(f Fact) string {
	switch f.Mode {
	case ModeOneShot:
		if f.Version == VersionExternal {
			return `mode "one-shot" needs version 0 or 1`
		}
	case ModeContinuable:
		if f.Version == VersionExternal {
			return `mode "continuable" needs version 0 or 1`
		}
		if f.Label == nil {
			return `mode "continuable" needs a label`
		}
	case ModeUnknown:
		if f.Version != VersionUnknown {
			return `mode "unknown" needs version 1`
		}
	case ModeExternal:
		if f.Version != VersionExternal {
			return `mode "external" needs version 2`
		}
	default:
		return fmt.Sprintf("mode %s is not one-shot, continuable, unknown or external", jsjson.String(string(f.Mode)))
	}
	return ""
}

// Encode is the payload of f as DSH writes it: keys version, childId,
// childCreatedAt, mode, then label when present, JSON.stringify's spelling.
// It refuses a fact ParseFact would refuse, so dsh never writes one DSH
// cannot read.
func Encode(f Fact) ([]byte, error) {
	b := encode(f)
	if _, err := ParseFact(b); err != nil {
		return nil, fmt.Errorf("encode subagent catalog fact: %w", err)
	}
	return b, nil
}

// encode is Encode without the check: the back-fill writes what DSH's
// migration writes, valid or not, and the fold then judges it.
func encode(f Fact) []byte {
	b := []byte(`{"version":`)
	b = jsjson.AppendInt(b, int64(f.Version))
	b = append(b, `,"childId":`...)
	b = jsjson.AppendString(b, f.ChildID)
	b = append(b, `,"childCreatedAt":`...)
	b = jsjson.AppendInt(b, f.ChildCreatedAt)
	b = append(b, `,"mode":`...)
	b = jsjson.AppendString(b, string(f.Mode))
	if f.Label != nil {
		b = append(b, `,"label":`...)
		b = jsjson.AppendString(b, *f.Label)
	}
	return append(b, '}')
}

// LiveFact is the fact DSH's live creation appends to a parent when it
// starts a local child: version 0, the child's header createdAt, its mode
// and label.
func LiveFact(childID string, childCreatedAt int64, mode Mode, label *string) ([]byte, error) {
	return Encode(Fact{Version: VersionLive, ChildID: childID, ChildCreatedAt: childCreatedAt, Mode: mode, Label: label})
}
