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
