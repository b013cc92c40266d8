package location

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/dsh-project/dsh/internal/dshcompat"
	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/dshformat"
	"github.com/dsh-project/dsh/internal/projcache"
	"github.com/dsh-project/dsh/internal/subagent"
	"github.com/dsh-project/dsh/internal/transfer"
)

// DSH's own corpora, read in place through dshformat: every child reads
// inactive (DSH keeps no lease dsh can see), and DSH's projection cache
// serves as the checkpoint cache.
const (
	jsonlName     = "jsonl"
	dshSQLiteName = "dsh-sqlite"
	dshHomeName   = "dsh-home"
)

var (
	jsonlScheme = &Scheme{
		Name: jsonlName, Use: SourceUse, Arg: "PATH", TakesCache: true,
		Help:         "DSH's JSONL session files: a file, or a directory of them",
		parse:        requirePath,
		open:         openDSHCorpus,
		importSource: openDSHImportSource,
	}
	dshSQLiteScheme = &Scheme{
		Name: dshSQLiteName, Use: SourceUse, Arg: "PATH", TakesCache: true,
		Help:         "DSH's schema-17 SQLite store",
		parse:        requirePath,
		open:         openDSHCorpus,
		importSource: openDSHImportSource,
	}
	dshHomeScheme = &Scheme{
		Name: dshHomeName, Use: SourceUse, Arg: "[PATH]", TakesCache: true,
		Help:         "a DSH home with its projection cache, default $DSH_HOME or ~/.dsh",
		parse:        parseDSHHome,
		open:         openDSHCorpus,
		importSource: openDSHImportSource,
	}
)

func requirePath(arg string) (string, error) {
	if arg == "" {
		return "", dsherr.New(dsherr.Usage, "empty path")
	}
	return arg, nil
}

func parseDSHHome(arg string) (string, error) {
	if arg != "" {
		return arg, nil
	}
	home, err := DefaultDSHHome()
	if err != nil {
		return "", dsherr.Wrap(dsherr.Usage, err, "no PATH and no default DSH home")
	}
	return home, nil
}

// DefaultDSHHome is where DSH keeps its home: $DSH_HOME, else ~/.dsh.
func DefaultDSHHome() (string, error) {
	if home := os.Getenv("DSH_HOME"); home != "" {
		return home, nil
	}
	user, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(user, ".dsh"), nil
}

// openDSHSource opens one of DSH's corpora as dshformat reads it, a JSONL
// tree focused on Options.Focus.
func openDSHSource(ctx context.Context, spec Spec, o Options) (dshformat.Source, error) {
	return openDSH(ctx, spec, o, func(ctx context.Context, dir string) (dshformat.Source, error) {
		return dshformat.OpenJSONLFocused(ctx, dir, o.Focus)
	})
}

// importChunkSessions is how many sessions of a JSONL tree an import
// holds the headers of at a time (dshformat.OpenJSONLChunked): about 5 MB,
// and a tree of up to that many sessions is walked once, as before.
const importChunkSessions = 1 << 15

// openDSHImportSource opens one of DSH's corpora as an import's source: a
// JSONL tree a chunk at a time (Options.ImportChunk sessions, default
// importChunkSessions), so that the import's memory stays flat as the
// tree grows.
func openDSHImportSource(ctx context.Context, spec Spec, o Options) (dshformat.Source, error) {
	chunk := o.ImportChunk
	if chunk <= 0 {
		chunk = importChunkSessions
	}
	return openDSH(ctx, spec, o, func(ctx context.Context, dir string) (dshformat.Source, error) {
		return dshformat.OpenJSONLChunked(ctx, dir, chunk)
	})
}

// openDSH opens one of DSH's corpora, a JSONL tree (a jsonl: path or a
// DSH home's sessions) with openTree. A store in a format dsh does not
// read is UNSUPPORTED_FORMAT; anything else that stops it from being read
// is STORE_UNAVAILABLE (transfer.SourceError).
func openDSH(ctx context.Context, spec Spec, o Options, openTree func(ctx context.Context, path string) (dshformat.Source, error)) (dshformat.Source, error) {
	var (
		src dshformat.Source
		err error
	)
	switch spec.Scheme {
	case jsonlName:
		src, err = openTree(ctx, spec.Arg)
	case dshSQLiteName:
		src, err = dshformat.OpenDSHSQLite(ctx, spec.Arg)
	case dshHomeName:
		var dir string
		if dir, err = dshformat.HomeSessionsDir(spec.Arg); err == nil {
			src, err = openTree(ctx, dir)
		}
	default:
		return nil, dsherr.New(dsherr.Internal, "%s is not one of DSH's corpora", spec)
	}
	if err != nil {
		return nil, transfer.SourceError(spec.String(), err)
	}
	o.enumerated(spec)
	return src, nil
}

// dshCorpus is one of DSH's corpora with the checkpoint records converted
// from DSH's projection cache (none without one).
type dshCorpus struct {
	*dshformat.Corpus
	*projcache.MemoryRecords
}

// openDSHCorpus reads one of DSH's corpora in place. Files that do not
// yield a session are named in one warning (diagnose reports each); a
// projection cache (Options.CacheFile, or a DSH home's own) that cannot be
// used is a warning too, and so are its record files that are not used (a
// cache is never a verdict): the corpus is then read without them.
func openDSHCorpus(ctx context.Context, spec Spec, o Options) (_ *Corpus, err error) {
	src, err := openDSHSource(ctx, spec, o)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			src.Close()
		}
	}()
	c, err := dshformat.NewCorpus(ctx, src, spec.String())
	if err != nil {
		return nil, transfer.SourceError(spec.String(), err)
	}
	problems := src.Problems()
	if len(problems) > 0 {
		o.warn(fmt.Sprintf("%s: %d session file(s) skipped, first: %v", spec, len(problems), problems[0].Err))
	}
	empty, err := checkEmpty(ctx, spec, c, len(problems), o)
	if err != nil {
		return nil, err
	}
	file, err := readDSHCache(ctx, spec, o)
	if err != nil {
		return nil, err
	}
	dc := dshCorpus{Corpus: c, MemoryRecords: projcache.NewMemoryRecords()}
	if file != nil {
		if _, err := transfer.SeedCheckpoints(ctx, dc, file); err != nil {
			return nil, err
		}
	}
	return &Corpus{
		Reader: dc,
		Empty:  empty,
		lister: func(n int) *subagent.Lister { return subagent.NewCorpusLister(c, file, n) },
		close: func() error {
			if err := src.Close(); err != nil {
				return fmt.Errorf("close %s: %w", spec, err)
			}
			return nil
		},
	}, nil
}

// readDSHCache reads the projection cache a DSH corpus is read with:
// Options.CacheFile, else a DSH home's own; nil when there is none or it
// cannot be used (a warning says why).
func readDSHCache(ctx context.Context, spec Spec, o Options) (*dshformat.CacheFile, error) {
	what := "--source-cache"
	var (
		file  *dshformat.CacheFile
		skips []dshformat.RecordSkip
		err   error
	)
	switch {
	case o.CacheFile != "":
		file, skips, err = dshformat.ReadCache(ctx, o.CacheFile)
	case spec.Scheme == dshHomeName:
		what = spec.String() + " projection cache"
		file, skips, err = dshformat.ReadHomeProjcache(ctx, spec.Arg)
	default:
		return nil, nil
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		o.warn(fmt.Sprintf("%s: %v; reading the source without it", what, err))
		return nil, nil
	}
	if len(skips) > 0 {
		o.warn(fmt.Sprintf("%s: %d record file(s) not used (read as cache misses), first: %s: %s", what, len(skips), skips[0].Path, skips[0].Reason))
	}
	if file != nil && o.Profile.Or() == dshcompat.RC8 {
		// DSH 0.1.0-rc.8 reads only its own aggregate file, never a
		// later release's per-record cache.
		file = file.RC8Only()
	}
	return file, nil
}

// EmptyMessage says that spec holds no session, and for a dsh-home: source
// that the folder is not a DSH home at all when it has neither of a home's
// trees (sessions/, storages/): the usual mistake is the path.
func EmptyMessage(spec Spec) string {
	if spec.Scheme == dshHomeName && !isDir(filepath.Join(spec.Arg, "sessions")) && !isDir(filepath.Join(spec.Arg, "storages")) {
		return fmt.Sprintf("%s is not a DSH home (no sessions/ or storages/ in it) and holds no session", spec)
	}
	return fmt.Sprintf("%s holds no session", spec)
}

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}
