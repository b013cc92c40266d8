package subagent

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func strp(s string) *string { return &s }

// TestDescriptorP1 pins the valid and unsupported outcomes of DSH's P1.
func TestDescriptorP1(t *testing.T) {
	cases := []struct {
		name string
		raw  string
		want *Descriptor
	}{
		{"one-shot without label", `{"version":2,"mode":"one-shot","provider":"spawn"}`,
			&Descriptor{Version: 2, Mode: ModeOneShot, Provider: "spawn"}},
		{"one-shot with label", `{"version":2,"mode":"one-shot","provider":"spawn","label":"child work"}`,
			&Descriptor{Version: 2, Mode: ModeOneShot, Provider: "spawn", Label: strp("child work")}},
		{"full continuable",
			`{"version":2,"mode":"continuable","provider":"spawn","label":"child work","agentProvider":"deepseek","agentModel":"chat","persona":"reviewer","toolFilter":{"allow":["read"],"deny":["bash"]}}`,
			&Descriptor{Version: 2, Mode: ModeContinuable, Provider: "spawn", Label: strp("child work"),
				AgentProvider: strp("deepseek"), AgentModel: strp("chat"), Persona: strp("reviewer"),
				ToolFilter: &ToolFilter{Allow: []string{"read"}, Deny: []string{"bash"}}}},
		{"allow alone", `{"version":2,"mode":"continuable","provider":"spawn","label":"l","toolFilter":{"allow":["read"]}}`,
			&Descriptor{Version: 2, Mode: ModeContinuable, Provider: "spawn", Label: strp("l"), ToolFilter: &ToolFilter{Allow: []string{"read"}}}},
		{"deny alone", `{"version":2,"mode":"continuable","provider":"spawn","label":"l","toolFilter":{"deny":["bash"]}}`,
			&Descriptor{Version: 2, Mode: ModeContinuable, Provider: "spawn", Label: strp("l"), ToolFilter: &ToolFilter{Deny: []string{"bash"}}}},
		{"empty allow list is valid", `{"version":2,"mode":"continuable","provider":"spawn","label":"l","toolFilter":{"allow":[]}}`,
			&Descriptor{Version: 2, Mode: ModeContinuable, Provider: "spawn", Label: strp("l"), ToolFilter: &ToolFilter{Allow: []string{}}}},
		{"version 4 is unsupported", `{"version":4,"provider":"spawn"}`, nil},
		// Version 3 (later DSH, every child of formats 2-4).
		{"v3 continuable without agentReasoningEffort", `{"version":3,"mode":"continuable","provider":"fork","label":"Recall","agentProvider":"deepseek-official","agentModel":"m"}`,
			&Descriptor{Version: 3, Mode: ModeContinuable, Provider: "fork", Label: strp("Recall"), AgentProvider: strp("deepseek-official"), AgentModel: strp("m")}},
		{"v3 continuable with agentReasoningEffort", `{"version":3,"mode":"continuable","provider":"spawn","label":"l","agentProvider":"p","agentModel":"m","agentReasoningEffort":"high"}`,
			&Descriptor{Version: 3, Mode: ModeContinuable, Provider: "spawn", Label: strp("l"), AgentProvider: strp("p"), AgentModel: strp("m"), AgentReasoningEffort: strp("high")}},
		{"v3 one-shot", `{"version":3,"mode":"one-shot","provider":"fork","label":"Recall"}`,
			&Descriptor{Version: 3, Mode: ModeOneShot, Provider: "fork", Label: strp("Recall")}},
		{"version 1 with garbage is unsupported", `{"version":1,"mode":7,"provider":[],"extra":true}`, nil},
		{"version 2.5 is unsupported", `{"version":2.5,"mode":"one-shot","provider":"spawn"}`, nil},
		{"overflowing version is unsupported", `{"version":1e400,"mode":"one-shot","provider":"spawn"}`, nil},
		{"version 2.0 is 2", `{"version":2.0,"mode":"one-shot","provider":"spawn"}`,
			&Descriptor{Version: 2, Mode: ModeOneShot, Provider: "spawn"}},
		{"version 2e0 is 2", `{"version":2e0,"mode":"one-shot","provider":"spawn"}`,
			&Descriptor{Version: 2, Mode: ModeOneShot, Provider: "spawn"}},
		{"escaped strings decode", `{"version":2,"mode":"one\u002dshot","provider":"sp\"awn"}`,
			&Descriptor{Version: 2, Mode: ModeOneShot, Provider: `sp"awn`}},
		{"repeated key takes the last value", `{"version":2,"mode":"one-shot","provider":7,"provider":"spawn"}`,
			&Descriptor{Version: 2, Mode: ModeOneShot, Provider: "spawn"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseDescriptor(json.RawMessage(c.raw))
			if err != nil {
				t.Fatalf("ParseDescriptor: %v", err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

// TestDescriptorMalformed pins P2–P23 and the ordering rules of §2.4.
func TestDescriptorMalformed(t *testing.T) {
	cases := []struct {
		id, raw, problem string
	}{
		{"P2", `"invalid"`, "payload must be an object"},
		{"P3", `null`, "payload must be an object"},
		{"P4", `[]`, "payload must be an object"},
		{"P5", `{"provider":"spawn"}`, "version must be a number"},
		{"P6", `{"version":"1"}`, "version must be a number"},
		{"P7", `{"version":2}`, `mode must be "one-shot" or "continuable"`},
		{"P8", `{"version":2,"mode":"later","provider":"spawn"}`, `mode must be "one-shot" or "continuable"`},
		{"P9", `{"version":2,"mode":"one-shot","provider":"spawn","persona":"reviewer"}`, `payload has unknown field "persona"`},
		{"P10", `{"version":2,"mode":"one-shot","provider":"spawn","label":7}`, "label must be a string"},
		{"P11", `{"version":2,"mode":"continuable","provider":"spawn","extra":true}`, `payload has unknown field "extra"`},
		{"P12", `{"version":2,"mode":"continuable","label":"child"}`, "provider must be a string"},
		{"P13", `{"version":2,"mode":"continuable","provider":"spawn"}`, "label must be a string"},
		{"P14", `{"version":2,"mode":"continuable","provider":"spawn","label":7}`, "label must be a string"},
		{"P15", `{"version":2,"mode":"continuable","provider":7,"label":"child"}`, "provider must be a string"},
		{"P16", `{"version":2,"mode":"continuable","provider":"spawn","label":"child","agentProvider":7}`, "agentProvider must be a string"},
		{"P17", `{"version":2,"mode":"continuable","provider":"spawn","label":"child","agentModel":[]}`, "agentModel must be a string"},
		{"P18", `{"version":2,"mode":"continuable","provider":"spawn","label":"child","persona":{}}`, "persona must be a string"},
		{"P19", `{"version":2,"mode":"continuable","provider":"spawn","label":"child","toolFilter":[]}`, "toolFilter must be an object"},
		{"P20", `{"version":2,"mode":"continuable","provider":"spawn","label":"child","toolFilter":{"except":["bash"]}}`, `toolFilter has unknown field "except"`},
		{"P21", `{"version":2,"mode":"continuable","provider":"spawn","label":"child","toolFilter":{}}`, "toolFilter must declare allow and/or deny"},
		{"P22", `{"version":2,"mode":"continuable","provider":"spawn","label":"child","toolFilter":{"allow":"read"}}`, "toolFilter.allow must be an array of strings"},
		{"P23", `{"version":2,"mode":"continuable","provider":"spawn","label":"child","toolFilter":{"deny":[7]}}`, "toolFilter.deny must be an array of strings"},

		// Ordering and edge rules of §2.4 beyond the catalogue.
		{"number payload", `42`, "payload must be an object"},
		{"not JSON", `{"version":`, "payload must be an object"},
		{"empty data", ``, "payload must be an object"},
		{"null version", `{"version":null}`, "version must be a number"},
		{"missing mode", `{"version":2,"provider":"spawn"}`, `mode must be "one-shot" or "continuable"`},
		{"mode is checked before unknown keys", `{"version":2,"mode":"Later","extra":1}`, `mode must be "one-shot" or "continuable"`},
		{"unknown key before provider type", `{"version":2,"mode":"one-shot","provider":7,"zzz":1}`, `payload has unknown field "zzz"`},
		{"first unknown in insertion order", `{"version":2,"mode":"one-shot","b":1,"a":1,"provider":"s"}`, `payload has unknown field "b"`},
		{"array-index keys come first", `{"version":2,"mode":"one-shot","provider":"s","zzz":1,"10":1,"7":1}`, `payload has unknown field "7"`},
		{"non-canonical index keeps insertion order", `{"version":2,"mode":"one-shot","provider":"s","zzz":1,"07":1}`, `payload has unknown field "zzz"`},
		{"key printed verbatim", `{"version":2,"mode":"one-shot","provider":"s","a\"b":1}`, `payload has unknown field "a"b"`},
		{"continuable key on one-shot", `{"version":2,"mode":"one-shot","provider":"s","agentModel":"m"}`, `payload has unknown field "agentModel"`},
		{"one-shot null label", `{"version":2,"mode":"one-shot","provider":"spawn","label":null}`, "label must be a string"},
		{"continuable null label", `{"version":2,"mode":"continuable","provider":"spawn","label":null}`, "label must be a string"},
		{"null optional string", `{"version":2,"mode":"continuable","provider":"spawn","label":"c","agentModel":null}`, "agentModel must be a string"},
		{"agentProvider before agentModel", `{"version":2,"mode":"continuable","provider":"spawn","label":"c","agentModel":1,"agentProvider":1}`, "agentProvider must be a string"},
		{"null toolFilter", `{"version":2,"mode":"continuable","provider":"spawn","label":"c","toolFilter":null}`, "toolFilter must be an object"},
		{"toolFilter unknown before allow type", `{"version":2,"mode":"continuable","provider":"spawn","label":"c","toolFilter":{"allow":1,"zzz":1}}`, `toolFilter has unknown field "zzz"`},
		{"allow checked before deny", `{"version":2,"mode":"continuable","provider":"spawn","label":"c","toolFilter":{"deny":1,"allow":1}}`, "toolFilter.allow must be an array of strings"},
		{"null in allow", `{"version":2,"mode":"continuable","provider":"spawn","label":"c","toolFilter":{"allow":["read",null]}}`, "toolFilter.allow must be an array of strings"},

		// agentReasoningEffort: a string, on version-3 continuable payloads only.
		{"bad agentReasoningEffort", `{"version":3,"mode":"continuable","provider":"spawn","label":"c","agentReasoningEffort":7}`, "agentReasoningEffort must be a string"},
		{"null agentReasoningEffort", `{"version":3,"mode":"continuable","provider":"spawn","label":"c","agentReasoningEffort":null}`, "agentReasoningEffort must be a string"},
		{"agentReasoningEffort on version 2", `{"version":2,"mode":"continuable","provider":"spawn","label":"c","agentReasoningEffort":"high"}`, `payload has unknown field "agentReasoningEffort"`},
		{"agentReasoningEffort on a one-shot", `{"version":3,"mode":"one-shot","provider":"fork","agentReasoningEffort":"high"}`, `payload has unknown field "agentReasoningEffort"`},
	}
	for _, c := range cases {
		t.Run(c.id, func(t *testing.T) {
			got, err := ParseDescriptor(json.RawMessage(c.raw))
			if got != nil {
				t.Fatalf("got descriptor %+v, want an error", got)
			}
			var de *DescriptorError
			if !errors.As(err, &de) {
				t.Fatalf("error %v (%T), want *DescriptorError", err, err)
			}
			if de.Problem != c.problem {
				t.Fatalf("problem %q, want %q", de.Problem, c.problem)
			}
			if want := "persisted subagent descriptor " + c.problem; err.Error() != want {
				t.Fatalf("message %q, want %q", err.Error(), want)
			}
		})
	}
}

func TestDescriptorEncode(t *testing.T) {
	cases := []struct {
		name string
		d    Descriptor
		want string
	}{
		{"one-shot without label", Descriptor{Version: 2, Mode: ModeOneShot, Provider: "spawn"},
			`{"version":2,"mode":"one-shot","provider":"spawn"}`},
		{"snapshot example", Descriptor{Version: 2, Mode: ModeContinuable, Provider: "spawn", Label: strp("Reply with CHILD_OK"),
			AgentProvider: strp("deepseek-official"), AgentModel: strp("deepseek-v4-flash")},
			`{"version":2,"mode":"continuable","provider":"spawn","label":"Reply with CHILD_OK","agentProvider":"deepseek-official","agentModel":"deepseek-v4-flash"}`},
		{"every field in DSH order", Descriptor{Version: 2, Mode: ModeContinuable, Provider: "fork", Label: strp("l"),
			AgentProvider: strp("p"), AgentModel: strp("m"), Persona: strp("You are scoped."),
			ToolFilter: &ToolFilter{Allow: []string{"read", "grep"}, Deny: []string{"bash"}}},
			`{"version":2,"mode":"continuable","provider":"fork","label":"l","agentProvider":"p","agentModel":"m","persona":"You are scoped.","toolFilter":{"allow":["read","grep"],"deny":["bash"]}}`},
		{"deny only", Descriptor{Version: 2, Mode: ModeContinuable, Provider: "spawn", Label: strp("l"), ToolFilter: &ToolFilter{Deny: []string{"noop"}}},
			`{"version":2,"mode":"continuable","provider":"spawn","label":"l","toolFilter":{"deny":["noop"]}}`},
		{"empty allow is kept", Descriptor{Version: 2, Mode: ModeContinuable, Provider: "spawn", Label: strp("l"), ToolFilter: &ToolFilter{Allow: []string{}}},
			`{"version":2,"mode":"continuable","provider":"spawn","label":"l","toolFilter":{"allow":[]}}`},
		{"JSON.stringify escaping", Descriptor{Version: 2, Mode: ModeOneShot, Provider: "spawn", Label: strp("<a&b>\u2028\"\n\x01")},
			`{"version":2,"mode":"one-shot","provider":"spawn","label":"<a&b>` + "\u2028" + `\"\n\u0001"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// Called directly: encoding/json would re-escape <, >, & and
			// U+2028 in a Marshaler's output, which JSON.stringify does not.
			got, err := c.d.MarshalJSON()
			if err != nil {
				t.Fatalf("MarshalJSON: %v", err)
			}
			if string(got) != c.want {
				t.Fatalf("got  %s\nwant %s", got, c.want)
			}
			back, err := ParseDescriptor(got)
			if err != nil || back == nil {
				t.Fatalf("read back: %v, %v", back, err)
			}
			if !reflect.DeepEqual(*back, c.d) {
				t.Fatalf("read back %+v, want %+v", *back, c.d)
			}
		})
	}
}

// TestDescriptorEncodeRefusesInvalid: dsh never writes a descriptor it would
// read back as malformed or unsupported (DSH refuses such a payload before
// any child exists).
func TestDescriptorEncodeRefusesInvalid(t *testing.T) {
	cases := []struct {
		name string
		d    Descriptor
		want string
	}{
		{"continuable without label", Descriptor{Version: 2, Mode: ModeContinuable, Provider: "spawn"}, "label must be a string"},
		{"one-shot with a route", Descriptor{Version: 2, Mode: ModeOneShot, Provider: "spawn", AgentModel: strp("m")}, `unknown field "agentModel"`},
		{"unknown mode", Descriptor{Version: 2, Mode: "later", Provider: "spawn"}, "mode must be"},
		{"empty tool filter", Descriptor{Version: 2, Mode: ModeContinuable, Provider: "spawn", Label: strp("l"), ToolFilter: &ToolFilter{}}, "must declare allow and/or deny"},
		{"other version", Descriptor{Version: 4, Mode: ModeOneShot, Provider: "spawn"}, "version 4 is not 2 or 3"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := c.d.MarshalJSON()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}
