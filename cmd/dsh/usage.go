package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/dsh-project/dsh/internal/corpus"
	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/location"
	"github.com/dsh-project/dsh/internal/logdamage"
	"github.com/dsh-project/dsh/internal/render"
	"github.com/dsh-project/dsh/internal/report"
	"github.com/dsh-project/dsh/internal/usage"
)

func newUsageCmd(a *app) *cobra.Command {
	var (
		parent, scope, by string
	)
	cmd := &cobra.Command{
		Use:   "usage {ID... | --parent ID}",
		Short: "Print the tokens sessions used, by kind and by model, and a parent's subtree rollup",
		Long: `Print the token usage of sessions: per session the input, output, cache-read
and reasoning tokens of its model calls (assistant/message and
compaction/summary events carrying usage; the chunks streamed ahead of a
message repeat its figures and are not counted again), by model with --by
model. See docs/usage.md for the exact rules.

With --parent the report is the parent's subtree, as its descendants listing
shows it under the chosen --dsh-compat profile: the parent first, then every
listed child with its own totals and its subtree's rollup (itself and every
session below it). --scope children prints the parent's direct children only
(their rollups still cover everything below them). A session the listing
walks through without a row (an ordinary fork) is counted in its
ancestors' rollups and printed as "not listed".

The database keeps every session's totals as its log is written or
imported, so a rollup reads no log; --source reads each log in place.

A log that is not whole says so, in the row and on stderr: a torn tail or a
damaged log counts the events before the damage ("torn from seq N, prefix
counted"), an unreadable one counts nothing, and a listed session the corpus
does not hold is "missing".

Output formats:
  table  ID, [DEPTH,] [MODEL,] MESSAGES, INPUT, OUTPUT, CACHE_READ,
         REASONING, [the SUBTREE_ columns,] NOTE (tab-separated, without a
         header, when stdout is not a terminal)
  json   one array of usage objects (see docs/cli-contract.md), each with
         its models; --parent adds parentId, depth, listed, subtree and
         subtreeModels
  jsonl  the same objects, one per line
  tree   with --parent: the parent, then each session under its parent with
         its own and its subtree's totals

Read-only.

` + exitStatusHelp(
			exitLine{exitUsage, "a named session or the parent does not exist (NOT_FOUND)"},
		),
		Example: `  dsh usage 33333333-3333-4333-8333-333333333333
  dsh usage --parent my-session --scope descendants -o tree
  dsh usage --parent my-session --by model -o json`,
	}
	cmd.Flags().StringVar(&parent, "parent", "", "report the subtree of this session: it, its listed children and their rollups")
	cmd.Flags().StringVar(&scope, "scope", corpus.ScopeDescendants.String(), "with --parent: children (direct children) or descendants (every session below it)")
	cmd.Flags().StringVar(&by, "by", "", "model: one line per session and model (table and tree; JSON always has the models)")
	src := addSourceFlags(cmd)
	out := addOutputFlag(cmd, render.Table, render.TSV, render.JSON, render.JSONL, render.Tree)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		withParent := cmd.Flags().Changed("parent")
		switch {
		case withParent && len(args) > 0:
			return dsherr.New(dsherr.Usage, "dsh usage: give session ids or --parent, not both")
		case !withParent && len(args) == 0:
			return dsherr.New(dsherr.Usage, "dsh usage: give one or more session ids, or --parent ID")
		case !withParent && cmd.Flags().Changed("scope"):
			return dsherr.New(dsherr.Usage, "--scope needs --parent")
		}
		sc, err := parseScope(scope)
		if err != nil {
			return err
		}
		if by != "" && by != "model" {
			return dsherr.New(dsherr.Usage, "--by: %q is not model", by)
		}
		p, err := out.printer(a, cmd)
		if err != nil {
			return err
		}
		if p.Format() == render.Tree && !withParent {
			return dsherr.New(dsherr.Usage, "-o tree needs --parent")
		}
		ids := args
		if withParent {
			ids = []string{parent}
		}
		for _, id := range ids {
			if err := checkSessionID("dsh usage", id); err != nil {
				return err
			}
		}
		if cmd.Flags().Changed("source") {
			// Reading every log of a corpus in place can take a while.
			defer a.spinner(progressMode{}, "reading the source")()
		}
		records, err := readUsage(cmd.Context(), a, src, ids, withParent, sc)
		if err != nil {
			return cancelledListing(cmd.Context(), err)
		}
		for _, r := range records {
			if note := damageNote(r); note != "" {
				a.warn(note)
			}
		}
		return p.Usage(records, render.UsageView{Subtree: withParent, ByModel: by == "model"})
	}
	return cmd
}

// readUsage reads the records dsh usage prints: of ids, or of the subtree
// of ids[0] as its listing shows it.
func readUsage(ctx context.Context, a *app, src *sourceFlags, ids []string, subtree bool, scope corpus.Scope) (_ []usage.Record, err error) {
	r, err := src.open(ctx, a, "")
	if err != nil {
		return nil, err
	}
	defer closeCorpus(r, &err)
	for _, id := range ids {
		if _, err := r.Reader.Header(ctx, id); err != nil {
			return nil, r.LookupError(id, err)
		}
	}
	var records []usage.Record
	if !subtree {
		err = r.View(ctx, func(view location.Reader) error {
			records, err = usage.Records(ctx, view, ids)
			return err
		})
		return records, err
	}
	listing, err := subtreeListing(ctx, a, r, ids[0])
	if err != nil {
		return nil, err
	}
	err = r.View(ctx, func(view location.Reader) error {
		records, err = usage.SubtreeRecords(ctx, listing.Rows, view, ids[0], scope == corpus.ScopeChildren)
		return err
	})
	return records, err
}

// subtreeListing is parent's descendants as dsh list --scope descendants
// lists them under the chosen profile and configuration: the tree usage
// rolls up and search searches.
func subtreeListing(ctx context.Context, a *app, r *location.Corpus, parent string) (report.Listing, error) {
	profile, err := a.profile()
	if err != nil {
		return report.Listing{}, err
	}
	cfg, err := a.config()
	if err != nil {
		return report.Listing{}, err
	}
	l := r.Lister(cfg.ColdConcurrency)
	l.Profile = profile
	return report.List(ctx, l, parent, corpus.ScopeDescendants)
}

// damageNote is the stderr line for a record that is not a whole log's
// sum, "" for one that is.
func damageNote(r usage.Record) string {
	if r.Damage == "" {
		return ""
	}
	return partialLogNote("usage", r.ID, string(r.Damage), r.FromSeq, "are counted", "is counted")
}

// partialLogNote is the stderr line of a command reading whole logs
// (usage, search) for session id's log that it read only in part or not
// at all: damage is the record's "damage" value, from where it begins,
// done what the command did with the events it read ("are counted") and
// none what it did with nothing ("is counted").
func partialLogNote(command, id, damage string, from *int64, done, none string) string {
	at := ""
	if from != nil {
		at = fmt.Sprintf(" from seq %d", *from)
	}
	switch damage {
	case string(logdamage.Torn):
		return fmt.Sprintf("%s of %s: its log has a torn tail%s; the events before it %s", command, id, at, done)
	case string(logdamage.Damaged):
		return fmt.Sprintf("%s of %s: its log is damaged%s; the events before the damage %s", command, id, at, done)
	case string(logdamage.Unreadable):
		return fmt.Sprintf("%s of %s: its log cannot be read; nothing %s", command, id, none)
	}
	return fmt.Sprintf("%s of %s: listed, but the corpus holds no such session; nothing %s", command, id, none)
}
