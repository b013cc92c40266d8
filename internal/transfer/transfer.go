// Package transfer moves sessions between DSH's own formats and a dsh store:
// it imports a foreign DSH corpus (JSONL session files or DSH's schema-17
// SQLite store) into a dsh database exactly as found, and exports sessions
// from a dsh database as DSH JSONL files that DSH reads. It knows nothing of
// the CLI.
package transfer

import (
	"context"
	"errors"

	"github.com/dsh-project/dsh/internal/boundedfile"
	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/dshformat"
)

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
