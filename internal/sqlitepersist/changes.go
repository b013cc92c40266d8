package sqlitepersist

import (
	"context"
	"errors"
	"time"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/dsherr"
)

// changePollInterval is how often a watch asks SQLite whether the file
// changed. The question (PRAGMA data_version) reads one counter SQLite
// keeps in memory for the connection, refreshed from the WAL index, so
// asking ten times a second costs next to nothing.
const changePollInterval = 100 * time.Millisecond

var _ backend.ChangeNotifier = (*Store)(nil)

// WatchChanges implements backend.ChangeNotifier with PRAGMA data_version
// polled on one connection taken from the pool for the whole watch: SQLite
// changes the value a connection reads whenever another connection, of this
// process or any other, has committed since that connection last read it.
// It reads only, so it works on a read-only store and writes nothing beside
// the file. A store opened immutable or through a private copy (see
// OpenReadOnly) never sees another process's commits and cannot be watched.
func (s *Store) WatchChanges(ctx context.Context, notify func()) error {
	switch {
	case s.tx != nil:
		return errors.New("sqlitepersist: WatchChanges called on a transaction view")
	case s.immutable:
		return dsherr.New(dsherr.StoreUnavailable,
			"cannot watch %s: it has no -shm index beside it, so it was opened immutable and would never see a change; open it once with a writing command (dsh init) first", s.path)
	case s.private != "":
		return dsherr.New(dsherr.StoreUnavailable,
			"cannot watch %s: its -wal holds a commit no index covers, so it is read through a private copy that never changes; run dsh init once, which recovers the log", s.path)
	}
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return s.watchError(ctx, err)
	}
	defer conn.Close()
	version := func() (int64, error) {
		var v int64
		err := conn.QueryRowContext(ctx, "PRAGMA data_version").Scan(&v)
		return v, err
	}
	seen, err := version()
	if err != nil {
		return s.watchError(ctx, err)
	}
	notify()
	tick := time.NewTicker(changePollInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		v, err := version()
		if err != nil {
			return s.watchError(ctx, err)
		}
		if v != seen {
			seen = v
			notify()
		}
	}
}

func (s *Store) watchError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return s.storeError(err, "watch for changes")
}
