package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/dshcompat"
	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/dshformat"
	"github.com/dsh-project/dsh/internal/projcache"
	"github.com/dsh-project/dsh/internal/subagent"
	"github.com/dsh-project/dsh/internal/transfer"
)

// sourceFlags are --source and --source-cache, shared by the commands that
// can read a DSH corpus in place instead of the database (list, diagnose,
// session show, session events). Each command declares them with one call
// and opens what it reads with open: the commands then run the same code
// whichever corpus it is.
type sourceFlags struct {
	cmd   *cobra.Command
	spec  string
	cache string
	// strict makes a source that holds no session an error (list
	// --strict), not a warning.
	strict bool
}

func addSourceFlags(cmd *cobra.Command) *sourceFlags {
	s := &sourceFlags{cmd: cmd}
	cmd.Flags().StringVar(&s.spec, "source", "",
		"read a DSH corpus in place instead of the database: jsonl:`PATH` (session files or a directory of them), dsh-sqlite:PATH (DSH's schema-17 store) or dsh-home:[PATH] (a DSH home, default $DSH_HOME or ~/.dsh, with its projection cache); read-only, every child inactive")
	cmd.Flags().StringVar(&s.cache, "source-cache", "",
		"with --source: DSH's projection cache at `PATH` — the rc.8 file session_projcache.json or the per-record directory storages/session_projcache — used as the projection cache")
	return s
}

// readCorpus is what the read commands read: the read side of the backend
// contract with its leases and checkpoint records.
type readCorpus interface {
	backend.Reader
	backend.LeaseReader
	backend.CheckpointReader
}

// corpusReader is the corpus a read command reads — the database opened
// read-only, or a --source corpus read in place — with the few things that
// differ between the two decided here, once.
type corpusReader struct {
	corpus readCorpus
	// where names a --source in messages; "" for the database.
	where string
	// empty says the source holds no session (already reported).
	empty bool
	// lister builds the listing over the corpus: for the database with its
	// checkpoint cache and one snapshot, for a source with DSH's cache file.
	lister func(coldConcurrency int) *subagent.Lister
	close  func() error
}

// open opens what the command reads: the source when --source is given
// (--source-cache alone is a usage error), the database otherwise.
func (s *sourceFlags) open(ctx context.Context, a *app) (*corpusReader, error) {
	flags := s.cmd.Flags()
	if err := refuseEmptyFlags(s.cmd, "source", "source-cache"); err != nil {
		return nil, err
	}
	if !flags.Changed("source") {
		if flags.Changed("source-cache") {
			return nil, dsherr.New(dsherr.Usage, "--source-cache needs --source")
		}
		st, err := a.openStoreReadOnly(ctx)
		if err != nil {
			return nil, err
		}
		return &corpusReader{
			corpus: st,
			lister: func(n int) *subagent.Lister { return subagent.NewStoreLister(st, st, n) },
			close:  st.Close,
		}, nil
	}
	return s.openSource(ctx, a)
}

// testSourceEnumerated, set only by tests, runs once a --source or an
// import source has been enumerated and before any of its logs is read:
// the damage catalogue removes a session's file there, the moment a file
// that vanishes under a running dsh would, which no test can otherwise
// reach.
var testSourceEnumerated func(loc transfer.Location)

func sourceEnumerated(loc transfer.Location) {
	if testSourceEnumerated != nil {
		testSourceEnumerated(loc)
	}
}

// sourceCorpus is a foreign corpus with the checkpoint records converted
// from DSH's projection cache file (none without --source-cache).
type sourceCorpus struct {
	*dshformat.Corpus
	*projcache.MemoryRecords
}

// openSource opens --source read-only. Files that do not yield a session
// are named in one warning (diagnose reports each); a projection cache
// (--source-cache, or a DSH home's own) that cannot be used is a warning
// too, and so are its record files that are not used (a cache is never a
// verdict): the source is then read without them.
func (s *sourceFlags) openSource(ctx context.Context, a *app) (_ *corpusReader, err error) {
	if err := checkSourceKind(s.spec); err != nil {
		return nil, err
	}
	loc, err := transfer.ParseLocation(s.spec)
	if err != nil {
		return nil, err
	}
	src, err := loc.Open(ctx)
	if err != nil {
		return nil, err
	}
	sourceEnumerated(loc)
	defer func() {
		if err != nil {
			src.Close()
		}
	}()
	c, err := dshformat.NewCorpus(ctx, src, loc.String())
	if err != nil {
		return nil, transfer.SourceError(loc.String(), err)
	}
	problems := src.Problems()
	if len(problems) > 0 {
		a.warn(fmt.Sprintf("%s: %d session file(s) skipped, first: %v", loc, len(problems), problems[0].Err))
	}
	n, err := c.CountSessions(ctx, false)
	if err != nil {
		return nil, err
	}
	empty := n == 0 && len(problems) == 0
	if empty {
		// DSH would list such a corpus as empty; a mistyped path must
		// not pass for a clean one in silence.
		msg := emptySource(loc)
		if s.strict {
			return nil, dsherr.New(dsherr.NotFound, "%s", msg)
		}
		a.warn(msg)
	}
	sc := sourceCorpus{Corpus: c, MemoryRecords: projcache.NewMemoryRecords()}
	what := "--source-cache"
	var (
		file  *dshformat.CacheFile
		skips []dshformat.RecordSkip
	)
	if s.cache != "" {
		file, skips, err = dshformat.ReadCache(ctx, s.cache)
	} else {
		what = loc.String() + " projection cache"
		file, skips, err = loc.Cache(ctx)
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		file = nil
		a.warn(fmt.Sprintf("%s: %v; reading the source without it", what, err))
	}
	if len(skips) > 0 {
		a.warn(fmt.Sprintf("%s: %d record file(s) not used (read as cache misses), first: %s: %s", what, len(skips), skips[0].Path, skips[0].Reason))
	}
	if file != nil {
		// DSH 0.1.0-rc.8 reads only its own aggregate file, never a later
		// release's per-record cache: neither list nor diagnose uses one
		// under that profile.
		if profile, err := a.profile(); err != nil {
			return nil, err
		} else if profile == dshcompat.RC8 {
			file = file.RC8Only()
		}
		if _, err := transfer.SeedCheckpoints(ctx, sc, file); err != nil {
			return nil, err
		}
	}
	return &corpusReader{
		corpus: sc,
		where:  loc.String(),
		empty:  empty,
		lister: func(n int) *subagent.Lister { return subagent.NewCorpusLister(c, file, n) },
		close: func() error {
			if err := src.Close(); err != nil {
				return fmt.Errorf("close %s: %w", loc, err)
			}
			return nil
		},
	}, nil
}

// emptySource says that loc holds no session, and for a dsh-home: source
// that the folder is not a DSH home at all when it has neither of a home's
// trees (sessions/, storages/): the usual mistake is the path.
func emptySource(loc transfer.Location) string {
	if loc.Kind == transfer.KindDSHHome && !isDir(filepath.Join(loc.Path, "sessions")) && !isDir(filepath.Join(loc.Path, "storages")) {
		return fmt.Sprintf("%s is not a DSH home (no sessions/ or storages/ in it) and holds no session", loc)
	}
	return fmt.Sprintf("%s holds no session", loc)
}

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// checkSourceKind refuses a --source whose kind the read commands do not
// read in place, saying what does: import reads another dsh database
// (dsh:), but a read command reads one with --db.
func checkSourceKind(spec string) error {
	kind, path, ok := strings.Cut(spec, ":")
	switch transfer.Kind(kind) {
	case transfer.KindJSONL, transfer.KindDSHSQLite, transfer.KindDSHHome:
		return nil
	case transfer.KindDSH:
		return dsherr.New(dsherr.Usage, "--source %s: a dsh database is not read as a source; read it with --db %s", spec, path)
	}
	if !ok {
		return dsherr.New(dsherr.Usage, "--source %q: want jsonl:PATH, dsh-sqlite:PATH or dsh-home:[PATH]", spec)
	}
	return dsherr.New(dsherr.Usage, "--source %q: unknown kind %q (want jsonl, dsh-sqlite or dsh-home)", spec, kind)
}

// done closes the corpus and keeps the first error.
func (r *corpusReader) done(err *error) {
	if cerr := r.close(); cerr != nil && *err == nil {
		*err = cerr
	}
}

// view runs fn on one consistent snapshot of the corpus when it offers one
// (the database), on the corpus itself otherwise (a source is read once).
func (r *corpusReader) view(ctx context.Context, fn func(readCorpus) error) error {
	if v, ok := r.corpus.(backend.Transactor); ok {
		return v.View(ctx, func(view backend.Store) error { return fn(view) })
	}
	return fn(r.corpus)
}

// lookupError names the id (and the source) when the corpus does not know it.
func (r *corpusReader) lookupError(id string, err error) error {
	if r.where == "" || !errors.Is(err, backend.ErrNotFound) {
		return lookupError(id, err)
	}
	return &dsherr.Error{Code: dsherr.NotFound, Msg: fmt.Sprintf("no session with id %q in %s", id, r.where), Err: err}
}
