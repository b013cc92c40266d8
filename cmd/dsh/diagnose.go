package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dsh-project/dsh/internal/corpus"
	"github.com/dsh-project/dsh/internal/diagnose"
	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/render"
)

type diagnoseOptions struct {
	ids         []string
	parent      string
	scopeName   string
	all         bool
	failOn      string
	maxFindings int
	noStrict    bool
	progress    progressMode
}

func newDiagnoseCmd(a *app) *cobra.Command {
	var opts diagnoseOptions
	cmd := &cobra.Command{
		Use:   "diagnose [--parent ID [--scope children|descendants] | --all | ID...]",
		Short: "Audit sessions read-only and explain their catalog rows",
		Long: `Audit sessions without changing anything, and say exactly what is wrong with
them. For every examined session diagnose reports the row dsh list shows for
it (or that no listing shows it) and zero or more findings, each with a
stable code, a severity, the session and its parent, the event seq it
concerns, and a detail.

What is examined: with --parent, its subagent children (--scope
descendants: every subagent-origin session below it); with IDs, those
sessions; with --all, every session; with none of these, every
subagent-origin session in the database, and every other session with
subagent/catalog facts of its own (its catalog damage and the children its
catalog names that have no session).

Codes (severity): DESCRIPTOR_MISSING, DESCRIPTOR_MALFORMED,
DESCRIPTOR_UNSUPPORTED_VERSION, DESCRIPTOR_ANCESTOR_ONLY, HEADER_UNREADABLE,
LOG_UNREADABLE, SEQ_GAP, LIFECYCLE_MISMATCH, UNIT_FAILED, NOT_RESUMABLE, CACHE_STALE,
UNKNOWN_SESSION, CATALOG_FACT_MALFORMED, CATALOG_FACT_UNSUPPORTED_VERSION,
CATALOG_DUPLICATE_CHILD, CATALOG_BACKFILL_REFUSED, CATALOG_CHILD_MISSING (error);
DESCRIPTOR_MULTIPLE, LOG_TORN_TAIL, ORPHAN_PARENT, DEPTH_INCONSISTENT, LEASE_STALE,
CACHE_POISONED, CATALOG_CHILD_UNCATALOGED, CATALOG_MISMATCH, CATALOG_MODE_UNKNOWN,
EVENT_TEXT_REPLACED (warning); TURN_INTERRUPTED, CACHE_FOREIGN (info). The README describes each.

The CATALOG_* codes compare a parent's own subagent/catalog facts (DSH 0.1.7's
authority) with its children's sessions (rc.8's), in every --dsh-compat profile,
wherever a parent has catalog facts or is in DSH format V2 or later. A parent's own
catalog damage (which makes DSH 0.1.7+ list none of its children) is reported
wherever its children are audited: with --parent and in the default audit the
parent gets a report of its own, before its children's, when it is not
examined itself.

Output formats:
  table  one line per finding, like git fsck:
         <severity> <code> <session> [seq N]: <detail>
  tsv    the same, as tab-separated cells: severity, code, session,
         seq (empty when none), detail
  json   one document {"summary":{…},"sessions":[{"id","parentId","row",
         "rowKind","findings"}…]}
  jsonl  one session object per line, then one {"summary":{…}} line

Sessions are reported by parent (none first, then parent ids in byte order),
then in the catalog's order. The audit reads one consistent snapshot, never
writes, repairs or expires anything, and works on a read-only file or
directory. Progress goes to stderr when it is a terminal (--progress forces
it, --quiet silences it and the closing summary line).

` + exitStatusHelp(
			exitLine{exitFound, "findings at or above --fail-on (default error)"},
			exitLine{exitUsage, "an id or --parent that does not exist (unless --no-strict)"},
		),
		Example: `  dsh diagnose
  dsh diagnose --parent 11111111-1111-4111-8111-111111111111 --fail-on warning
  dsh diagnose --all -o jsonl | jq -c 'select(.findings | length > 0)'
  dsh diagnose 33333333-3333-4333-8333-333333333333 -o json`,
		Args: cobra.ArbitraryArgs,
	}
	f := cmd.Flags()
	f.StringVar(&opts.parent, "parent", "", "examine this session's subagent children")
	f.StringVar(&opts.scopeName, "scope", corpus.ScopeChildren.String(), "with --parent: children or descendants")
	f.BoolVar(&opts.all, "all", false, "examine every session, ordinary ones included")
	f.StringVar(&opts.failOn, "fail-on", diagnose.Error.String(), "exit 1 when a finding has this severity or a higher one: error, warning or info")
	f.IntVar(&opts.maxFindings, "max-findings", 0, "print at most this many findings (0: no limit); the summary and exit status still count every finding")
	f.BoolVar(&opts.noStrict, "no-strict", false, "report an unknown id or parent as an UNKNOWN_SESSION finding instead of failing")
	f.BoolVar(&opts.progress.force, "progress", false, "draw a progress bar on stderr even when it is not a terminal")
	f.BoolVar(&opts.progress.quiet, "quiet", false, "no progress bar and no summary line on stderr")
	src := addSourceFlags(cmd)
	out := addOutputFlag(cmd, render.Table, render.TSV, render.JSON, render.JSONL)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		opts.ids = args
		sel, failOn, err := opts.validate(cmd)
		if err != nil {
			return err
		}
		p, err := out.printer(a, cmd)
		if err != nil {
			return err
		}
		return runDiagnose(cmd.Context(), a, src, p, opts, sel, failOn)
	}
	return cmd
}

// validate checks the flags and turns them into the audit's selection and
// the --fail-on threshold.
func (o *diagnoseOptions) validate(cmd *cobra.Command) (diagnose.Selection, diagnose.Severity, error) {
	var sel diagnose.Selection
	flags := cmd.Flags()
	selectors := 0
	for _, set := range []bool{len(o.ids) > 0, flags.Changed("parent"), o.all} {
		if set {
			selectors++
		}
	}
	if selectors > 1 {
		return sel, 0, dsherr.New(dsherr.Usage, "dsh diagnose: choose one of --parent, --all or session ids")
	}
	if flags.Changed("scope") && !flags.Changed("parent") {
		return sel, 0, dsherr.New(dsherr.Usage, "dsh diagnose: --scope needs --parent")
	}
	if o.progress.force && o.progress.quiet {
		return sel, 0, dsherr.New(dsherr.Usage, "dsh diagnose: --progress and --quiet contradict each other")
	}
	if o.maxFindings < 0 {
		return sel, 0, dsherr.New(dsherr.Usage, "--max-findings: %d is negative", o.maxFindings)
	}
	failOn, err := diagnose.ParseSeverity(o.failOn)
	if err != nil {
		return sel, 0, dsherr.Wrap(dsherr.Usage, err, "--fail-on")
	}
	scope, err := parseScope(o.scopeName)
	if err != nil {
		return sel, 0, err
	}
	for _, id := range o.ids {
		if err := checkSessionID("session id", id); err != nil {
			return sel, 0, err
		}
	}
	if flags.Changed("parent") {
		if err := checkSessionID("--parent", o.parent); err != nil {
			return sel, 0, err
		}
	}
	return diagnose.Selection{IDs: o.ids, Parent: o.parent, HasParent: flags.Changed("parent"), Scope: scope, All: o.all}, failOn, nil
}

// diagnoseFocus is the session an audit of one parent's children reads
// about (sourceFlags.open), "" for any other audit.
func diagnoseFocus(sel diagnose.Selection) string {
	if sel.HasParent && sel.Scope == corpus.ScopeChildren {
		return sel.Parent
	}
	return ""
}

// runDiagnose is `dsh diagnose` over the database or, read in place, --source.
func runDiagnose(ctx context.Context, a *app, src *sourceFlags, p *render.Printer, opts diagnoseOptions, sel diagnose.Selection, failOn diagnose.Severity) (err error) {
	r, err := src.open(ctx, a, diagnoseFocus(sel))
	if err != nil {
		return err
	}
	defer closeCorpus(r, &err)
	var (
		step   func(int)
		clear  = func() {}
		finish = func() {}
	)
	progress := func(done, total int) {
		if step == nil {
			step, clear, finish = a.progressClearing(opts.progress, "diagnose", total)
		}
		step(done)
	}
	profile, err := a.profile()
	if err != nil {
		return err
	}
	out := p.Diagnosis()
	sum, err := diagnose.Run(ctx, r.Reader, diagnose.Options{
		Profile:     profile,
		Select:      sel,
		Strict:      !opts.noStrict,
		MaxFindings: opts.maxFindings,
		Progress:    progress,
	}, func(r diagnose.Report) error {
		clear()
		return out.Add(r)
	})
	finish()
	if err != nil {
		return err
	}
	if err := out.Close(sum); err != nil {
		return err
	}
	line := summaryLine(sum, failOn)
	if opts.progress.quiet {
		// --quiet silences the summary line, on failure too; the exit
		// status still tells.
		line = ""
	}
	if n := sum.AtOrAbove(failOn); n > 0 {
		return failedCheck("%s", line)
	}
	if line != "" {
		fmt.Fprintf(a.stderr, "dsh: %s\n", line)
	}
	return nil
}

// summaryLine is the audit in one line: what was examined and found, and
// whether that fails the run.
func summaryLine(sum diagnose.Summary, failOn diagnose.Severity) string {
	counts := make([]string, 0, 3)
	for _, sev := range []diagnose.Severity{diagnose.Error, diagnose.Warning, diagnose.Info} {
		counts = append(counts, severityCount(sum.BySeverity[sev], sev))
	}
	line := fmt.Sprintf("examined %d session(s): %s", sum.Examined, strings.Join(counts, ", "))
	if sum.Truncated {
		line += " (printing stopped at --max-findings)"
	}
	if n := sum.AtOrAbove(failOn); n > 0 {
		return fmt.Sprintf("%s; %d finding(s) at or above %s", line, n, failOn)
	}
	return line
}

// severityCount is "1 error", "2 warnings", "3 info".
func severityCount(n int, s diagnose.Severity) string {
	if n == 1 || s == diagnose.Info {
		return fmt.Sprintf("%d %s", n, s)
	}
	return fmt.Sprintf("%d %ss", n, s)
}
