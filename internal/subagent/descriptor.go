package subagent

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/dsh-project/dsh/internal/jsjson"
)

// DescriptorVersion is the `subagent/descriptor` payload version dsh writes
// (DSH 0.1.0-rc.8's SUBAGENT_DESCRIPTOR_VERSION).
const DescriptorVersion = 2

// DescriptorVersionLater is the payload version of later DSH releases
// (0.1.2-alpha.1 on, and every child of session formats 2–4): version 2's
// keys plus an optional agentReasoningEffort string on continuable
// payloads. dsh reads both versions (later DSH reads only 3; reading 2 as
// well keeps rc.8 children listable); any other version is unsupported.
const DescriptorVersionLater = 3

// Mode is how a child runs: once, or as a conversation that can be resumed.
type Mode string

// The two modes a version-2 descriptor may declare.
const (
	ModeOneShot     Mode = "one-shot"
	ModeContinuable Mode = "continuable"
)

// ToolFilter restricts a continuable child's tools. A nil slice means the key
// is absent; a non-nil empty slice is a present, empty list (valid: DSH
// accepts `{"allow":[]}`). At least one of the two must be present.
type ToolFilter struct {
	Allow []string
	Deny  []string
}

// Descriptor is the payload of a `subagent/descriptor` event: the durable
// authority for a child's mode and label, and for a continuable child the
// inputs its cold resume rebuilds from. Optional fields are nil when absent.
type Descriptor struct {
	Version  int
	Mode     Mode
	Provider string
	// Label is optional for one-shot children and required for continuable ones.
	Label *string
	// AgentProvider, AgentModel, Persona and ToolFilter exist only on
	// continuable descriptors.
	AgentProvider *string
	AgentModel    *string
	Persona       *string
	ToolFilter    *ToolFilter
	// AgentReasoningEffort exists only on version-3 continuable
	// descriptors.
	AgentReasoningEffort *string
}

// DescriptorError is a malformed descriptor: DSH throws an Error whose
// message begins "persisted subagent descriptor " and names the problem.
type DescriptorError struct {
	// Problem is the part after the prefix, e.g. `label must be a string`.
	Problem string
}

func (e *DescriptorError) Error() string { return "persisted subagent descriptor " + e.Problem }

func malformed(format string, args ...any) *DescriptorError {
	return &DescriptorError{Problem: fmt.Sprintf(format, args...)}
}

// Keys a version-2 payload may carry, by mode.
var (
	oneShotKeys     = map[string]bool{"version": true, "mode": true, "provider": true, "label": true}
	continuableKeys = map[string]bool{
		"version": true, "mode": true, "provider": true, "label": true,
		"agentProvider": true, "agentModel": true, "persona": true, "toolFilter": true,
	}
	// A version-3 continuable payload may also name its reasoning effort.
	continuableKeysV3 = map[string]bool{
		"version": true, "mode": true, "provider": true, "label": true,
		"agentProvider": true, "agentModel": true, "agentReasoningEffort": true, "persona": true, "toolFilter": true,
	}
	toolFilterKeys = map[string]bool{"allow": true, "deny": true}
	// descriptorKeys are every key above: the reader takes these strings
	// rather than copying each key (a cold listing reads one payload per
	// child).
	descriptorKeys = []string{"version", "mode", "provider", "label", "agentProvider", "agentModel",
		"agentReasoningEffort", "persona", "toolFilter", "allow", "deny"}
)

// ParseDescriptor reads one descriptor payload with DSH's checks in DSH's
// order. It returns:
//   - a *DescriptorError when the payload is malformed;
//   - (nil, nil) when the payload is unsupported: its version is a number
//     other than 2 or 3 (compared numerically, so 2.0 is 2), whatever else
//     it holds;
//   - the descriptor otherwise.
//
// Unknown-key checks report the first unknown key in JavaScript's property
// order (what Object.keys returns for the parsed payload), so an error names
// the same key DSH names.
func ParseDescriptor(raw json.RawMessage) (*Descriptor, error) {
	d := new(Descriptor)
	supported, err := parseDescriptor(raw, d)
	if err != nil || !supported {
		return nil, err
	}
	return d, nil
}

// parseDescriptor is ParseDescriptor into d, which the caller may keep on
// its stack (the identity unit parses one descriptor per cold child);
// supported is false, with a nil error, for an unsupported version.
func parseDescriptor(raw json.RawMessage, d *Descriptor) (supported bool, err error) {
	return parseDescriptorOf(raw, d, true)
}

// ParseDescriptorRC8 is ParseDescriptor as DSH 0.1.0-rc.8 reads a payload
// (the 0.1.0-rc.8 profile): version 2 only, so a version-3 payload is
// unsupported whatever else it holds, as any other version is.
func ParseDescriptorRC8(raw json.RawMessage) (*Descriptor, error) {
	d := new(Descriptor)
	supported, err := parseDescriptorOf(raw, d, false)
	if err != nil || !supported {
		return nil, err
	}
	return d, nil
}

// parseDescriptorOf is parseDescriptor; later says whether version 3 is
// read (dsh's seeds rules) or unsupported (DSH 0.1.0-rc.8's).
func parseDescriptorOf(raw json.RawMessage, d *Descriptor, later bool) (supported bool, err error) {
	if !json.Valid(raw) {
		// DSH never sees this (its events hold parsed JSON), but dsh reads
		// bytes; not being JSON at all is still "not an object".
		return false, malformed("payload must be an object")
	}
	// Room for every key a payload may hold (each once), on the stack.
	var members [9]jsjson.Member
	payload, ok := jsjson.AppendObject(members[:0], raw, descriptorKeys)
	if !ok {
		return false, malformed("payload must be an object")
	}
	version, ok := payload.Get("version")
	if !ok || kindOf(version) != kindNumber {
		return false, malformed("version must be a number")
	}
	switch {
	case numberIs(version, DescriptorVersion):
		d.Version = DescriptorVersion
	case later && numberIs(version, DescriptorVersionLater):
		d.Version = DescriptorVersionLater
	default:
		return false, nil
	}
	modeRaw, _ := payload.Get("mode")
	mode, ok := modeValue(modeRaw)
	if !ok {
		return false, malformed(`mode must be "one-shot" or "continuable"`)
	}
	d.Mode = mode
	allowed := oneShotKeys
	switch {
	case d.Mode == ModeContinuable && d.Version == DescriptorVersionLater:
		allowed = continuableKeysV3
	case d.Mode == ModeContinuable:
		allowed = continuableKeys
	}
	if key, found := payload.FirstUnknown(allowed); found {
		return false, malformed(`payload has unknown field "%s"`, key)
	}
	providerRaw, _ := payload.Get("provider")
	provider, ok := jsjson.StringValue(providerRaw)
	if !ok {
		return false, malformed("provider must be a string")
	}
	d.Provider = provider
	if d.Mode == ModeOneShot {
		label, err := optionalString(payload, "label")
		if err != nil {
			return false, err
		}
		d.Label = label
		return true, nil
	}
	labelRaw, _ := payload.Get("label")
	label, ok := jsjson.StringValue(labelRaw)
	if !ok {
		return false, malformed("label must be a string")
	}
	d.Label = &label
	// In DSH's order. Assigned field by field, not through a table of
	// pointers into d, which would move the caller's d to the heap.
	if d.AgentProvider, err = optionalString(payload, "agentProvider"); err != nil {
		return false, err
	}
	if d.AgentModel, err = optionalString(payload, "agentModel"); err != nil {
		return false, err
	}
	if d.AgentReasoningEffort, err = optionalString(payload, "agentReasoningEffort"); err != nil {
		return false, err
	}
	if d.Persona, err = optionalString(payload, "persona"); err != nil {
		return false, err
	}
	if raw, present := payload.Get("toolFilter"); present {
		tf, err := parseToolFilter(raw)
		if err != nil {
			return false, err
		}
		d.ToolFilter = tf
	}
	return true, nil
}

// modeValue reads a JSON value that must be one of the two modes, without
// building a string for the literal forms dsh writes.
func modeValue(raw json.RawMessage) (Mode, bool) {
	switch string(bytes.TrimSpace(raw)) {
	case `"` + string(ModeOneShot) + `"`:
		return ModeOneShot, true
	case `"` + string(ModeContinuable) + `"`:
		return ModeContinuable, true
	}
	// Escaped spellings of a mode name it all the same.
	switch s, _ := jsjson.StringValue(raw); Mode(s) {
	case ModeOneShot, ModeContinuable:
		return Mode(s), true
	}
	return "", false
}

// optionalString reads a key that may be absent; present, it must be a
// string (null is not).
func optionalString(obj jsjson.Object, key string) (*string, error) {
	raw, present := obj.Get(key)
	if !present {
		return nil, nil
	}
	s, ok := jsjson.StringValue(raw)
	if !ok {
		return nil, malformed("%s must be a string", key)
	}
	return &s, nil
}

func parseToolFilter(raw json.RawMessage) (*ToolFilter, error) {
	obj, ok := jsjson.AppendObject(nil, raw, descriptorKeys)
	if !ok {
		return nil, malformed("toolFilter must be an object")
	}
	if key, found := obj.FirstUnknown(toolFilterKeys); found {
		return nil, malformed(`toolFilter has unknown field "%s"`, key)
	}
	var tf ToolFilter
	allow, hasAllow := obj.Get("allow")
	if hasAllow {
		list, ok := stringList(allow)
		if !ok {
			return nil, malformed("toolFilter.allow must be an array of strings")
		}
		tf.Allow = list
	}
	deny, hasDeny := obj.Get("deny")
	if hasDeny {
		list, ok := stringList(deny)
		if !ok {
			return nil, malformed("toolFilter.deny must be an array of strings")
		}
		tf.Deny = list
	}
	if !hasAllow && !hasDeny {
		return nil, malformed("toolFilter must declare allow and/or deny")
	}
	return &tf, nil
}

// MarshalJSON writes the payload as DSH's writer does: keys in the order
// version, mode, provider, label, agentProvider, agentModel,
// agentReasoningEffort, persona, toolFilter (allow, deny), absent optionals left out, strings escaped as
// JSON.stringify escapes them. A descriptor that ParseDescriptor would not
// read back as the same valid descriptor is refused, so dsh never
// writes an identity it would later list as corrupt.
//
// For byte-exact event data call MarshalJSON directly: json.Marshal
// re-escapes <, > and & (and U+2028/U+2029) in a Marshaler's output.
func (d Descriptor) MarshalJSON() ([]byte, error) {
	b := []byte(`{"version":`)
	b = jsjson.AppendInt(b, int64(d.Version))
	b = append(b, `,"mode":`...)
	b = jsjson.AppendString(b, string(d.Mode))
	b = append(b, `,"provider":`...)
	b = jsjson.AppendString(b, d.Provider)
	for _, f := range []struct {
		key string
		val *string
	}{
		{"label", d.Label},
		{"agentProvider", d.AgentProvider},
		{"agentModel", d.AgentModel},
		{"agentReasoningEffort", d.AgentReasoningEffort},
		{"persona", d.Persona},
	} {
		if f.val != nil {
			b = append(b, ',')
			b = jsjson.AppendString(b, f.key)
			b = append(b, ':')
			b = jsjson.AppendString(b, *f.val)
		}
	}
	if tf := d.ToolFilter; tf != nil {
		b = append(b, `,"toolFilter":{`...)
		if tf.Allow != nil {
			b = append(b, `"allow":`...)
			b = appendStringList(b, tf.Allow)
		}
		if tf.Deny != nil {
			if tf.Allow != nil {
				b = append(b, ',')
			}
			b = append(b, `"deny":`...)
			b = appendStringList(b, tf.Deny)
		}
		b = append(b, '}')
	}
	b = append(b, '}')
	back, err := ParseDescriptor(b)
	if err != nil {
		return nil, fmt.Errorf("encode subagent descriptor: %w", err)
	}
	if back == nil {
		return nil, fmt.Errorf("encode subagent descriptor: version %d is not %d or %d", d.Version, DescriptorVersion, DescriptorVersionLater)
	}
	return b, nil
}

func appendStringList(b []byte, list []string) []byte {
	b = append(b, '[')
	for i, s := range list {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsjson.AppendString(b, s)
	}
	return append(b, ']')
}

// jsonKind is the JavaScript view of a JSON value's type.
type jsonKind int

const (
	kindOther jsonKind = iota // null or boolean
	kindObject
	kindArray
	kindString
	kindNumber
)

// kindOf classifies valid JSON text by its first significant byte.
func kindOf(raw json.RawMessage) jsonKind {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 {
		return kindOther
	}
	switch c := raw[0]; {
	case c == '{':
		return kindObject
	case c == '[':
		return kindArray
	case c == '"':
		return kindString
	case c == '-' || (c >= '0' && c <= '9'):
		return kindNumber
	}
	return kindOther
}

// numberIs reports whether a JSON number equals want as a JavaScript number
// would (an overflowing literal is Infinity, which equals nothing finite).
func numberIs(raw json.RawMessage, want float64) bool {
	f, ok := jsjson.NumberValue(raw)
	return ok && f == want
}

// stringList decodes an array whose every element is a string. An empty
// array yields a non-nil empty slice (present, not absent).
func stringList(raw json.RawMessage) ([]string, bool) {
	if kindOf(raw) != kindArray {
		return nil, false
	}
	elems, ok := jsjson.ArrayElements(raw)
	if !ok {
		return nil, false
	}
	list := make([]string, 0, len(elems))
	for _, e := range elems {
		s, ok := jsjson.StringValue(e)
		if !ok {
			return nil, false
		}
		list = append(list, s)
	}
	return list, true
}
