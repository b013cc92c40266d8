package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/spf13/cobra"

	"github.com/dsh-project/dsh/internal/diagnose"
	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/dshformat"
	"github.com/dsh-project/dsh/internal/render"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/sqlitepersist"
	"github.com/dsh-project/dsh/internal/subagent"
	"github.com/dsh-project/dsh/internal/transfer"
)

// sourceFlags are --source and --source-cache, shared by the commands that
// can read a DSH corpus in place instead of the database (list, diagnose,
// session show, session events). Each command declares them with one call
// and routes its run through the matching method here, which falls back to
// the database when --source is not given.
type sourceFlags struct {
	cmd   *cobra.Command
	spec  string
	cache string
}

func addSourceFlags(cmd *cobra.Command) *sourceFlags {
	s := &sourceFlags{cmd: cmd}
	cmd.Flags().StringVar(&s.spec, "source", "",
		"read a DSH corpus in place instead of the database: jsonl:`PATH` (session files or a directory of them), dsh-sqlite:PATH (DSH's schema-17 store) or dsh-home:[PATH] (a DSH home, default $DSH_HOME or ~/.dsh, with its projection cache); read-only, every child inactive")
	cmd.Flags().StringVar(&s.cache, "source-cache", "",
		"with --source: DSH's projection cache at `PATH` — the rc.8 file session_projcache.json or the per-record directory storages/session_projcache — used as the projection cache")
	return s
}

// given reports whether the command reads a source; --source-cache alone
// is a usage error.
func (s *sourceFlags) given() (bool, error) {
	flags := s.cmd.Flags()
	if err := refuseEmptyFlags(s.cmd, "source", "source-cache"); err != nil {
		return false, err
	}
	if !flags.Changed("source") {
		if flags.Changed("source-cache") {
			return false, dsherr.New(dsherr.Usage, "--source-cache needs --source")
		}
		return false, nil
	}
	return true, nil
}

// foreignCorpus is an opened --source with its headers and, with
// --source-cache, DSH's projection cache.
type foreignCorpus struct {
	loc     transfer.Location
	src     dshformat.Source
	headers []session.Header
	cache   *dshformat.ProjcacheFile
}

// open opens the source read-only. Files that do not yield a session are
// reported in one warning; a projection cache file that cannot be used is
// a warning too (a cache is never a verdict): the source is then read
// without it.
func (s *sourceFlags) open(ctx context.Context, a *app) (*foreignCorpus, error) {
	loc, err := transfer.ParseLocation(s.spec)
	if err != nil {
		return nil, err
	}
	src, err := loc.Open(ctx)
	if err != nil {
		return nil, err
	}
	headers, err := src.Headers(ctx)
	if err != nil {
		src.Close()
		return nil, transfer.SourceError(loc.String(), err)
	}
	fc := &foreignCorpus{loc: loc, src: src, headers: headers}
	if problems := src.Problems(); len(problems) > 0 {
		a.warn(fmt.Sprintf("%s: %d session file(s) skipped, first: %v", loc, len(problems), problems[0].Err))
	}
	what := "--source-cache"
	var skips []dshformat.RecordSkip
	if s.cache != "" {
		fc.cache, skips, err = dshformat.ReadProjcache(ctx, s.cache)
	} else {
		what = loc.String() + " projection cache"
		fc.cache, skips, err = loc.Cache(ctx)
	}
	if err != nil {
		if ctx.Err() != nil {
			src.Close()
			return nil, ctx.Err()
		}
		fc.cache = nil
		a.warn(fmt.Sprintf("%s: %v; reading the source without it", what, err))
	}
	if len(skips) > 0 {
		a.warn(fmt.Sprintf("%s: %d record file(s) not used (read as cache misses), first: %s: %s", what, len(skips), skips[0].Path, skips[0].Reason))
	}
	return fc, nil
}

func (fc *foreignCorpus) close(err *error) {
	if cerr := fc.src.Close(); cerr != nil && *err == nil {
		*err = fmt.Errorf("close %s: %w", fc.loc, cerr)
	}
}

func (fc *foreignCorpus) has(id string) bool {
	return slices.ContainsFunc(fc.headers, func(h session.Header) bool { return h.ID == id })
}

// read reads one session as DSH's inspect does: the valid prefix, older
// records converted, and the verdict of DSH's validation (a
// *session.ValidationError) kept apart from the data.
func (fc *foreignCorpus) read(ctx context.Context, id string) (s *dshformat.Session, events []session.Event, invalid error, err error) {
	s, err = fc.src.Read(ctx, id)
	if errors.Is(err, dshformat.ErrNotFound) {
		return nil, nil, nil, &dsherr.Error{Code: dsherr.NotFound, Msg: fmt.Sprintf("no session with id %q in %s", id, fc.loc), Err: err}
	}
	if err != nil {
		return nil, nil, nil, transfer.SourceError(fc.loc.String(), err)
	}
	events, invalid = session.NormalizeLegacy(id, s.Events)
	if invalid == nil {
		invalid = session.ValidateLog(s.Header, events)
	}
	return s, events, invalid, nil
}

// runList is `dsh list`, over the source when one is given.
func (s *sourceFlags) runList(ctx context.Context, a *app, p *render.Printer, opts listOptions, scope render.Scope) (err error) {
	inPlace, err := s.given()
	if err != nil {
		return err
	}
	if !inPlace {
		return runList(ctx, a, p, opts, scope)
	}
	fc, err := s.open(ctx, a)
	if err != nil {
		return err
	}
	defer fc.close(&err)
	if opts.strict && !fc.has(opts.parent) {
		return dsherr.New(dsherr.NotFound, "no session with id %q in %s", opts.parent, fc.loc)
	}
	return printListing(ctx, a, p, subagent.NewForeignLister(fc.headers, fc.src, fc.cache, opts.coldConcurrency), opts, scope)
}

// showSession is `dsh session show`, over the source when one is given.
func (s *sourceFlags) showSession(ctx context.Context, a *app, id string) (v sessionView, err error) {
	inPlace, err := s.given()
	if err != nil {
		return v, err
	}
	if !inPlace {
		return showSession(ctx, a, id)
	}
	if err := checkSessionID("session show", id); err != nil {
		return v, err
	}
	fc, err := s.open(ctx, a)
	if err != nil {
		return v, err
	}
	defer fc.close(&err)
	sess, events, invalid, err := fc.read(ctx, id)
	if err != nil {
		return v, err
	}
	v.Header = newHeaderJSON(sess.Header)
	var ve *session.ValidationError
	if errors.As(invalid, &ve) {
		v.Invalid = &invalidView{Seq: ve.Seq, Rule: ve.Rule, Message: ve.Msg}
		return v, nil
	}
	if invalid != nil {
		return v, dsherr.Wrap(dsherr.InvalidLog, invalid, "session %q in %s", id, fc.loc)
	}
	sum := session.Summarize(events)
	v.Log = &logSummary{Events: len(events), Turns: sum.Turns, OpenTurn: sum.OpenTurn}
	if len(events) > 0 {
		v.Log.Last = &eventRef{Seq: sum.LastSeq, Type: sum.LastType}
	}
	if sess.Torn != nil {
		v.Log.TornTail = &tornTailView{FromSeq: sess.Torn.FromSeq, Reason: sess.Torn.Reason}
	}
	return v, nil
}

// runSessionEvents is `dsh session events`, over the source when one is
// given: the valid prefix of a log that passes DSH's validation, as the
// database's reader prints it.
func (s *sourceFlags) runSessionEvents(ctx context.Context, a *app, id string, opts sessionEventsOptions) (err error) {
	inPlace, err := s.given()
	if err != nil {
		return err
	}
	if !inPlace {
		return runSessionEvents(ctx, a, id, opts)
	}
	if err := checkSessionID("session events", id); err != nil {
		return err
	}
	if err := opts.validate(); err != nil {
		return err
	}
	p, err := a.printer(render.JSONL)
	if err != nil {
		return err
	}
	fc, err := s.open(ctx, a)
	if err != nil {
		return err
	}
	defer fc.close(&err)
	sess, events, invalid, err := fc.read(ctx, id)
	if err != nil {
		return err
	}
	if invalid != nil {
		return dsherr.Wrap(dsherr.InvalidLog, invalid, "%s: session %q failed validation", fc.loc, id)
	}
	if sess.Torn != nil {
		a.warn(fmt.Sprintf("session %s: torn tail from seq %d not printed (%s)", id, sess.Torn.FromSeq, sess.Torn.Reason))
	}
	for _, e := range events {
		if e.Seq < opts.from || (len(opts.types) > 0 && !slices.Contains(opts.types, e.Type)) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := p.JSON(e); err != nil {
			return fmt.Errorf("write event %d: %w", e.Seq, err)
		}
	}
	return nil
}

// runDiagnose is `dsh diagnose`, over the source when one is given. The
// audit reads a dsh database in one snapshot, so the source is first
// imported, exactly as found, into a scratch database in a private
// temporary directory (removed afterwards) with no projection checkpoints
// but those of --source-cache; the source itself is only read. Sessions the
// source cannot offer are named in warnings, as they cannot be audited.
func (s *sourceFlags) runDiagnose(ctx context.Context, a *app, p *render.Printer, opts diagnoseOptions, sel diagnose.Selection, failOn diagnose.Severity) (err error) {
	inPlace, err := s.given()
	if err != nil {
		return err
	}
	if !inPlace {
		return runDiagnose(ctx, a, p, opts, sel, failOn)
	}
	cfg, err := a.config()
	if err != nil {
		return err
	}
	fc, err := s.open(ctx, a)
	if err != nil {
		return err
	}
	defer fc.close(&err)
	dir, err := os.MkdirTemp("", "dsh-source-")
	if err != nil {
		return dsherr.Wrap(dsherr.StoreError, err, "create scratch database for %s", fc.loc)
	}
	defer func() {
		if rerr := os.RemoveAll(dir); rerr != nil && err == nil {
			err = fmt.Errorf("remove scratch database: %w", rerr)
		}
	}()
	scratch := filepath.Join(dir, "dsh.db")
	refused, err := fillScratch(ctx, a, fc, scratch, opts.progress)
	if err != nil {
		return err
	}
	opts.refused = selectRefused(fc.headers, refused, sel)
	cfg.DB = scratch
	return runDiagnose(ctx, a, p, opts, sel, failOn)
}

// selectRefused keeps the reports of refused sessions the selection covers:
// named ids, every session (--all), the parent's children or descendants,
// or by default every subagent child. Descendants are found through the
// source's headers.
func selectRefused(headers []session.Header, refused []diagnose.Report, sel diagnose.Selection) []diagnose.Report {
	parentOf := make(map[string]string, len(headers))
	for _, h := range headers {
		parentOf[h.ID] = h.Parent()
	}
	var out []diagnose.Report
	for _, r := range refused {
		parent := ""
		if r.ParentID != nil {
			parent = *r.ParentID
		}
		switch {
		case len(sel.IDs) > 0:
			if !slices.Contains(sel.IDs, r.ID) {
				continue
			}
		case sel.All:
		case sel.HasParent && sel.Scope == diagnose.ScopeDescendants:
			depth, ok := depthBelow(parentOf, r.ID, sel.Parent)
			if !ok {
				continue
			}
			if r.Row != nil {
				r.Row.ParentID, r.Row.Depth = parent, depth
			}
		case sel.HasParent:
			if parent != sel.Parent {
				continue
			}
		default:
			if r.RowKind != diagnose.RowUnavailable {
				continue
			}
		}
		out = append(out, r)
	}
	return out
}

// depthBelow is how many parent links lead from id up to root (false when
// none does; a cycle is cut after as many links as there are sessions).
func depthBelow(parentOf map[string]string, id, root string) (int, bool) {
	for depth := 1; depth <= len(parentOf)+1; depth++ {
		p, ok := parentOf[id]
		if !ok || p == "" {
			return 0, false
		}
		if p == root {
			return depth, true
		}
		id = p
	}
	return 0, false
}

// fillScratch imports the source into a new database at path. It returns
// the report of every listed session whose format dsh refuses: such a
// session cannot be imported, and is audited as UNSUPPORTED_FORMAT.
func fillScratch(ctx context.Context, a *app, fc *foreignCorpus, path string, mode progressMode) (refused []diagnose.Report, err error) {
	st, err := sqlitepersist.Open(ctx, path, sqlitepersist.Options{})
	if err != nil {
		return nil, err
	}
	defer closeStore(st, &err)
	var step func(int)
	finish := func() {}
	sum, err := transfer.Import(ctx, st, fc.src, transfer.ImportOptions{
		NoCheckpoints: true,
		Progress: func(done, total int) {
			if step == nil {
				step, finish = a.progress(mode, "read source", total)
			}
			step(done)
		},
	})
	finish()
	if err != nil {
		return nil, err
	}
	// Files that yield no session were named when the source was opened.
	skipped := map[string]bool{}
	for _, p := range fc.src.Problems() {
		skipped[p.Path] = true
	}
	listed := make(map[string]session.Header, len(fc.headers))
	for _, h := range fc.headers {
		listed[h.ID] = h
	}
	for _, r := range sum.Results {
		if r.Outcome == transfer.Imported || skipped[r.Location] {
			continue
		}
		if h, ok := listed[r.ID]; ok && r.Outcome == transfer.Unreadable {
			_, readErr := fc.src.Read(ctx, r.ID)
			var refusal *dshformat.UnsupportedVersionError
			if errors.As(readErr, &refusal) {
				refused = append(refused, diagnose.RefusedReport(h, refusal.Error()))
				continue
			}
		}
		a.warn(fmt.Sprintf("%s: session %q not diagnosed: %s", fc.loc, r.ID, r.Reason))
	}
	if fc.cache != nil {
		if _, err := transfer.SeedCheckpoints(ctx, st, fc.cache); err != nil {
			return nil, err
		}
	}
	return refused, nil
}
