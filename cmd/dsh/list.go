package main

import (
	"context"
	"errors"

	"github.com/spf13/cobra"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/corpus"
	"github.com/dsh-project/dsh/internal/dshcompat"
	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/leases"
	"github.com/dsh-project/dsh/internal/render"
	"github.com/dsh-project/dsh/internal/report"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/subagent"
)

type listOptions struct {
	parent          string
	scopeName       string
	coldConcurrency int
	strict          bool
	// allowMissingParent lets the --expect checks judge DSH's empty
	// answer for a parent that does not exist instead of failing.
	allowMissingParent bool
	// unknownParent is the lookup error when the parent has no session;
	// emptySource says the --source holds none at all (already reported).
	unknownParent error
	emptySource   bool
	expect        listExpectations
	filter        listFilter
	// profile is whose listing rules apply (--dsh-compat).
	profile dshcompat.Profile
	// watch keeps the listing current (--watch).
	watch bool
}

func newListCmd(a *app) *cobra.Command {
	var opts listOptions
	cmd := &cobra.Command{
		Use:   "list --parent ID",
		Short: "List a session's subagent children as DSH does",
		Long: `List the subagent children of session --parent the way DSH's listChildren
does (--scope descendants: listDescendants, the whole tree below it in
pre-order, walking through ordinary forks and one-shot children).

Each child is one row. A child held by a live dsh process is running and is
read from what its holder published; a settled child is inactive and is
read from its projection checkpoint or, when that cannot be used, from its
log. A child without an identity of its own is "diagnostic: corrupt" (no,
malformed or unsupported descriptor; only its ancestor's descriptor in its
inherited seed; a stored header that no longer matches), and one whose log
cannot be read is "diagnostic: unavailable". A running child without an
identity yet is left out. Rows are in creation order, ties by id as
JavaScript's localeCompare orders them.

Output formats:
  table   for people: ID, [DEPTH, PARENT,] STATUS, MODE, CHILDREN, LABEL
          (tab-separated, without a header, when stdout is not a terminal)
  json    one array of DSH's SubagentListEntry objects; descendants rows add
          parentId and depth
  jsonl   the same objects, one per line
  agents  DSH's list_agents text: continuable children and diagnostics only,
          [running] for a child held by a live process, [ready] otherwise
          (escaped only when stdout is a terminal)
  tree    for people: the parent, then one line per row indented under
          its parentId (box drawing in a UTF-8 locale, ASCII otherwise):
          id, state, mode, label; a parent without a row (an ordinary
          fork walked through, a row --state/--mode removed) is a line
          saying so, dimmed when colour is on
  wide    the table with HOST, PID and EXPIRES (UTC) after it: the lease
          holder of each running child, by the database's clock (see dsh
          lease ls); empty for every other row

--state and --mode keep only the rows asked for (several values: repeat the
flag or separate them with commas); the rows kept are unchanged, and the
--expect checks see only them.

With --dsh-compat 0.1.7 (DSH 0.1.7 and later) the parent's own
subagent/catalog facts decide its children instead: rows in catalog order,
labels and modes from the catalog, a cataloged child with no session
"diagnostic: unavailable", an unknown-mode entry "diagnostic: unsupported",
a child whose catalog DSH cannot read "diagnostic: corrupt", DSH 0.2's
external entries as leaves; children are the first level of the
descendants walk, and -o agents prints [running] or [inactive]. A parent of
format 0-3 gets, in memory, the catalog DSH's V3->V4 migration would give
it. The parent must exist (NOT_FOUND otherwise) and be readable to DSH 0.1.7
(INVALID_LOG otherwise). See docs/dsh-compatibility.md.

An unknown parent lists as empty, as in DSH, with a warning on stderr;
--strict makes it an error. An --expect, --expect-count or
--expect-no-diagnostics check on an unknown parent fails (NOT_FOUND), so a
mistyped id cannot pass CI; --allow-missing-parent checks DSH's empty
answer instead. A --source that holds no session is a warning too (an
error with --strict).
Read-only: the database is never written, and the output is printed only
once the whole listing has been read.

--watch (-w) keeps the listing current, as kubectl get -w does: it prints
the listing, then one line per row that another process adds, changes or
removes (a dsh start, a resume making a child running and then inactive, a
row leaving the --state/--mode filter), until SIGINT or SIGTERM ends it
with exit 0. The listing is read again on every change the database
signals (SQLite: PRAGMA data_version, polled every 100 ms on one
connection; PostgreSQL: LISTEN/NOTIFY), and when the earliest live lease
expires (a holder killed outright writes nothing, yet its child is no
longer running); rows are matched by id. -o jsonl prints every row as an
event, the first listing as ADDED:
{"type":"ADDED"|"MODIFIED"|"DELETED","row":{...}}, row being the -o json
row exactly (for DELETED, as last listed); table, tsv and wide print the
listing as usual, then each changed row as a line of its type and its
cells, tab-separated. DSH's own corpora (--source jsonl:, dsh-sqlite:,
dsh-home:) have no change signal and are refused (run the listing again);
--source dsh: is a dsh database, watched as --db is. The --expect checks
and -o json, agents and tree are refused too.

` + exitStatusHelp(
			exitLine{exitOK, "with --watch: SIGINT or SIGTERM ended the watch"},
			exitLine{exitFound, "an --expect, --expect-count or --expect-no-diagnostics assertion failed"},
			exitLine{exitUsage, "with --strict, --dsh-compat 0.1.7 or an --expect check: the parent session does not exist (NOT_FOUND)"},
			exitLine{exitStore, "with --dsh-compat 0.1.7: DSH 0.1.7 cannot read the parent (INVALID_LOG)"},
		),
		Example: `  dsh list --parent 11111111-1111-4111-8111-111111111111
  dsh list --parent my-session --scope descendants -o json
  dsh list --parent my-session -o agents
  dsh list --parent my-session --scope descendants -o tree
  dsh list --parent my-session --state corrupt,unavailable --expect-count 0
  dsh list --parent my-session --watch -o jsonl`,
		Args: exactArgs(),
	}
	cmd.Flags().StringVar(&opts.parent, "parent", "", "the session whose subagent children to list (required)")
	cmd.Flags().StringVar(&opts.scopeName, "scope", corpus.ScopeChildren.String(), "children (direct children) or descendants (the whole tree below the parent)")
	cmd.Flags().IntVar(&opts.coldConcurrency, "cold-concurrency", 0, "how many child logs to read at once (default: config coldConcurrency, 4)")
	cmd.Flags().BoolVar(&opts.strict, "strict", false, "fail with NOT_FOUND (exit 2) when the parent session does not exist, or a --source holds no session")
	cmd.Flags().BoolVarP(&opts.watch, "watch", "w", false, "print the listing, then one line per row that changes (ADDED, MODIFIED, DELETED) until SIGINT or SIGTERM (exit 0); -o table, tsv, wide or jsonl; a dsh database only (--db, --source dsh:); not with --expect")
	cmd.Flags().BoolVar(&opts.allowMissingParent, "allow-missing-parent", false, "let the --expect checks judge DSH's empty answer when the parent does not exist (default: NOT_FOUND, exit 2)")
	opts.expect.addFlags(cmd)
	opts.filter.addFlags(cmd)
	src := addSourceFlags(cmd)
	out := addOutputFlag(cmd, render.Table, render.TSV, render.JSON, render.JSONL, render.Agents, render.Tree, render.Wide)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := opts.expect.prepare(cmd); err != nil {
			return err
		}
		if err := opts.filter.prepare(); err != nil {
			return err
		}
		if !cmd.Flags().Changed("parent") {
			return dsherr.New(dsherr.Usage, "dsh list: --parent is required")
		}
		if opts.allowMissingParent && !opts.expect.given() {
			return dsherr.New(dsherr.Usage, "--allow-missing-parent needs an --expect, --expect-count or --expect-no-diagnostics check")
		}
		if err := checkSessionID("--parent", opts.parent); err != nil {
			return err
		}
		scope, err := parseScope(opts.scopeName)
		if err != nil {
			return err
		}
		// The printer first: a bad setting is then reported in the
		// format asked for (-o json prints the error as JSON too).
		p, err := out.printer(a, cmd)
		if err != nil {
			return err
		}
		if cmd.Flags().Changed("cold-concurrency") {
			if opts.coldConcurrency < 1 {
				return dsherr.New(dsherr.Usage, "--cold-concurrency: %d is not a positive number", opts.coldConcurrency)
			}
		} else {
			cfg, err := a.config()
			if err != nil {
				return err
			}
			opts.coldConcurrency = cfg.ColdConcurrency
		}
		if opts.profile, err = a.profile(); err != nil {
			return err
		}
		if opts.watch {
			if err := checkWatch(opts, p); err != nil {
				return err
			}
			return runListWatch(cmd.Context(), a, src, p, opts, scope)
		}
		if cmd.Flags().Changed("source") {
			// Reading a foreign corpus in place can take a while; the
			// spinner stops as soon as the rows are printed.
			defer a.spinner(progressMode{}, "reading the source")()
		}
		return cancelledListing(cmd.Context(), runList(cmd.Context(), a, src, p, opts, scope))
	}
	return cmd
}

// listFocus is the session a listing of its children reads about
// (sourceFlags.open); a listing of descendants reads about the tree.
func listFocus(opts listOptions, scope corpus.Scope) string {
	if scope == corpus.ScopeChildren {
		return opts.parent
	}
	return ""
}

// runList is `dsh list` over the database or --source.
func runList(ctx context.Context, a *app, src *sourceFlags, p *render.Printer, opts listOptions, scope corpus.Scope) (err error) {
	src.strict = opts.strict
	r, err := src.open(ctx, a, listFocus(opts, scope))
	if err != nil {
		return err
	}
	defer closeCorpus(r, &err)
	_, herr := r.Reader.Header(ctx, opts.parent)
	if herr != nil && opts.strict {
		return r.LookupError(opts.parent, herr)
	}
	if errors.Is(herr, backend.ErrNotFound) {
		opts.unknownParent = r.LookupError(opts.parent, herr)
	}
	opts.emptySource = r.Empty
	l := r.Lister(opts.coldConcurrency)
	l.Profile = opts.profile
	return printListing(ctx, a, p, l, r.Reader, opts, scope)
}

// printListing lists opts.parent through l, prints the rows once the whole
// listing is read (so an interrupted listing prints nothing) and runs the
// --expect checks.
func printListing(ctx context.Context, a *app, p *render.Printer, l *subagent.Lister, headers listedCorpus, opts listOptions, scope corpus.Scope) error {
	listing, err := report.List(ctx, l, opts.parent, scope)
	if err != nil {
		return err
	}
	rows, agentRows := listing.Rows, listing.AgentRows
	if listing.Catalog {
		p.UseCatalogStatuses()
	}
	// DSH lists an unknown parent as empty. A parent with no session but
	// with children (a source holding only them) is known by them; one
	// with neither is most likely mistyped: a check on it fails unless
	// DSH's empty answer is asked for, and a listing says so.
	unknown := opts.unknownParent != nil && len(rows) == 0
	if unknown && opts.expect.given() && !opts.allowMissingParent {
		return &dsherr.Error{Code: dsherr.NotFound, Err: opts.unknownParent, Msg: opts.unknownParent.Error() +
			": an --expect check needs a parent that exists (--allow-missing-parent checks DSH's empty answer)"}
	}
	if unknown && !opts.emptySource {
		defer a.warn(opts.unknownParent.Error() + ": listed as empty, as DSH does (--strict makes it an error)")
	}
	all := rows
	rows = opts.filter.Apply(rows)
	switch {
	case p.Format() == render.Tree:
		err = p.ListingTree(opts.parent, rows, treeGaps(ctx, headers, opts.parent, all, rows))
	case p.Format() == render.Wide:
		// Every lease: in descendants scope the rows are not all
		// children of the parent.
		var t leases.Table
		if t, err = leases.Read(ctx, headers, nil); err != nil {
			return err
		}
		err = p.WideListing(rows, scope, t.Holders())
	case p.Format() == render.Agents && agentRows != nil:
		err = p.Listing(opts.filter.Apply(agentRows), scope)
	default:
		err = p.Listing(rows, scope)
	}
	if err != nil {
		return err
	}
	return opts.expect.check(a, rows, scope)
}

// headerReader reads one session's header (the tree's gap lines).
type headerReader interface {
	Header(ctx context.Context, id string) (session.Header, error)
}

// listedCorpus is what a listing reads besides its rows: headers for the
// tree's gap lines, the holders of running children for -o wide.
type listedCorpus interface {
	headerReader
	leases.Source
}

// Why a session is drawn in the tree without a row of its own.
const (
	gapFiltered = "filtered out by --state/--mode"
	gapOrdinary = "ordinary session, walked through: no row of its own"
	gapNoRow    = "no row of its own"
)

// treeGaps are the lines the tree needs between kept rows and their real
// parents: a row the filters removed (all holds the rows before
// filtering), or a session listDescendants walks through without a row (an
// ordinary fork; its header says where it hangs). A header that cannot be
// read ends the chain at root, drawn as a gap all the same.
func treeGaps(ctx context.Context, headers headerReader, root string, all, kept []subagent.Row) []render.TreeGap {
	known := make(map[string]bool, len(kept))
	for _, r := range kept {
		known[r.ID] = true
	}
	byID := make(map[string]*subagent.Row, len(all))
	for i := range all {
		byID[all[i].ID] = &all[i]
	}
	var gaps []render.TreeGap
	for _, r := range kept {
		// A chain is at most as long as the row is deep; the bound also
		// ends a loop of parent links.
		for id, steps := r.ParentID, 0; id != "" && id != root && !known[id] && steps < max(r.Depth, 1); steps++ {
			known[id] = true
			gap := render.TreeGap{ID: id, Why: gapNoRow}
			if up, ok := byID[id]; ok {
				gap.ParentID, gap.Why = up.ParentID, gapFiltered
			} else if h, err := headers.Header(ctx, id); err == nil && h.ParentSession != nil {
				gap.ParentID = *h.ParentSession
				if h.Origin == nil || *h.Origin != session.OriginSubagent {
					gap.Why = gapOrdinary
				}
			}
			gaps = append(gaps, gap)
			id = gap.ParentID
		}
	}
	return gaps
}

// cancelledListing reports a listing stopped by SIGINT, SIGTERM or its
// context as DSH's CANCELLED error, whichever layer noticed first (opening
// the store, enumerating, a cold read).
func cancelledListing(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil {
		return subagent.ErrCancelled
	}
	return err
}
