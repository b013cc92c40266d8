package subagent

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

// FuzzParseDescriptor feeds arbitrary bytes to ParseDescriptor, as a
// descriptor event's data: it must never panic, a refusal must be a
// *DescriptorError, and a descriptor it accepts must encode and read back
// as the same descriptor (dsh writes exactly what it would list).
func FuzzParseDescriptor(f *testing.F) {
	for _, seed := range []string{
		`{"version":2,"mode":"one-shot","provider":"spawn"}`,
		`{"version":2,"mode":"continuable","provider":"spawn","label":"child work","agentProvider":"deepseek","agentModel":"chat","persona":"reviewer","toolFilter":{"allow":["read"],"deny":["bash"]}}`,
		`{"version":2.0,"mode":"continuable","provider":"fork","label":"\u202e"}`,
		`{"version":4}`,
		`{"version":"2"}`,
		`[]`,
		`{"version":2,"mode":"continuable","provider":"spawn","label":"l","extra":1}`,
		`{"version":2,"mode":"continuable","provider":"spawn","label":"l","toolFilter":{"allow":"read"}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		d, err := ParseDescriptor(raw)
		if err != nil {
			var de *DescriptorError
			if !errors.As(err, &de) {
				t.Fatalf("refusal %v (%T) is not a *DescriptorError", err, err)
			}
			if d != nil {
				t.Fatalf("a refusal returned a descriptor %+v", d)
			}
			return
		}
		if d == nil {
			return // an unsupported version: nothing to round-trip
		}
		enc, err := d.MarshalJSON()
		if err != nil {
			t.Fatalf("accepted descriptor %+v does not encode: %v", d, err)
		}
		if !json.Valid(enc) {
			t.Fatalf("encoding %q is not JSON", enc)
		}
		back, err := ParseDescriptor(enc)
		if err != nil || back == nil {
			t.Fatalf("encoding %q does not read back: %v", enc, err)
		}
		if !reflect.DeepEqual(back, d) {
			t.Fatalf("round trip changed the descriptor:\n got %+v\nwant %+v", back, d)
		}
	})
}

// FuzzCanonicalDescriptor checks the identity unit's fast path against
// ParseDescriptor: any text scanCanonicalDescriptor accepts, ParseDescriptor
// accepts with the same mode and label.
func FuzzCanonicalDescriptor(f *testing.F) {
	for _, seed := range []string{
		`{"version":2,"mode":"one-shot","provider":"spawn"}`,
		`{"version":2,"mode":"one-shot","provider":"spawn","label":"x"}`,
		`{"version":2,"mode":"one-shot","provider":"spawn","label":"x","agentModel":"m"}`,
		`{"version":2,"mode":"continuable","provider":"spawn","label":"task 1: a b","agentProvider":"echo","agentModel":"echo"}`,
		`{"version":3,"mode":"continuable","provider":"spawn","label":"l","agentReasoningEffort":"high","persona":"p"}`,
		`{"version":2,"mode":"continuable","provider":"spawn","label":"l","agentReasoningEffort":"high"}`,
		`{"version":2,"mode":"continuable","provider":"spawn"}`,
		`{"version":2,"mode":"continuable","provider":"spawn","label":"l","label":"m"}`,
		`{"version":2,"mode":"continuable","provider":"spawn","label":"a\"b"}`,
		`{"version":23,"mode":"one-shot","provider":"spawn"}`,
		`{"version":2,"mode":"continuable","provider":"spawn","label":"l"} `,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		mode, label, ok := scanCanonicalDescriptor(raw)
		if !ok {
			return
		}
		d, err := ParseDescriptor(raw)
		if err != nil || d == nil {
			t.Fatalf("canonical %q: ParseDescriptor %+v, %v", raw, d, err)
		}
		if d.Mode != mode || (d.Label == nil) != (label == nil) || (label != nil && *d.Label != string(label)) {
			t.Fatalf("canonical %q: mode %q label %q; ParseDescriptor %+v", raw, mode, label, d)
		}
	})
}
