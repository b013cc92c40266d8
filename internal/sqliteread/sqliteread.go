// Package sqliteread decides how to open a SQLite file for reading so that
// nothing is written beside it: not the -shm index, not a new -wal, not a
// modification time. dsh's own store and DSH's schema-17 store are both read
// through it.
//
// SQLite needs a WAL database's -shm index to read it, and a plain read-only
// connection creates the index when it is missing and writes to it when it
// is there. The choice here, by what lies beside the database:
//
//   - an -shm file: mode=ro with readonly_shm=1. SQLite maps the index read
//     only and, where it cannot use it, rebuilds it in private memory from
//     the -wal; committed transactions still in the -wal are read, and a
//     concurrent writer's locks are honoured.
//   - no -shm and a non-empty -wal: refused (ErrWALWithoutIndex). The -wal
//     holds transactions that only an index can expose, and building one
//     means creating the file.
//   - neither (an archived or copied file), or an empty -wal: immutable=1 for
//     a WAL-mode file. Every connection to a WAL database holds its -shm for
//     as long as it is open, so no process has the file open; immutable
//     takes no locks and creates nothing.
//   - a rollback-journal file without an -shm: mode=ro. Its readers create
//     nothing; a hot journal left by a crashed writer fails with
//     SQLITE_READONLY_ROLLBACK, which HotJournal recognises.
package sqliteread

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"

	"modernc.org/sqlite"
)

// ErrWALWithoutIndex: the database's -wal holds data but its -shm is missing.
var ErrWALWithoutIndex = errors.New("write-ahead log without its index")

// walFormat is the value of header bytes 18 and 19 (file format write and
// read versions) of a database in WAL mode.
const walFormat = 2

// Query adds to q the URI parameters that open the database at abs for
// reading without writing anything beside it (see the package comment).
func Query(abs string, q url.Values) error {
	wal, walErr := os.Stat(abs + "-wal")
	_, shmErr := os.Stat(abs + "-shm")
	q.Set("mode", "ro")
	switch {
	case shmErr == nil:
		q.Set("readonly_shm", "1")
	case walErr == nil && wal.Size() > 0:
		return fmt.Errorf("%s-wal holds transactions but its index %s-shm is missing, and reading them would create it; "+
			"open the database once with a command that writes, or copy it together with its -shm: %w", abs, abs, ErrWALWithoutIndex)
	default:
		isWAL, err := walMode(abs)
		if err != nil {
			return err
		}
		if isWAL {
			q.Set("immutable", "1")
		}
	}
	return nil
}

// walMode reports whether the database header says WAL mode. A file too
// short to have a header is left for SQLite to judge.
func walMode(abs string) (bool, error) {
	f, err := os.Open(abs)
	if err != nil {
		return false, err
	}
	defer f.Close()
	var h [20]byte
	if _, err := io.ReadFull(f, h[:]); err != nil {
		return false, nil
	}
	return h[18] == walFormat && h[19] == walFormat, nil
}

// sqliteReadonlyRollback is SQLITE_READONLY_ROLLBACK: a read-only connection
// found a hot journal it may not roll back.
const sqliteReadonlyRollback = 776

// HotJournal reports whether err is SQLite refusing to read a database
// because a crashed writer left a hot rollback journal beside it.
func HotJournal(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code() == sqliteReadonlyRollback
}
