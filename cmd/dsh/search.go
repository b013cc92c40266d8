package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/dsh-project/dsh/internal/corpus"
	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/location"
	"github.com/dsh-project/dsh/internal/render"
	"github.com/dsh-project/dsh/internal/search"
)

// searchDamageLines is how many damaged logs dsh search names on stderr
// before it only counts the rest.
const searchDamageLines = 10

func newSearchCmd(a *app) *cobra.Command {
	var (
		parent, scope, since, until string
		types                       []string
		limit                       int
	)
	cmd := &cobra.Command{
		Use:   "search QUERY",
		Short: "Search the text of the sessions' messages",
		Long: `Search the text of the messages of every session (or of a parent's
subtree): user/message, assistant/message and tool/result events — the text
blocks of each message and of each tool result, not reasoning, tool-call
arguments or images. Each hit prints its session id, seq, time, type and a
snippet with every matching word between « and », best first.

Query syntax (see docs/search.md):
  word          a word, in any case (and, on SQLite, with or without accents)
  "two words"   a phrase: the words next to each other, in order
  pre*  "a b"*  a prefix: words that begin with pre
  a b, a AND b  both;  a OR b  either;  a NOT b  a without b
  ( … )         grouping
A term may hold - _ . / ' @ # & + , ! ? % $ (its words are searched as a
phrase: x.y is "x y"); any other punctuation must be in quotes. A malformed
query is INVALID_INPUT.

The database keeps a full-text index of the text as every log is written or
imported (SQLite FTS5, PostgreSQL tsvector), so a search reads no log;
--source reads each log in place and ranks hits by how many words they
match. A fork's inherited prefix is its parent's text: a hit is reported in
the session that wrote it.

A log that is not whole says so on stderr: a torn tail or a damaged log is
searched up to the damage, an unreadable one not at all, and a listed
session the corpus does not hold is "missing".

Output formats:
  table  SESSION, SEQ, TIME, TYPE, SNIPPET (tab-separated, without a header,
         when stdout is not a terminal)
  json   one array of hits: sessionId, seq, time, type, snippet
  jsonl  the same objects, one per line

dsh serve answers the same hits at /api/v1/search and on its /search page.

Read-only.

` + exitStatusHelp(
			exitLine{exitUsage, "a malformed query (INVALID_INPUT) or an unknown --parent (NOT_FOUND)"},
		),
		Example: `  dsh search 'timeout OR deadline'
  dsh search '"connection refused"' --type tool/result -n 5
  dsh search 'migrat*' --parent my-session --since 2026-01-01 -o json`,
		Args: exactArgs("QUERY"),
	}
	cmd.Flags().StringVar(&parent, "parent", "", "search this session and the sessions below it")
	cmd.Flags().StringVar(&scope, "scope", corpus.ScopeDescendants.String(), "with --parent: children (the parent and its direct children) or descendants (every session below it)")
	cmd.Flags().StringSliceVar(&types, "type", nil, "search only these event types: "+strings.Join(search.Types, ", ")+" (repeat or separate by commas)")
	cmd.Flags().StringVar(&since, "since", "", "only events at or after `TIME`: RFC 3339, a date (YYYY-MM-DD, UTC) or a duration ago (90m, 36h, 7d)")
	cmd.Flags().StringVar(&until, "until", "", "only events before `TIME` (the forms of --since)")
	cmd.Flags().IntVarP(&limit, "limit", "n", 20, "print at most `N` hits, best first (0: all)")
	_ = cmd.RegisterFlagCompletionFunc("type", func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return search.Types, cobra.ShellCompDirectiveNoFileComp
	})
	src := addSourceFlags(cmd)
	out := addOutputFlag(cmd, render.Table, render.TSV, render.JSON, render.JSONL)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		// The printer first: with -o json a refused flag or query is a
		// JSON error document on stdout too (the one dsh serve answers).
		p, err := out.printer(a, cmd)
		if err != nil {
			return err
		}
		withParent := cmd.Flags().Changed("parent")
		if !withParent && cmd.Flags().Changed("scope") {
			return dsherr.New(dsherr.Usage, "--scope needs --parent")
		}
		sc, err := parseScope(scope)
		if err != nil {
			return err
		}
		if limit < 0 {
			return dsherr.New(dsherr.Usage, "-n: %d is negative", limit)
		}
		if err := search.CheckTypes("--type", types); err != nil {
			return err
		}
		now := time.Now()
		o := search.Options{Types: types, Limit: limit}
		if o.Since, err = search.ParseTime("--since", since, now); err != nil {
			return err
		}
		if o.Until, err = search.ParseTime("--until", until, now); err != nil {
			return err
		}
		if withParent {
			if err := checkSessionID("dsh search --parent", parent); err != nil {
				return err
			}
		}
		q, err := search.Parse(args[0])
		if err != nil {
			return err
		}
		if cmd.Flags().Changed("source") {
			// Reading every log of a corpus in place can take a while.
			defer a.spinner(progressMode{}, "reading the source")()
		}
		res, err := runSearch(cmd.Context(), a, src, q, o, withParent, parent, sc)
		if err != nil {
			return cancelledListing(cmd.Context(), err)
		}
		for i, d := range res.Damaged {
			if i == searchDamageLines {
				a.warn(fmt.Sprintf("search: %d more damaged logs in the searched scope (dsh diagnose lists them)", len(res.Damaged)-i))
				break
			}
			a.warn(searchDamageNote(d))
		}
		return p.Search(res.Hits)
	}
	return cmd
}

// runSearch searches the corpus: every session, or parent and the sessions
// its listing shows below it.
func runSearch(ctx context.Context, a *app, src *sourceFlags, q *search.Query, o search.Options, withParent bool, parent string, scope corpus.Scope) (_ *search.Result, err error) {
	r, err := src.open(ctx, a, "")
	if err != nil {
		return nil, err
	}
	defer closeCorpus(r, &err)
	if withParent {
		if _, err := r.Reader.Header(ctx, parent); err != nil {
			return nil, r.LookupError(parent, err)
		}
		listing, err := subtreeListing(ctx, a, r, parent)
		if err != nil {
			return nil, err
		}
		o.Sessions = search.Subtree(parent, listing.Rows, scope == corpus.ScopeChildren)
	}
	var res *search.Result
	err = r.View(ctx, func(view location.Reader) error {
		res, err = search.Run(ctx, view, q, o)
		return err
	})
	return res, err
}

// searchDamageNote is the stderr line for a damaged log of the scope.
func searchDamageNote(d search.DamagedLog) string {
	return partialLogNote("search", d.ID, string(d.Damage), d.FromSeq, "were searched", "was searched")
}
