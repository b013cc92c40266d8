package main

import (
	"context"
	"fmt"
	"sort"

	"github.com/spf13/cobra"

	"github.com/dsh-project/dsh/internal/gencorpus"
	"github.com/dsh-project/dsh/internal/render"
)

// newDevCmd holds commands for dsh's own development (benchmark corpora);
// it is hidden from help.
func newDevCmd(a *app) *cobra.Command {
	c := newGroupCmd("dev", "Tools for developing dsh", "Tools for developing dsh itself.", newGenCorpusCmd(a))
	c.Hidden = true
	return c
}

func newGenCorpusCmd(a *app) *cobra.Command {
	var (
		spec gencorpus.Spec
		mode progressMode
	)
	cmd := &cobra.Command{
		Use:   "gen-corpus",
		Short: "Write a benchmark corpus into the database",
		Long: `Write a benchmark corpus into the database: one parent (--parent) with
--children subagent children — continuable, one-shot, fork children, and
corrupt and unreadable ones — with transcripts of --min-events to
--max-events events, interleaved with unrelated sessions up to --sessions in
all. Everything goes through dsh's own write paths, checkpoint records
included (--no-checkpoints leaves the cache empty). The parent's subtree
depends only on --seed and --children, so stores of different --sessions
hold the same children. --workers N writes N transactions at once (on
PostgreSQL, where each session's statements are round trips to the server;
the sessions are the same, their insertion order interleaves). Prints what
was written.

` + exitStatusHelp(),
		Example: "  dsh --db /tmp/bench.db dev gen-corpus --children 10000 --sessions 200000",
		Args:    exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runGenCorpus(cmd.Context(), a, spec, mode)
		},
	}
	f := cmd.Flags()
	f.StringVar(&spec.Parent, "parent", gencorpus.DefaultParent, "id of the parent session")
	f.IntVar(&spec.Children, "children", gencorpus.DefaultChildren, "subagent children of the parent")
	f.IntVar(&spec.Sessions, "sessions", gencorpus.DefaultSessions, "sessions in all (at least children+1)")
	f.IntVar(&spec.MinEvents, "min-events", gencorpus.DefaultMinEvents, "shortest child transcript")
	f.IntVar(&spec.MaxEvents, "max-events", gencorpus.DefaultMaxEvents, "longest child transcript")
	f.Uint64Var(&spec.Seed, "seed", 1, "random seed")
	f.BoolVar(&spec.NoCheckpoints, "no-checkpoints", false, "write no checkpoint records (a cold cache)")
	f.StringVar(&spec.CatalogParent, "catalog-parent", "", "also write a format-4 session with this id whose subagent/catalog names the parent's children (for --dsh-compat 0.1.7)")
	f.BoolVar(&spec.Unverified, "unverified", false, "mark the children as changed outside dsh, so cold reads validate whole logs")
	f.IntVar(&spec.Workers, "workers", 1, "write transactions at once (PostgreSQL overlaps their round trips; SQLite writes one at a time)")
	f.BoolVar(&mode.force, "progress", false, "draw a progress bar even when stderr is not a terminal")
	f.BoolVar(&mode.quiet, "quiet", false, "never draw a progress bar")
	return cmd
}

func runGenCorpus(ctx context.Context, a *app, spec gencorpus.Spec, mode progressMode) (err error) {
	p, err := a.printer(render.Table)
	if err != nil {
		return err
	}
	s, err := a.openStore(ctx)
	if err != nil {
		return err
	}
	defer closeStore(s, &err)
	step, finish := a.progress(mode, "gen-corpus", max(spec.Sessions, spec.Children+1))
	spec.Progress = func(done, _ int) { step(done) }
	res, err := gencorpus.Generate(ctx, s, spec)
	finish()
	if err != nil {
		return err
	}
	fields := []render.Field{
		{Name: "sessions", Value: itoa(res.Sessions)},
		{Name: "events", Value: itoa(res.Events)},
		{Name: "checkpoints", Value: itoa(res.Checkpoints)},
	}
	kinds := make([]string, 0, len(res.Kinds))
	for k := range res.Kinds {
		kinds = append(kinds, string(k))
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		fields = append(fields, render.Field{Name: fmt.Sprintf("children %s", k), Value: itoa(res.Kinds[gencorpus.Kind(k)])})
	}
	return p.Record(res, fields)
}
