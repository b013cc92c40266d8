// Package transfer moves sessions between DSH's own formats and a dsh store:
// it imports a foreign DSH corpus (JSONL session files or DSH's schema-17
// SQLite store) into a dsh database exactly as found, and exports sessions
// from a dsh database as DSH JSONL files that DSH reads. It knows nothing of
// the CLI.
package transfer

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/dsh-project/dsh/internal/boundedfile"
	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/dshformat"
)

// Kind names a foreign corpus format.
type Kind string

// The formats a Location can name.
const (
	KindJSONL     Kind = "jsonl"      // a JSONL session file or a directory of them
	KindDSHSQLite Kind = "dsh-sqlite" // DSH's schema-17 SQLite store
	// KindDSHHome is a DSH home (~/.dsh): its sessions/ logs read as
	// JSONL, with its storages/ projection cache.
	KindDSHHome Kind = "dsh-home"
)

// Location is a foreign DSH corpus: its format and its path.
type Location struct {
	Kind Kind
	Path string
}

func (l Location) String() string { return string(l.Kind) + ":" + l.Path }

// ParseLocation reads KIND:PATH, KIND being jsonl, dsh-sqlite, dsh-home or
// dsh (another dsh database: a SQLite path or a PostgreSQL URL). A bad
// location is a dsherr USAGE error.
func ParseLocation(s string) (Location, error) {
	kind, path, ok := strings.Cut(s, ":")
	if !ok && Kind(s) != KindDSHHome {
		return Location{}, dsherr.New(dsherr.Usage, "source %q: want jsonl:PATH, dsh-sqlite:PATH, dsh-home:[PATH] or dsh:PATH_OR_URL", s)
	}
	switch Kind(kind) {
	case KindJSONL, KindDSHSQLite, KindDSH:
	case KindDSHHome:
		if path == "" {
			home, err := DefaultDSHHome()
			if err != nil {
				return Location{}, dsherr.Wrap(dsherr.Usage, err, "source %q: no PATH and no default DSH home", s)
			}
			path = home
		}
	default:
		return Location{}, dsherr.New(dsherr.Usage, "source %q: unknown kind %q (want jsonl, dsh-sqlite, dsh-home or dsh)", s, kind)
	}
	if path == "" {
		return Location{}, dsherr.New(dsherr.Usage, "source %q: empty path", s)
	}
	return Location{Kind: Kind(kind), Path: path}, nil
}

// Open opens the corpus read-only. A store in a format dsh does not read is
// a dsherr UNSUPPORTED_FORMAT error; anything else that stops it from being
// read is STORE_UNAVAILABLE.
func (l Location) Open(ctx context.Context) (dshformat.Source, error) {
	var (
		src dshformat.Source
		err error
	)
	switch l.Kind {
	case KindJSONL:
		src, err = dshformat.OpenJSONL(ctx, l.Path)
	case KindDSHSQLite:
		src, err = dshformat.OpenDSHSQLite(ctx, l.Path)
	case KindDSHHome:
		src, err = dshformat.OpenDSHHome(ctx, l.Path)
	case KindDSH:
		// Its backend opens it (the CLI knows them); StoreSource reads it.
		return nil, dsherr.New(dsherr.Internal, "source dsh:…: open the database read-only and read it with StoreSource")
	default:
		return nil, dsherr.New(dsherr.Usage, "source %s: unknown kind %q", l, l.Kind)
	}
	if err != nil {
		return nil, SourceError(l.String(), err)
	}
	return src, nil
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

// Cache reads the projection cache the location carries itself (a DSH
// home's storages/); nil when it has none. Record files dsh cannot use are
// returned as skips: cache misses, never verdicts.
func (l Location) Cache(ctx context.Context) (*dshformat.CacheFile, []dshformat.RecordSkip, error) {
	if l.Kind != KindDSHHome {
		return nil, nil, nil
	}
	return dshformat.ReadHomeProjcache(ctx, l.Path)
}

// SourceError gives an error from reading a foreign corpus its dsherr code:
// UNSUPPORTED_FORMAT for a refused format version, INVALID_INPUT for a path
// that is not a regular file or directory, INVALID_LOG for damaged
// data, NOT_FOUND for an unknown session, STORE_UNAVAILABLE otherwise.
// Cancellation and already coded errors are returned unchanged.
func SourceError(what string, err error) error {
	var refusal *dshformat.UnsupportedVersionError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded), dsherr.CodeOf(err) != "":
		return err
	case errors.As(err, &refusal):
		return dsherr.Wrap(dsherr.UnsupportedFormat, err, "%s", what)
	case errors.Is(err, boundedfile.ErrNotRegular):
		// A FIFO, a device or a directory named as a session file: bad
		// input, refused before anything opened it.
		return dsherr.Wrap(dsherr.InvalidInput, err, "%s", what)
	case errors.Is(err, dshformat.ErrNotFound):
		return dsherr.Wrap(dsherr.NotFound, err, "%s", what)
	case errors.Is(err, dshformat.ErrCorrupt):
		return dsherr.Wrap(dsherr.InvalidLog, err, "%s", what)
	}
	return dsherr.Wrap(dsherr.StoreUnavailable, err, "%s", what)
}
