package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/dsh-project/dsh/internal/render"
)

func newConfigCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Print the effective configuration and where each value came from",
		Long: `Print every setting with its effective value, the layer it came from and
its environment variable. Layers, highest first: command-line flag, environment
variable (DSH_*; NO_COLOR also sets noColor), config file, built-in default.

The config file is YAML, read from --config, DSH_CONFIG, or by default
$XDG_CONFIG_HOME/dsh/config.yaml (~/.config/dsh/config.yaml). A missing default
file is fine; a file named explicitly must exist, and any file must parse.
Nested keys (cache.writeEveryEvents) are nested YAML maps.

` + exitStatusHelp(),
		Example: "  dsh config\n  DSH_MAX_DEPTH=3 dsh config -o json",
		Args:    exactArgs(),
	}
	out := addOutputFlag(cmd, render.Table, render.TSV, render.JSON, render.JSONL)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		p, err := out.printer(a, cmd)
		if err != nil {
			return err
		}
		cfg, err := a.config()
		if err != nil {
			return err
		}
		l := render.NewList(p, []render.Column[configSource]{
			{Header: "KEY", Value: func(s configSource) string { return s.Key }},
			{Header: "VALUE", Value: func(s configSource) string { return fmt.Sprint(s.Value) }},
			{Header: "SOURCE", Value: func(s configSource) string { return s.Source }},
			{Header: "ENV", Value: func(s configSource) string { return s.Env }},
		})
		for _, s := range cfg.Sources {
			if err := l.Add(s); err != nil {
				return err
			}
		}
		return l.Close()
	}
	return cmd
}
