package subagent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/dsh-project/dsh/internal/jsjson"
	"github.com/dsh-project/dsh/internal/projcache"
	"github.com/dsh-project/dsh/internal/session"
)

// The `subagent` projection unit, as DSH registers it.
const (
	UnitKey          = "subagent"
	UnitStateVersion = 2
)

// Identity is a child's durable identity as the `subagent` unit folds it:
// the mode and label of the last valid descriptor in the log and the seq of
// that descriptor event.
type Identity struct {
	Mode  Mode
	Label *string // always set for continuable identities
	Seq   int64
}

// MarshalJSON writes DSH's view shape {mode, label?, seq}.
func (id Identity) MarshalJSON() ([]byte, error) {
	return id.appendJSON(nil), nil
}

func (id Identity) appendJSON(b []byte) []byte {
	b = append(b, `{"mode":`...)
	b = jsjson.AppendString(b, string(id.Mode))
	if id.Label != nil {
		b = append(b, `,"label":`...)
		b = jsjson.AppendString(b, *id.Label)
	}
	b = append(b, `,"seq":`...)
	b = jsjson.AppendInt(b, id.Seq)
	return append(b, '}')
}

// IdentityFromView reads the `subagent` unit's view: nil for `null` or for
// no view at all (a missing key; DSH treats both the same), the identity
// otherwise. The view schema is strict, as DSH's: exactly mode, an optional
// (for continuable, required) string label and a non-negative integer seq.
func IdentityFromView(raw json.RawMessage) (*Identity, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	if id, ok := canonicalIdentity(raw); ok {
		return &id, nil
	}
	return decodeIdentityView(raw)
}

// decodeIdentityView is IdentityFromView for any JSON text: the strict
// general decoder.
func decodeIdentityView(raw json.RawMessage) (*Identity, error) {
	obj, err := checkedObject(raw)
	if err != nil {
		return nil, fmt.Errorf("subagent view %w", err)
	}
	if key, found := obj.FirstUnknown(identityKeys); found {
		return nil, fmt.Errorf("subagent view has unknown field %q", key)
	}
	var id Identity
	modeRaw, _ := obj.Get("mode")
	switch mode, _ := jsjson.StringValue(modeRaw); Mode(mode) {
	case ModeOneShot, ModeContinuable:
		id.Mode = Mode(mode)
	default:
		return nil, errors.New(`subagent view mode must be "one-shot" or "continuable"`)
	}
	if labelRaw, present := obj.Get("label"); present {
		label, ok := jsjson.StringValue(labelRaw)
		if !ok {
			return nil, errors.New("subagent view label must be a string")
		}
		id.Label = &label
	} else if id.Mode == ModeContinuable {
		return nil, errors.New("subagent view of a continuable child must have a label")
	}
	seqRaw, _ := obj.Get("seq")
	seq, ok := seqValue(seqRaw)
	if !ok {
		return nil, errors.New("subagent view seq must be a non-negative integer")
	}
	id.Seq = seq
	return &id, nil
}

var identityKeys = map[string]bool{"mode": true, "label": true, "seq": true}

// seqValue reads a JSON number that must be a non-negative safe integer.
func seqValue(raw json.RawMessage) (int64, bool) {
	n, _, ok := jsjson.SafeInteger(raw)
	return n, ok && n >= 0
}

// OwnSuffix reports whether an event at seq belongs to a session's own
// suffix, given the session's exact inherited cut (the number of events it
// inherited from its parent; 0 for an unseeded session). An identity whose
// seq is below the cut came from an ancestor's descriptor in the seed.
func OwnSuffix(seq, inheritedCut int64) bool { return seq >= inheritedCut }

// RegisterUnit registers the `subagent` unit in reg.
func RegisterUnit(reg *projcache.Registry) error { return reg.Register(identityUnit{}) }

// identityUnit is DSH's `subagent` unit. Its state is `{}` or
// `{"identity":{mode,label?,seq}}`; the last descriptor in the log wins, and
// a malformed or unsupported descriptor resets the state to `{}`. It has no
// own-suffix check: it never sees the header (callers apply OwnSuffix).
type identityUnit struct{}

var (
	emptyState     = json.RawMessage(`{}`)
	identityPrefix = []byte(`{"identity":`)
)

func (identityUnit) Key() string           { return UnitKey }
func (identityUnit) StateVersion() int     { return UnitStateVersion }
func (identityUnit) Init() json.RawMessage { return emptyState }
func (identityUnit) EventTypes() []string  { return []string{session.TypeDescriptor} }

// Apply never fails on bad data: a descriptor that does not parse is, to the
// identity, the same as an unsupported one.
func (identityUnit) Apply(state json.RawMessage, e session.Event) (json.RawMessage, error) {
	if e.Type != session.TypeDescriptor {
		return state, nil
	}
	id := Identity{Seq: e.Seq}
	if mode, label, ok := scanCanonicalDescriptor(e.Data); ok {
		// The form dsh writes: its scan is its whole check.
		id.Mode = mode
		if label != nil {
			s := string(label)
			id.Label = &s
		}
	} else {
		var d Descriptor
		if supported, err := parseDescriptor(e.Data, &d); err != nil || !supported {
			return emptyState, nil
		}
		id.Mode, id.Label = d.Mode, d.Label
	}
	// Room for the prefix, the fixed keys, a mode, a seq and an unescaped
	// label: one allocation for the usual state.
	size := len(identityPrefix) + 64
	if id.Label != nil {
		size += len(*id.Label)
	}
	b := append(make([]byte, 0, size), identityPrefix...)
	b = id.appendJSON(b)
	return append(b, '}'), nil
}

// View returns the identity or `null`. The state may come from a checkpoint
// written by another process, so it is checked as strictly as a view. The
// view may share the state's bytes (neither is ever written to).
func (identityUnit) View(state json.RawMessage) (json.RawMessage, error) {
	// Fast paths for the exact shapes Apply writes; anything else takes
	// the general path below.
	if bytes.Equal(state, emptyState) {
		return json.RawMessage("null"), nil
	}
	if inner, ok := bytes.CutPrefix(state, identityPrefix); ok && bytes.HasSuffix(inner, []byte("}")) {
		view := inner[: len(inner)-1 : len(inner)-1]
		if _, _, _, ok := scanCanonicalIdentity(view); ok {
			// Canonical text is already what appendJSON would write.
			return view, nil
		}
		if id, err := IdentityFromView(view); err == nil && id != nil {
			return id.appendJSON(nil), nil
		}
	}
	obj, err := checkedObject(state)
	if err != nil {
		return nil, fmt.Errorf("subagent state %w", err)
	}
	if key, found := obj.FirstUnknown(stateKeys); found {
		return nil, fmt.Errorf("subagent state has unknown field %q", key)
	}
	raw, present := obj.Get("identity")
	if !present {
		return json.RawMessage("null"), nil
	}
	id, err := IdentityFromView(raw)
	if err != nil {
		return nil, err
	}
	if id == nil {
		return nil, errors.New("subagent state identity must be an object")
	}
	return id.appendJSON(nil), nil
}

var stateKeys = map[string]bool{"identity": true}

// checkedObject reads a JSON object that may not be valid text: states and
// views are dsh's own data, but a checkpoint may have been written by
// another process.
func checkedObject(raw json.RawMessage) (jsjson.Object, error) {
	if kindOf(raw) != kindObject {
		return nil, errors.New("must be an object")
	}
	obj, err := jsjson.ParseObject(raw)
	if err != nil {
		return nil, fmt.Errorf("is not JSON: %w", err)
	}
	return obj, nil
}
