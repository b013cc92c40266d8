package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"

	"github.com/spf13/cobra"

	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/dshformat"
	"github.com/dsh-project/dsh/internal/render"
	"github.com/dsh-project/dsh/internal/sqlitepersist"
	"github.com/dsh-project/dsh/internal/transfer"
)

type exportOptions struct {
	to          string
	ids         []string
	parent      string
	scope       string
	all         bool
	compression string
	progress    progressMode
}

func newExportCmd(a *app) *cobra.Command {
	var opts exportOptions
	cmd := &cobra.Command{
		Use:   "export --to DIR [ID...|--parent ID [--scope children|descendants]|--all]",
		Short: "Write sessions as DSH JSONL files that DSH reads",
		Long: `Write sessions from the database as DSH's JSONL persistence lays them out:
DIR/<project>/<encoded id>/session.jsonl.zstd (--compression none:
session.jsonl), where <project> is derived from the session's cwd as DSH
derives it (_no-cwd without one). The header line and events carry DSH's
fields and order; chunk deltas are packed into rows as DSH's writer packs
them. A log is written exactly as stored, even one that fails validation or
ends inside a turn, so that importing the files again (dsh import, or
--source jsonl:DIR) gives the same headers and events. A torn tail is not
written (a warning says so). An existing session file is never replaced.

What is exported: the named sessions; with --parent, that session and its
direct children (every session naming it as parent, ordinary forks
included; --scope descendants: its whole tree); with --all, every session.
Prints the file written for each session. Read-only for the database.

` + exitStatusHelp(
			exitLine{exitUsage, "an unknown session id or parent (NOT_FOUND; nothing written), or a session file exists (ALREADY_EXISTS; the other sessions were written)"},
			exitLine{exitStore, "some session could not be read or written, for example a log with a corrupt committed row; the others were"},
		),
		Example: `  dsh export --to ./out --all
  dsh export --to ./out --parent 11111111-1111-4111-8111-111111111111 --scope descendants
  dsh export --to ./out --compression none 33333333-3333-4333-8333-333333333333`,
		Args: cobra.ArbitraryArgs,
	}
	f := cmd.Flags()
	f.StringVar(&opts.to, "to", "", "the directory to write under (required; created if missing)")
	f.StringVar(&opts.parent, "parent", "", "export this session and its children")
	f.StringVar(&opts.scope, "scope", "children", "with --parent: children or descendants")
	f.BoolVar(&opts.all, "all", false, "export every session")
	f.StringVar(&opts.compression, "compression", "zstd", "zstd (DSH's default) or none")
	f.BoolVar(&opts.progress.force, "progress", false, "draw a progress bar on stderr even when it is not a terminal")
	f.BoolVar(&opts.progress.quiet, "quiet", false, "never draw a progress bar")
	out := addOutputFlag(cmd, render.Table, render.TSV, render.JSON, render.JSONL)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		opts.ids = args
		compression, err := opts.validate(cmd)
		if err != nil {
			return err
		}
		p, err := out.printer(a, cmd)
		if err != nil {
			return err
		}
		return runExport(cmd.Context(), a, p, opts, compression)
	}
	return cmd
}

func (o *exportOptions) validate(cmd *cobra.Command) (dshformat.Compression, error) {
	flags := cmd.Flags()
	if !flags.Changed("to") {
		return 0, dsherr.New(dsherr.Usage, "dsh export: --to is required")
	}
	if err := refuseEmptyFlags(cmd, "to"); err != nil {
		return 0, err
	}
	selectors := 0
	for _, set := range []bool{len(o.ids) > 0, flags.Changed("parent"), o.all} {
		if set {
			selectors++
		}
	}
	if selectors != 1 {
		return 0, dsherr.New(dsherr.Usage, "dsh export: give session ids, --parent or --all (exactly one)")
	}
	if flags.Changed("scope") && !flags.Changed("parent") {
		return 0, dsherr.New(dsherr.Usage, "dsh export: --scope needs --parent")
	}
	if o.scope != "children" && o.scope != "descendants" {
		return 0, dsherr.New(dsherr.Usage, "--scope: %q is not children or descendants", o.scope)
	}
	if o.progress.force && o.progress.quiet {
		return 0, dsherr.New(dsherr.Usage, "dsh export: --progress and --quiet contradict each other")
	}
	for _, id := range o.ids {
		if err := checkSessionID("session id", id); err != nil {
			return 0, err
		}
	}
	if flags.Changed("parent") {
		if err := checkSessionID("--parent", o.parent); err != nil {
			return 0, err
		}
	}
	switch o.compression {
	case "zstd":
		return dshformat.CompressionZstd, nil
	case "none":
		return dshformat.CompressionNone, nil
	}
	return 0, dsherr.New(dsherr.Usage, "--compression: %q is not zstd or none", o.compression)
}

func runExport(ctx context.Context, a *app, p *render.Printer, opts exportOptions, c dshformat.Compression) (err error) {
	st, err := a.openStoreReadOnly(ctx)
	if err != nil {
		return err
	}
	defer closeStore(st, &err)
	var results []transfer.Exported
	// One snapshot: a tree and its logs are exported as of one moment.
	err = st.ReadSnapshot(ctx, func(view *sqlitepersist.Store) error {
		ids, err := exportSelection(ctx, view, opts)
		if err != nil {
			return err
		}
		step, finish := a.progress(opts.progress, "export", len(ids))
		defer finish()
		results, err = transfer.Export(ctx, view, opts.to, ids, transfer.ExportOptions{
			Compression: c,
			Progress:    func(done, _ int) { step(done) },
		})
		return err
	})
	if err != nil {
		return err
	}
	failed, exists := 0, 0
	for _, r := range results {
		if r.Err != nil {
			failed++
			if errors.Is(r.Err, fs.ErrExist) {
				exists++
			}
		}
	}
	// -o json prints one document: on failure that is the error report
	// (exit prints it), not the list followed by it. The warnings on stderr
	// name every session, written or not.
	var l *render.List[exportedView]
	if failed == 0 || a.output != render.JSON {
		l = render.NewList(p, exportColumns)
	}
	for _, r := range results {
		if r.Err != nil {
			a.warn(fmt.Sprintf("session %s not exported: %v", r.ID, r.Err))
			continue
		}
		if r.Torn != nil {
			a.warn(fmt.Sprintf("session %s: torn tail from seq %d not exported (%s)", r.ID, r.Torn.FromSeq, r.Torn.Reason))
		}
		if l == nil {
			a.warn(fmt.Sprintf("session %s exported to %s", r.ID, r.Path))
			continue
		}
		if err := l.Add(exportedView{ID: r.ID, Events: r.Events, Path: r.Path}); err != nil {
			return err
		}
	}
	if l != nil {
		if err := l.Close(); err != nil {
			return err
		}
	}
	switch {
	case failed == 0:
		return nil
	case exists == failed:
		// The database was read fine; the target was in the way.
		return dsherr.New(dsherr.AlreadyExists, "export: %d of %d session(s) not written: their files already exist", failed, len(results))
	}
	return dsherr.New(dsherr.StoreError, "export: %d of %d session(s) not written", failed, len(results))
}

// exportSelection resolves what to export; an unknown id or parent is
// NOT_FOUND before anything is written.
func exportSelection(ctx context.Context, st *sqlitepersist.Store, opts exportOptions) ([]string, error) {
	switch {
	case opts.all:
		return transfer.All(ctx, st)
	case opts.parent != "":
		if _, err := st.Header(ctx, opts.parent); err != nil {
			return nil, lookupError(opts.parent, err)
		}
		return transfer.Tree(ctx, st, opts.parent, opts.scope == "descendants")
	}
	var ids []string
	for _, id := range opts.ids {
		if _, err := st.Header(ctx, id); err != nil {
			return nil, lookupError(id, err)
		}
		if !slices.Contains(ids, id) {
			ids = append(ids, id) // a repeated id is exported once
		}
	}
	return ids, nil
}

// exportedView is one written session of `dsh export` output.
type exportedView struct {
	ID     string `json:"id"`
	Events int    `json:"events"`
	Path   string `json:"path"`
}

var exportColumns = []render.Column[exportedView]{
	{Header: "SESSION", Value: func(v exportedView) string { return v.ID }},
	{Header: "EVENTS", Value: func(v exportedView) string { return itoa(v.Events) }},
	{Header: "PATH", Value: func(v exportedView) string { return v.Path }},
}
