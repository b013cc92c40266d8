package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/projcache"
	"github.com/dsh-project/dsh/internal/render"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/subagent"
)

func newCacheCmd(a *app) *cobra.Command {
	return newGroupCmd("cache", "Maintain the projection checkpoint cache",
		`The checkpoint cache holds, per session, the folded state of dsh's projection
units (the subagent identity) so that a listing serves cold children without
reading their logs. It is derived data: a record that does not match its
session's lifecycle, a unit's state version, or does not decode is ignored.`,
		newCacheStatsCmd(a), newCacheVerifyCmd(a), newCacheRebuildCmd(a), newCacheClearCmd(a))
}

// cacheStatsView is `dsh cache stats` output.
type cacheStatsView struct {
	Records  int `json:"records"`
	Stale    int `json:"stale"`
	Foreign  int `json:"foreign"`
	Poisoned int `json:"poisoned"`
	Orphaned int `json:"orphaned"`
	// Units counts records per unit key and stored state version.
	Units map[string]map[string]int `json:"units"`
}

func newCacheStatsCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "stats",
		Short: "Count checkpoint records and the ones a reader would ignore",
		Long: `Count the checkpoint records, per unit and state version, and those a reader
ignores: stale (a registered unit's row missing or at another state version),
foreign (written for another lifecycle of the session id), poisoned (does not
decode) and orphaned (the session is gone). Read-only; reads no event log.

` + exitStatusHelp(),
		Example: "  dsh cache stats\n  dsh cache stats -o json",
		Args:    exactArgs(),
	}
	out := addOutputFlag(cmd, render.Table, render.JSON)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		p, err := out.printer(a, cmd)
		if err != nil {
			return err
		}
		return runCacheStats(cmd.Context(), a, p)
	}
	return cmd
}

func runCacheStats(ctx context.Context, a *app, p *render.Printer) (err error) {
	s, err := a.openStoreReadOnly(ctx)
	if err != nil {
		return err
	}
	defer closeStore(s, &err)
	var st projcache.Stats
	err = s.View(ctx, func(view backend.Store) error {
		cp := subagent.StoreCheckpoints(view)
		st, err = cp.Cache.Stats(ctx, cp.Header)
		return cacheStoreError(err)
	})
	if err != nil {
		return err
	}
	v := cacheStatsView{Records: st.Records, Stale: st.Stale, Foreign: st.Foreign, Poisoned: st.Poisoned, Orphaned: st.Orphaned, Units: map[string]map[string]int{}}
	fields := []render.Field{
		{Name: "records", Value: strconv.Itoa(st.Records)},
		{Name: "stale", Value: strconv.Itoa(st.Stale)},
		{Name: "foreign", Value: strconv.Itoa(st.Foreign)},
		{Name: "poisoned", Value: strconv.Itoa(st.Poisoned)},
		{Name: "orphaned", Value: strconv.Itoa(st.Orphaned)},
	}
	keys := make([]string, 0, len(st.Units))
	for k := range st.Units {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v.Units[k] = map[string]int{}
		vers := make([]int, 0, len(st.Units[k]))
		for ver := range st.Units[k] {
			vers = append(vers, ver)
		}
		sort.Ints(vers)
		for _, ver := range vers {
			v.Units[k][strconv.Itoa(ver)] = st.Units[k][ver]
			fields = append(fields, render.Field{Name: fmt.Sprintf("unit %s v%d", k, ver), Value: strconv.Itoa(st.Units[k][ver])})
		}
	}
	return p.Record(v, fields)
}

// cacheFindingView is one finding of verify or rebuild.
type cacheFindingView struct {
	Session string `json:"sessionId"`
	Unit    string `json:"unit,omitempty"`
	Kind    string `json:"kind"`
	Reason  string `json:"reason"`
}

func findingView(f projcache.Finding) cacheFindingView {
	return cacheFindingView{Session: f.SessionID, Unit: f.Key, Kind: string(f.Kind), Reason: f.Reason}
}

var cacheFindingColumns = []render.Column[cacheFindingView]{
	{Header: "SESSION", Value: func(f cacheFindingView) string { return f.Session }},
	{Header: "UNIT", Value: func(f cacheFindingView) string { return f.Unit }},
	{Header: "KIND", Value: func(f cacheFindingView) string { return f.Kind }},
	{Header: "REASON", Value: func(f cacheFindingView) string { return f.Reason }},
}

func printFindings(p *render.Printer, findings []projcache.Finding) error {
	l := render.NewList(p, cacheFindingColumns)
	for _, f := range findings {
		if err := l.Add(findingView(f)); err != nil {
			return err
		}
	}
	return l.Close()
}

// checkCacheIDs refuses, before anything is done, an id that names neither
// a session nor a record (NOT_FOUND, as every command reports an unknown
// id). A record whose session is gone is a valid target: rebuild removes it.
func checkCacheIDs(ctx context.Context, s backend.HeaderReader, c *projcache.Cache, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	recorded, err := c.IDs(ctx)
	if err != nil {
		return cacheStoreError(err)
	}
	for _, id := range ids {
		if _, ok := slices.BinarySearch(recorded, id); ok {
			continue
		}
		if _, err := s.Header(ctx, id); err != nil {
			return lookupError(id, err)
		}
	}
	return nil
}

// cacheStoreError codes a failure of the checkpoint table as what it is, the
// store failing (STORE_UNAVAILABLE), not an internal error of dsh.
func cacheStoreError(err error) error {
	if err == nil || dsherr.CodeOf(err) != "" || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return dsherr.Wrap(dsherr.StoreUnavailable, err, "checkpoint cache")
}

// withCacheTargets gives verify and rebuild their shared flags (--all, -o)
// and a RunE that resolves the targets and the printer before run.
func withCacheTargets(a *app, cmd *cobra.Command, allUsage string, run func(ctx context.Context, p *render.Printer, ids []string, all bool) error) {
	var all bool
	cmd.Flags().BoolVar(&all, "all", false, allUsage)
	out := addOutputFlag(cmd, render.Table, render.JSON, render.JSONL)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		ids, err := cacheTargets(cmd, args, all)
		if err != nil {
			return err
		}
		p, err := out.printer(a, cmd)
		if err != nil {
			return err
		}
		return run(cmd.Context(), p, ids, all)
	}
}

// cacheTargets resolves `[ID…|--all]`: the named sessions, or with --all
// every record (verify) or every session of the store (rebuild).
func cacheTargets(cmd *cobra.Command, args []string, all bool) ([]string, error) {
	switch {
	case all && len(args) > 0:
		return nil, dsherr.New(dsherr.Usage, "%s: give session ids or --all, not both", cmd.CommandPath())
	case !all && len(args) == 0:
		return nil, dsherr.New(dsherr.Usage, "%s: give session ids or --all", cmd.CommandPath())
	}
	if all {
		return nil, nil // nil, not empty: the checkpoint cache reads nil as "every record"
	}
	for _, id := range args {
		if err := checkSessionID(cmd.CommandPath(), id); err != nil {
			return nil, err
		}
	}
	return args, nil
}

func newCacheVerifyCmd(a *app) *cobra.Command {
	var mode progressMode
	cmd := &cobra.Command{
		Use:   "verify [ID…|--all]",
		Short: "Refold sessions from their logs and report records that disagree",
		Long: `Refold each checkpoint record's session from its stored log and report every
record that disagrees: a row whose state differs from the refold at the row's
own seq (mismatch), a watermark beyond the log (ahead), a missing or outdated
unit row (stale), another lifecycle's record (foreign), bytes that do not
decode (poisoned), a gone session (orphan), an unreadable log; and every
registry fold kept beside a log that differs from a refold of it
(fold-mismatch). A record that merely lags the log is not a finding. Read-only.

The findings go to stdout; one line on stderr says what was checked (records,
events refolded, registry folds, the sessions in the database) and how many
findings there were, or that there was nothing to check (an empty cache, as
after cache clear: exit 0, nothing disagrees). A progress bar is drawn on
stderr when it is a terminal.

` + exitStatusHelp(exitLine{1, "verified, and some record disagrees with its log"}),
		Example: "  dsh cache verify --all\n  dsh cache verify 7cc39d3a-da07-4b5f-9b28-59bc4f2fe550 -o json",
	}
	cmd.Flags().BoolVar(&mode.force, "progress", false, "draw a progress bar even when stderr is not a terminal")
	cmd.Flags().BoolVar(&mode.quiet, "quiet", false, "never draw a progress bar")
	withCacheTargets(a, cmd, "verify every record", func(ctx context.Context, p *render.Printer, ids []string, _ bool) error {
		return runCacheVerify(ctx, a, p, ids, mode)
	})
	return cmd
}

// cacheVerified is what one verify checked.
type cacheVerified struct {
	records  projcache.VerifyReport
	folds    subagent.FoldReport
	sessions int // in the database
}

func runCacheVerify(ctx context.Context, a *app, p *render.Printer, ids []string, mode progressMode) (err error) {
	s, err := a.openStoreReadOnly(ctx)
	if err != nil {
		return err
	}
	defer closeStore(s, &err)
	var v cacheVerified
	// The bar is drawn once the targets are known.
	step, finish := func(int) {}, func() {}
	progress := func(done, total int) {
		if done == 0 {
			step, finish = a.progress(mode, "verify", total)
		}
		step(done)
	}
	err = s.View(ctx, func(view backend.Store) error {
		cp := subagent.StoreCheckpoints(view)
		if err := checkCacheIDs(ctx, view, cp.Cache, ids); err != nil {
			return err
		}
		if v.sessions, err = view.CountSessions(ctx, false); err != nil {
			return err
		}
		rep, err := cp.Verify(ctx, ids, progress)
		v.records, v.folds = rep.Records, rep.Folds
		return cacheStoreError(err)
	})
	finish()
	if err != nil {
		return err
	}
	for _, id := range v.records.NoRecord {
		a.warn(fmt.Sprintf("%s: no checkpoint record", id))
	}
	findings := append(v.records.Findings, v.folds.Findings...)
	if err := printFindings(p, findings); err != nil {
		return err
	}
	if len(findings) > 0 {
		return failedCheck("cache verify: %s", v.summary(len(findings)))
	}
	if v.records.Checked == 0 && v.folds.Checked == 0 {
		what := fmt.Sprintf("the cache holds no record (the database holds %d session(s); dsh cache rebuild --all writes one for each)", v.sessions)
		if ids != nil {
			what = fmt.Sprintf("none of the %d session(s) named has a record (dsh cache rebuild ID… writes them)", len(ids))
		}
		fmt.Fprintf(a.stderr, "dsh: cache verify: nothing to check: %s\n", what)
		return nil
	}
	fmt.Fprintf(a.stderr, "dsh: cache verify: %s\n", v.summary(0))
	return nil
}

// summary says what a verify checked and how many findings it had.
func (v cacheVerified) summary(findings int) string {
	return fmt.Sprintf("%d finding(s) in %d record(s) checked (%d event(s) refolded, %d registry fold(s) checked; the database holds %d session(s))",
		findings, v.records.Checked, v.records.Events, v.folds.Checked, v.sessions)
}

func newCacheRebuildCmd(a *app) *cobra.Command {
	var mode progressMode
	cmd := &cobra.Command{
		Use:   "rebuild [ID…|--all]",
		Short: "Refold sessions from their logs and rewrite their records",
		Long: `Refold each named session (--all: every session in the database) from its
stored log and replace its checkpoint record. Each session is rewritten in one
statement, so an interrupted rebuild leaves every record either old or new. A
record whose session is gone or whose log cannot be read is removed. One line
on stderr says how many records were rewritten and removed, of how many
sessions read, or that there was nothing to rebuild. A progress bar is drawn
on stderr when it is a terminal.

` + exitStatusHelp(),
		Example: "  dsh cache rebuild --all\n  dsh cache rebuild 7cc39d3a-da07-4b5f-9b28-59bc4f2fe550",
	}
	cmd.Flags().BoolVar(&mode.force, "progress", false, "draw a progress bar even when stderr is not a terminal")
	cmd.Flags().BoolVar(&mode.quiet, "quiet", false, "never draw a progress bar")
	withCacheTargets(a, cmd, "rebuild the record of every session", func(ctx context.Context, p *render.Printer, ids []string, all bool) error {
		return runCacheRebuild(ctx, a, p, ids, all, mode)
	})
	return cmd
}

func runCacheRebuild(ctx context.Context, a *app, p *render.Printer, ids []string, all bool, mode progressMode) (err error) {
	s, err := a.openStore(ctx)
	if err != nil {
		return err
	}
	defer closeStore(s, &err)
	cp := subagent.StoreCheckpoints(s)
	if all {
		// Every session, and every record whose session is gone: those
		// are removed, so verify --all finds no orphan afterwards.
		recorded, err := cp.Cache.IDs(ctx)
		if err != nil {
			return cacheStoreError(err)
		}
		seen := make(map[string]bool, len(recorded))
		ids = []string{}
		if err := s.ListHeaders(ctx, func(h session.Header) error {
			seen[h.ID] = true
			ids = append(ids, h.ID)
			return nil
		}); err != nil {
			return err
		}
		for _, id := range recorded {
			if !seen[id] {
				ids = append(ids, id)
			}
		}
	} else if err := checkCacheIDs(ctx, s, cp.Cache, ids); err != nil {
		return err
	}
	if len(ids) == 0 {
		fmt.Fprintln(a.stderr, "dsh: cache rebuild: nothing to rebuild: the database holds no session and the cache no record")
		return nil
	}
	step, finish := a.progress(mode, "rebuild", len(ids))
	rep, err := cp.Rebuild(ctx, ids, func(done, _ int) { step(done) })
	finish()
	if err != nil {
		return cacheStoreError(err)
	}
	if err := printFindings(p, append(rep.Removed, rep.UnitFailures...)); err != nil {
		return err
	}
	fmt.Fprintf(a.stderr, "dsh: rebuilt %d record(s), removed %d (%d session(s) read, %d unit failure(s))\n",
		rep.Rewritten, len(rep.Removed), len(ids), len(rep.UnitFailures))
	return nil
}

func newCacheClearCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "clear",
		Short: "Delete every checkpoint record",
		Long: `Delete every checkpoint record, and every registry fold recorded beside a
log (derived data too). Listings then read each cold child's log until records
are written again (by start, resume, import or cache rebuild; folds by start and
resume). Prints the number of records removed.

` + exitStatusHelp(),
		Example: "  dsh cache clear",
		Args:    exactArgs(),
	}
	cmd.RunE = func(cmd *cobra.Command, _ []string) (err error) {
		s, err := a.openStore(cmd.Context())
		if err != nil {
			return err
		}
		defer closeStore(s, &err)
		n, err := subagent.StoreCheckpoints(s).Cache.Clear(cmd.Context())
		if err != nil {
			return cacheStoreError(err)
		}
		_, err = fmt.Fprintln(a.stdout, n)
		return err
	}
	return cmd
}
