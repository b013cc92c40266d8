package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/location"
	"github.com/dsh-project/dsh/internal/render"
	"github.com/dsh-project/dsh/internal/report"
	"github.com/dsh-project/dsh/internal/transfer"
)

type importOptions struct {
	dryRun   bool
	strict   bool
	progress progressMode
}

func newImportCmd(a *app) *cobra.Command {
	var opts importOptions
	cmd := &cobra.Command{
		Use:   "import " + location.SourceFormsSynopsis(),
		Short: "Copy a DSH corpus into the database, exactly as found",
		Long: `Copy every session of a DSH corpus into the database: jsonl:PATH reads DSH's
JSONL session files (a file, or a directory searched recursively: DSH's
<project>/<id>/session.jsonl[.zstd] layout and loose *.jsonl files);
dsh-sqlite:PATH reads DSH's schema-17 SQLite store; dsh:PATH_OR_URL reads
another dsh database, a SQLite file or a postgres:// URL, to move a catalog
between backends (headers, events byte for byte, torn tails, damaged logs
and the format each session was first imported from, as stored there). The
source is only read (a dsh database is opened read-only, as read commands
open it).

Sessions are copied faithfully: a log that fails DSH's validation, a log
damaged inside its committed region (an unparsable line or row, a seq gap, a
damaged zstd frame before a later turn/end: the events before the damage and
the rest as found), a torn tail and an interrupted turn are kept exactly as
found, so each session lists and diagnoses the same after the import as in
the source. Each session is
written whole, with the projection checkpoint of its log when the log reads
and folds, in batches of up to 1,000 sessions (or 64k events) per
transaction; a session's row is printed once its batch is committed, so an
import interrupted or killed has stored exactly the sessions it printed and,
run again, skips them and imports the rest. Importing again is safe: a session already in
the database with the same lifecycle and log is skipped; when the source's log
has grown since (the stored log is its start), the new events are appended,
validated as any append; a session whose lifecycle or stored log differs is a
conflict and is never overwritten. A session the source cannot offer
(a file whose header cannot be read, an id found in two files, a later DSH
format version) is unreadable, reported with its file, and not imported.

Prints one row per session as soon as it is committed (an aligned table on a
terminal is drawn at the end; -o json prints one document at the end): its
outcome (imported, appended, skipped, conflict, unreadable), events (for
appended: the events appended) and details. A summary line goes to stderr; --dry-run
reads and judges everything and writes nothing. A progress bar is drawn on
stderr when it is a terminal (--progress forces it, --quiet silences it and
the summary line).

Output formats:
  table  SESSION, OUTCOME, EVENTS, DETAIL (tab-separated off a terminal)
  json   one document {"summary":{…},"sessions":[…]}
  jsonl  one session object per line, then one {"summary":{…}} line

` + exitStatusHelp(
			exitLine{exitFound, "some session was unreadable or conflicting (the others were imported)"},
			exitLine{exitStore, "the source could not be read, or is in a format dsh does not read (UNSUPPORTED_FORMAT)"},
		),
		Example: `  dsh import jsonl:$HOME/.dsh/sessions
  dsh import dsh-sqlite:$HOME/.dsh/sessions.db --dry-run
  DSH_DB=postgres://dsh@db.internal/dsh dsh import dsh:$HOME/.local/share/dsh/dsh.db
  dsh import jsonl:./corpus -o json | jq '.sessions[] | select(.outcome != "imported")'`,
		Args: exactArgs("SOURCE"),
	}
	f := cmd.Flags()
	f.BoolVar(&opts.dryRun, "dry-run", false, "read and judge every session, write nothing")
	f.BoolVar(&opts.strict, "strict", false, "fail with NOT_FOUND (exit 2) when the source holds no session (default: a warning)")
	f.BoolVar(&opts.progress.force, "progress", false, "draw a progress bar on stderr even when it is not a terminal")
	f.BoolVar(&opts.progress.quiet, "quiet", false, "no progress bar, and no summary line unless something failed")
	out := addOutputFlag(cmd, render.Table, render.TSV, render.JSON, render.JSONL)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if opts.progress.force && opts.progress.quiet {
			return dsherr.New(dsherr.Usage, "dsh import: --progress and --quiet contradict each other")
		}
		loc, err := location.ParseSource(args[0])
		if err != nil {
			return err
		}
		p, err := out.printer(a, cmd)
		if err != nil {
			return err
		}
		return runImport(cmd.Context(), a, p, loc, opts)
	}
	return cmd
}

func runImport(ctx context.Context, a *app, p *render.Printer, loc location.Spec, opts importOptions) (err error) {
	cfg, err := a.config()
	if err != nil {
		return err
	}
	// The source is only read: a dsh database is opened read-only, as the
	// read commands open it.
	src, err := location.ImportSource(ctx, loc, a.locationOptions(cfg))
	if err != nil {
		return err
	}
	defer func() {
		if cerr := src.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close import source: %w", cerr)
		}
	}()
	var st location.Store
	if opts.dryRun {
		st, err = a.openStoreReadOnly(ctx)
		if errors.Is(err, backend.ErrNoDatabase) {
			st, err = nil, nil // nothing imported yet: every readable session would be
		}
	} else {
		st, err = a.openStore(ctx)
	}
	if err != nil {
		return err
	}
	if st != nil {
		defer closeStore(st, &err)
	}
	var step func(int)
	finish := func() {}
	out := newImportPrinter(p)
	sum, err := transfer.Import(ctx, st, src, transfer.ImportOptions{
		DryRun: opts.dryRun,
		Progress: func(done, total int) {
			if step == nil {
				step, finish = a.progress(opts.progress, "import", total)
			}
			step(done)
		},
		OnResult: out.add,
	})
	finish()
	if err != nil {
		return err
	}
	if err := out.close(sum); err != nil {
		return err
	}
	if sum.Imported+sum.Appended+sum.Skipped+sum.Conflicts+sum.Unreadable == 0 {
		// An empty directory or a mistyped path is not a clean corpus.
		msg := location.EmptyMessage(loc) + "; nothing imported"
		if opts.strict {
			return dsherr.New(dsherr.NotFound, "%s", msg)
		}
		a.warn(msg)
	}
	line := importSummaryLine(sum)
	if sum.Failed() {
		return failedCheck("%s", line)
	}
	if !opts.progress.quiet {
		fmt.Fprintf(a.stderr, "dsh: %s\n", line)
	}
	return nil
}

// importSessionView is one session of `dsh import` output.
type importSessionView struct {
	ID              *string          `json:"id"` // null when the source could not read one
	Location        string           `json:"location,omitempty"`
	Outcome         string           `json:"outcome"`
	Events          int              `json:"events"`
	Reason          string           `json:"reason,omitempty"`
	TornTail        *report.TornTail `json:"tornTail,omitempty"`
	Damaged         bool             `json:"damaged,omitempty"`
	Invalid         string           `json:"invalid,omitempty"`
	InterruptedTurn bool             `json:"interruptedTurn,omitempty"`
	// TextReplaced: events the source's reader read from text that is not
	// UTF-8 (replaced with U+FFFD); the store records it with the log.
	TextReplaced *textReplacedView `json:"textReplaced,omitempty"`
	Checkpoint   bool              `json:"checkpoint"`
}

type textReplacedView struct {
	FirstSeq int64 `json:"firstSeq"`
	Events   int   `json:"events"`
}

type importSummaryView struct {
	DryRun     bool `json:"dryRun"`
	Imported   int  `json:"imported"`
	Appended   int  `json:"appended"`
	Skipped    int  `json:"skipped"`
	Conflicts  int  `json:"conflicts"`
	Unreadable int  `json:"unreadable"`
	Events     int  `json:"events"`
}

func newImportSessionView(r transfer.Result) importSessionView {
	v := importSessionView{Location: r.Location, Outcome: string(r.Outcome), Events: r.Events, Reason: r.Reason,
		Damaged: r.Damaged, Invalid: r.Invalid, InterruptedTurn: r.Interrupted, Checkpoint: r.Checkpointed}
	if r.ID != "" {
		id := r.ID
		v.ID = &id
	}
	if r.Torn != nil {
		v.TornTail = &report.TornTail{FromSeq: r.Torn.FromSeq, Reason: r.Torn.Reason}
	}
	if t := r.TextReplaced; t != nil {
		v.TextReplaced = &textReplacedView{FirstSeq: t.FirstSeq, Events: t.Events}
	}
	return v
}

// detail is the human DETAIL cell: why a session was not imported, or what
// an imported one was kept with.
func (v importSessionView) detail() string {
	if v.Reason != "" {
		return v.Reason
	}
	var notes []string
	if v.TornTail != nil {
		notes = append(notes, fmt.Sprintf("torn tail from seq %d kept (%s)", v.TornTail.FromSeq, v.TornTail.Reason))
	}
	switch {
	case v.Damaged:
		notes = append(notes, "damaged inside its committed region, kept as found: "+v.Invalid)
	case v.Invalid != "":
		notes = append(notes, "fails validation, kept as found: "+v.Invalid)
	}
	if v.InterruptedTurn {
		notes = append(notes, "interrupted turn kept")
	}
	if t := v.TextReplaced; t != nil {
		notes = append(notes, fmt.Sprintf("%d event(s) from seq %d read from text that is not UTF-8, replaced with U+FFFD (EVENT_TEXT_REPLACED)", t.Events, t.FirstSeq))
	}
	return strings.Join(notes, "; ")
}

var importColumns = []render.Column[importSessionView]{
	{Header: "SESSION", Value: func(v importSessionView) string {
		if v.ID == nil {
			return v.Location
		}
		return *v.ID
	}},
	{Header: "OUTCOME", Value: func(v importSessionView) string { return v.Outcome }},
	{Header: "EVENTS", Value: func(v importSessionView) string { return itoa(v.Events) }},
	{Header: "DETAIL", Value: importSessionView.detail},
}

// importPrinter prints each session's row as soon as it is decided (TSV
// and JSONL stream; an aligned table is drawn, and the one -o json
// document printed, at the end), then the summary.
type importPrinter struct {
	p     *render.Printer
	list  *render.List[importSessionView]
	views []importSessionView
	err   error
}

func newImportPrinter(p *render.Printer) *importPrinter {
	ip := &importPrinter{p: p}
	if f := p.Format(); f != render.JSON && f != render.JSONL {
		ip.list = render.NewList(p, importColumns)
	}
	return ip
}

func (ip *importPrinter) add(r transfer.Result) {
	v := newImportSessionView(r)
	switch {
	case ip.err != nil:
	case ip.p.Format() == render.JSON:
		ip.views = append(ip.views, v)
	case ip.p.Format() == render.JSONL:
		ip.err = ip.p.JSON(v)
	default:
		ip.err = ip.list.Add(v)
	}
}

func (ip *importPrinter) close(sum transfer.Summary) error {
	if ip.err != nil {
		return ip.err
	}
	summary := importSummaryView{DryRun: sum.DryRun, Imported: sum.Imported, Appended: sum.Appended, Skipped: sum.Skipped,
		Conflicts: sum.Conflicts, Unreadable: sum.Unreadable, Events: sum.Events}
	switch ip.p.Format() {
	case render.JSON:
		views := ip.views
		if views == nil {
			views = []importSessionView{}
		}
		return ip.p.JSON(struct {
			Summary  importSummaryView   `json:"summary"`
			Sessions []importSessionView `json:"sessions"`
		}{summary, views})
	case render.JSONL:
		return ip.p.JSON(struct {
			Summary importSummaryView `json:"summary"`
		}{summary})
	}
	return ip.list.Close()
}

// importSummaryLine is the import in one line.
func importSummaryLine(sum transfer.Summary) string {
	verb, appended := "imported", "appended to"
	if sum.DryRun {
		verb, appended = "would import", "would append to"
	}
	return fmt.Sprintf("%s %d session(s), %s %d (%d events), skipped %d, %d conflict(s), %d unreadable",
		verb, sum.Imported, appended, sum.Appended, sum.Events, sum.Skipped, sum.Conflicts, sum.Unreadable)
}
