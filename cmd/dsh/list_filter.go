package main

import (
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/subagent"
)

// listFilter keeps the rows of a listing whose state and mode were asked
// for, so CI scripts need no jq. It only drops rows: the rows it keeps are
// printed exactly as DSH's listing produced them.
type listFilter struct {
	states, modes []string
}

var (
	// unsupported and external rows occur only under --dsh-compat 0.1.7.
	listStates = []string{"running", "inactive", "corrupt", "unavailable", "unsupported"}
	listModes  = []string{string(subagent.ModeContinuable), string(subagent.ModeOneShot), string(subagent.ModeExternal)}
)

func (f *listFilter) addFlags(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringSliceVar(&f.states, "state", nil, "only rows in this state: "+strings.Join(listStates, ", ")+" (repeat or separate with commas for several)")
	fl.StringSliceVar(&f.modes, "mode", nil, "only child rows of this mode: "+strings.Join(listModes, ", ")+" (diagnostic rows have none)")
}

// prepare refuses values that no row can have.
func (f *listFilter) prepare() error {
	for _, s := range f.states {
		if !slices.Contains(listStates, s) {
			return dsherr.New(dsherr.Usage, "--state: %q is not one of %s", s, strings.Join(listStates, ", "))
		}
	}
	for _, m := range f.modes {
		if !slices.Contains(listModes, m) {
			return dsherr.New(dsherr.Usage, "--mode: %q is not one of %s", m, strings.Join(listModes, ", "))
		}
	}
	return nil
}

// rowState is a row's state as --state names it: a child's activity or a
// diagnostic's reason.
func rowState(r subagent.Row) string {
	if r.Kind == subagent.KindDiagnostic {
		return string(r.Reason)
	}
	return string(r.Activity)
}

// apply returns the rows that pass, in their order.
func (f *listFilter) apply(rows []subagent.Row) []subagent.Row {
	if len(f.states) == 0 && len(f.modes) == 0 {
		return rows
	}
	var kept []subagent.Row
	for _, r := range rows {
		if len(f.states) > 0 && !slices.Contains(f.states, rowState(r)) {
			continue
		}
		if len(f.modes) > 0 && (r.Kind != subagent.KindChild || !slices.Contains(f.modes, string(r.Mode))) {
			continue
		}
		kept = append(kept, r)
	}
	return kept
}
