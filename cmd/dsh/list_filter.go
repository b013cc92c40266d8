package main

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/report"
)

// listFilter is --state and --mode: report.Filter keeps the rows whose
// state and mode were asked for, so CI scripts need no jq.
type listFilter struct {
	report.Filter
}

func (f *listFilter) addFlags(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringSliceVar(&f.States, "state", nil, "only rows in this state: "+strings.Join(report.States, ", ")+" (repeat or separate with commas for several)")
	fl.StringSliceVar(&f.Modes, "mode", nil, "only child rows of this mode: "+strings.Join(report.Modes, ", ")+" (diagnostic rows have none)")
}

// prepare refuses values that no row can have.
func (f *listFilter) prepare() error {
	if err := f.Check("--state", "--mode"); err != nil {
		return &dsherr.Error{Code: dsherr.Usage, Msg: err.Error(), Err: err}
	}
	return nil
}
