package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"

	"github.com/spf13/cobra"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/corpus"
	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/dshformat"
	"github.com/dsh-project/dsh/internal/render"
	"github.com/dsh-project/dsh/internal/transfer"
)

type exportOptions struct {
	to           string
	ids          []string
	parent       string
	scopeName    string
	scope        corpus.Scope
	all          bool
	compression  string
	skipExisting bool
	// asImported: no --compression, so imported sessions keep theirs.
	asImported bool
	progress   progressMode
}

func newExportCmd(a *app) *cobra.Command {
	var opts exportOptions
	cmd := &cobra.Command{
		Use:   "export --to DIR [ID...|--parent ID [--scope children|descendants]|--all]",
		Short: "Write sessions as DSH JSONL files that DSH reads",
		Long: `Write sessions from the database as DSH's JSONL persistence lays them out:
DIR/<project>/<encoded id>/session.jsonl.zstd (--compression none:
session.jsonl), where <project> is derived from the session's cwd as DSH
derives it (_no-cwd without one). Each session is written in its own DSH
format version: one imported from a later format N goes to
session.vN.jsonl[.zstd]; without --compression, a session imported from a
JSONL log keeps that log's compression (a plain log comes back byte for
byte). The header line and events carry DSH's fields and order; in format 0
chunk deltas are packed into rows as DSH's writer packs them. A log is written exactly as stored, even one that fails validation,
ends inside a turn, or was imported damaged inside its committed region (the
events before the damage, then the stored data as found; data kept from a
damaged zstd frame needs --compression zstd, damaged schema-17 rows have no
JSONL form and are not written), so that importing the files again (dsh
import, or --source jsonl:DIR) gives the same headers and events. A torn tail
is not written (a warning says so).

Header fields DSH's JSONL forces: its writer always writes delegationDepth
and its reader requires one, so a session without delegationDepth is written
with "delegationDepth":0 and listed in dsh-header.json beside its log
({"id":"<id>","absent":["delegationDepth"]}); dsh's JSONL reader (import,
--source) restores it as absent, so export then import is the identity. DSH
ignores that file.

Every file is written under DIR, whatever the session id holds: the id is
encoded into one directory name (A-Z a-z 0-9 . _ - kept, anything else
~XXXX), and a session directory that resolves outside DIR (a symbolic link)
is refused. An id whose encoded name exceeds 255 bytes is refused with that
reason. An existing session log, in either compression, is never replaced
and never joined by the other compression (a directory holding both is
unreadable for DSH and dsh). Without --skip-existing every session's log is
looked for first, and when any is there nothing at all is written
(ALREADY_EXISTS, exit 2); --skip-existing skips those sessions and writes the
rest, which resumes an interrupted export. A session that cannot be written
(a full disk, a log that appeared meanwhile) leaves nothing of itself
behind; the sessions written before it stay, and the exit status is 3.

What is exported: the named sessions; with --parent, that session and its
direct children (every session naming it as parent, ordinary forks
included; --scope descendants: its whole tree); with --all, every session.
Prints one row per session as it is written (an aligned table on a terminal
is drawn at the end; -o json prints one document at the end), then a summary
line on stderr. Read-only for the database.

` + exitStatusHelp(
			exitLine{exitUsage, "an unknown session id or parent (NOT_FOUND), or a session's log already exists under DIR (ALREADY_EXISTS); nothing written"},
			exitLine{exitStore, "some session could not be read or written (a log with a corrupt committed row, a full disk); the others were written: a partial export, which --skip-existing completes"},
		),
		Example: `  dsh export --to ./out --all
  dsh export --to ./out --parent 11111111-1111-4111-8111-111111111111 --scope descendants
  dsh export --to ./out --compression none 33333333-3333-4333-8333-333333333333`,
		Args: cobra.ArbitraryArgs,
	}
	f := cmd.Flags()
	f.StringVar(&opts.to, "to", "", "the directory to write under (required; created if missing)")
	f.StringVar(&opts.parent, "parent", "", "export this session and its children")
	f.StringVar(&opts.scopeName, "scope", corpus.ScopeChildren.String(), "with --parent: children or descendants")
	f.BoolVar(&opts.all, "all", false, "export every session")
	f.StringVar(&opts.compression, "compression", "zstd", "zstd (DSH's default) or none; when not given, a session imported from a JSONL log keeps that log's compression")
	f.BoolVar(&opts.skipExisting, "skip-existing", false, "skip a session whose log is already under --to (either compression) instead of failing: resumes an interrupted export")
	f.BoolVar(&opts.progress.force, "progress", false, "draw a progress bar on stderr even when it is not a terminal")
	f.BoolVar(&opts.progress.quiet, "quiet", false, "no progress bar, and no summary line unless something failed")
	out := addOutputFlag(cmd, render.Table, render.TSV, render.JSON, render.JSONL)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		opts.ids = args
		opts.asImported = !cmd.Flags().Changed("compression")
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
	var err error
	if o.scope, err = parseScope(o.scopeName); err != nil {
		return 0, err
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
	// Rows are printed as sessions are written, except one -o json
	// document, which is printed at the end and only when nothing failed
	// (on failure the error report is the document).
	var l *render.List[exportedView]
	if a.output != render.JSON {
		l = render.NewList(p, exportColumns)
	}
	var printErr error
	selected := 0
	show := func(r transfer.Exported) {
		switch {
		case r.Err != nil:
			a.warn(fmt.Sprintf("session %s not exported: %v", r.ID, r.Err))
			return
		case r.Torn != nil:
			a.warn(fmt.Sprintf("session %s: torn tail from seq %d not exported (%s)", r.ID, r.Torn.FromSeq, r.Torn.Reason))
		}
		if l != nil && printErr == nil {
			printErr = l.Add(newExportedView(r))
		}
	}
	// One snapshot: a tree and its logs are exported as of one moment.
	err = st.View(ctx, func(view backend.Store) error {
		ids, err := exportSelection(ctx, view, opts)
		if err != nil {
			return err
		}
		selected = len(ids)
		step, finish := a.progress(opts.progress, "export", len(ids))
		defer finish()
		results, err = transfer.Export(ctx, view, opts.to, ids, transfer.ExportOptions{
			Compression:  c,
			SkipExisting: opts.skipExisting,
			AsImported:   opts.asImported,
			Progress:     func(done, _ int) { step(done) },
			OnResult:     show,
		})
		return err
	})
	var existing *transfer.ExistingLogsError
	if errors.As(err, &existing) {
		return &dsherr.Error{Code: dsherr.AlreadyExists, Err: err, Msg: fmt.Sprintf(
			"export: nothing written: %d of the %d session(s) already have a log under %s (%s first); --skip-existing skips them and writes the rest",
			len(existing.Paths), selected, opts.to, existing.Paths[0])}
	}
	if err != nil {
		return err
	}
	if printErr != nil {
		return printErr
	}
	written, skipped, failed, exists, events := 0, 0, 0, 0, 0
	for _, r := range results {
		switch {
		case r.Err != nil:
			failed++
			if errors.Is(r.Err, fs.ErrExist) {
				exists++
			}
		case r.Skipped:
			skipped++
		default:
			written++
			events += r.Events
		}
	}
	if a.output == render.JSON {
		if failed == 0 {
			l = render.NewList(p, exportColumns)
		}
		for _, r := range results {
			switch {
			case r.Err != nil:
			case l != nil:
				if err := l.Add(newExportedView(r)); err != nil {
					return err
				}
			default:
				// No document on failure: the warnings name every session.
				a.warn(fmt.Sprintf("session %s %s to %s", r.ID, newExportedView(r).Outcome, r.Path))
			}
		}
	}
	if l != nil {
		if err := l.Close(); err != nil {
			return err
		}
	}
	line := fmt.Sprintf("exported %d session(s) (%d events), skipped %d existing, %d not written", written, events, skipped, failed)
	switch {
	case failed == 0:
		if !opts.progress.quiet {
			fmt.Fprintf(a.stderr, "dsh: %s\n", line)
		}
		return nil
	case exists == failed && written == 0:
		// The database was read fine; the target was in the way (a log
		// that appeared after the check before writing), and nothing
		// was written.
		return dsherr.New(dsherr.AlreadyExists, "export: %s: their files already exist (--skip-existing skips them)", line)
	}
	// Some sessions were written and some not: a partial export, which
	// --skip-existing completes once the cause is fixed.
	return dsherr.New(dsherr.StoreUnavailable, "export: %s", line)
}

// exportSelection resolves what to export; an unknown id or parent is
// NOT_FOUND before anything is written.
// exportReader is what resolving an export selection reads.
type exportReader interface {
	backend.HeaderReader
	backend.ChildrenReader
	backend.SessionLister
}

func exportSelection(ctx context.Context, st exportReader, opts exportOptions) ([]string, error) {
	switch {
	case opts.all:
		return transfer.All(ctx, st)
	case opts.parent != "":
		if _, err := st.Header(ctx, opts.parent); err != nil {
			return nil, lookupError(opts.parent, err)
		}
		return transfer.Tree(ctx, st, opts.parent, opts.scope)
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

// exportedView is one written (or skipped) session of `dsh export` output.
type exportedView struct {
	ID      string `json:"id"`
	Outcome string `json:"outcome"`
	Events  int    `json:"events"`
	Path    string `json:"path"`
}

func newExportedView(r transfer.Exported) exportedView {
	v := exportedView{ID: r.ID, Outcome: "written", Events: r.Events, Path: r.Path}
	switch {
	case r.Skipped:
		v.Outcome = "skipped"
	case r.Damaged:
		v.Outcome = "written-damaged"
	}
	return v
}

var exportColumns = []render.Column[exportedView]{
	{Header: "SESSION", Value: func(v exportedView) string { return v.ID }},
	{Header: "OUTCOME", Value: func(v exportedView) string { return v.Outcome }},
	{Header: "EVENTS", Value: func(v exportedView) string { return itoa(v.Events) }},
	{Header: "PATH", Value: func(v exportedView) string { return v.Path }},
}
