package main

import (
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/render"
)

// formatAgents is DSH's list_agents text, for commands that list children.
const formatAgents render.Format = "agents"

// allFormats is every format name some command accepts; the output setting
// must be one of them.
var allFormats = []render.Format{render.Table, render.TSV, render.JSON, render.JSONL, formatAgents, render.Tree, render.Wide}

// outputFlag is a command's -o/--output flag.
type outputFlag struct {
	value   string
	def     render.Format
	allowed []render.Format
}

// addOutputFlag declares -o on cmd. The first allowed format is the default.
func addOutputFlag(cmd *cobra.Command, allowed ...render.Format) *outputFlag {
	o := &outputFlag{def: allowed[0], allowed: allowed}
	names := make([]string, len(allowed))
	for i, f := range allowed {
		names[i] = string(f)
	}
	cmd.Flags().StringVarP(&o.value, "output", "o", "",
		"output format: "+strings.Join(names, "|")+" (default "+string(o.def)+"; env DSH_OUTPUT)")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(names, cobra.ShellCompDirectiveNoFileComp))
	return o
}

// printer resolves the format — the flag if given (it must be one this
// command prints), else the output setting if this command can print it,
// else the command's default — and returns a printer for it.
func (o *outputFlag) printer(a *app, cmd *cobra.Command) (*render.Printer, error) {
	f := o.def
	if cmd.Flags().Changed("output") {
		parsed, err := render.ParseFormat(o.value, o.allowed...)
		if err != nil {
			return nil, dsherr.Wrap(dsherr.Usage, err, "-o")
		}
		f = parsed
	} else {
		cfg, err := a.config()
		if err != nil {
			return nil, err
		}
		if parsed, err := render.ParseFormat(cfg.Output, o.allowed...); err == nil {
			f = parsed
		}
	}
	return a.printer(f)
}

// formatMillis renders an epoch-millisecond time for people, in UTC.
func formatMillis(ms int64) string { return render.Millis(ms) }

func optString(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func itoa(n int) string { return strconv.Itoa(n) }

func optInt(p *int64) string {
	if p == nil {
		return ""
	}
	return strconv.FormatInt(*p, 10)
}
