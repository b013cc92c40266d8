package watch

import (
	"reflect"
	"testing"

	"github.com/dsh-project/dsh/internal/subagent"
)

func child(id, label string, activity subagent.Activity) subagent.Row {
	return subagent.Row{Kind: subagent.KindChild, ID: id, Mode: subagent.ModeContinuable, Label: &label, Activity: activity}
}

func TestDiffMatchesRowsByID(t *testing.T) {
	a := child("a", "x", subagent.ActivityInactive)
	b := child("b", "y", subagent.ActivityInactive)
	bRunning := child("b", "y", subagent.ActivityRunning)
	bRelabelled := child("b", "z", subagent.ActivityInactive)
	c := child("c", "w", subagent.ActivityInactive)
	corrupt := subagent.Row{Kind: subagent.KindDiagnostic, ID: "b", Reason: subagent.ReasonCorrupt}
	for _, tc := range []struct {
		name     string
		old, new []subagent.Row
		want     []Event
	}{
		{"nothing changed, labels in other strings", []subagent.Row{a, b}, []subagent.Row{child("a", "x", subagent.ActivityInactive), child("b", "y", subagent.ActivityInactive)}, nil},
		{"first listing", nil, []subagent.Row{a, b}, []Event{{Added, a}, {Added, b}}},
		{"activity", []subagent.Row{a, b}, []subagent.Row{a, bRunning}, []Event{{Modified, bRunning}}},
		{"label", []subagent.Row{a, b}, []subagent.Row{a, bRelabelled}, []Event{{Modified, bRelabelled}}},
		{"child to diagnostic", []subagent.Row{b}, []subagent.Row{corrupt}, []Event{{Modified, corrupt}}},
		{"added in new order, deleted last", []subagent.Row{a, b}, []subagent.Row{c, a}, []Event{{Added, c}, {Deleted, b}}},
		{"all gone", []subagent.Row{a, b}, nil, []Event{{Deleted, a}, {Deleted, b}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Diff(tc.old, tc.new); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Diff = %+v\nwant %+v", got, tc.want)
			}
		})
	}
}
