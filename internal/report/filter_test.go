package report

import (
	"reflect"
	"testing"

	"github.com/dsh-project/dsh/internal/subagent"
)

// A filter keeps rows by --state (a child's activity, a diagnostic's
// reason) and --mode (children only: a diagnostic has no mode), both at
// once when both are given, in the listing's order and unchanged.
func TestFilterKeepsRowsByStateAndMode(t *testing.T) {
	child := func(id string, m subagent.Mode, a subagent.Activity) subagent.Row {
		return subagent.Row{Kind: subagent.KindChild, ID: id, Mode: m, Activity: a}
	}
	rows := []subagent.Row{
		child("a", subagent.ModeContinuable, subagent.ActivityRunning),
		{Kind: subagent.KindDiagnostic, ID: "b", Reason: subagent.ReasonCorrupt},
		child("c", subagent.ModeOneShot, subagent.ActivityInactive),
		child("d", subagent.ModeContinuable, subagent.ActivityInactive),
		{Kind: subagent.KindDiagnostic, ID: "e", Reason: subagent.ReasonUnavailable},
	}
	ids := func(rs []subagent.Row) []string {
		out := []string{}
		for _, r := range rs {
			out = append(out, r.ID)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		f    Filter
		want []string
	}{
		{"none", Filter{}, []string{"a", "b", "c", "d", "e"}},
		{"state of a child", Filter{States: []string{"inactive"}}, []string{"c", "d"}},
		{"state of a diagnostic", Filter{States: []string{"corrupt"}}, []string{"b"}},
		{"states of both kinds", Filter{States: []string{"running", "unavailable"}}, []string{"a", "e"}},
		{"mode drops diagnostics", Filter{Modes: []string{string(subagent.ModeContinuable)}}, []string{"a", "d"}},
		{"every mode still drops diagnostics", Filter{Modes: Modes}, []string{"a", "c", "d"}},
		{"state and mode", Filter{States: []string{"inactive"}, Modes: []string{string(subagent.ModeContinuable)}}, []string{"d"}},
		{"a diagnostic's state with a mode", Filter{States: []string{"corrupt"}, Modes: Modes}, []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.f.Apply(rows)
			if !reflect.DeepEqual(ids(got), tc.want) {
				t.Errorf("Apply = %q, want %q", ids(got), tc.want)
			}
			for _, r := range got {
				for _, orig := range rows {
					if orig.ID == r.ID && !reflect.DeepEqual(orig, r) {
						t.Errorf("row %s changed: %+v, was %+v", r.ID, r, orig)
					}
				}
			}
		})
	}
	if err := (Filter{States: States, Modes: Modes}).Check("--state", "--mode"); err != nil {
		t.Errorf("Check refused the documented values: %v", err)
	}
	for _, f := range []Filter{{States: []string{"Running"}}, {Modes: []string{"oneshot"}}, {States: []string{"continuable"}}, {Modes: []string{"running"}}} {
		if err := f.Check("--state", "--mode"); err == nil {
			t.Errorf("Check(%+v) accepted a value no row has", f)
		}
	}
}
