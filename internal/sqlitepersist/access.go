package sqlitepersist

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/dsh-project/dsh/internal/dsherr"
)

// The files SQLite opens beside a WAL database.
var walSidecars = []string{"-wal", "-shm"}

// checkWritableFiles refuses, before SQLite opens anything, a store this
// user may not write: SQLite would report it by result code ("unable to
// open database file (14)", "attempt to write a readonly database (1544)")
// while reading the schema, which names neither the file nor the cause. The
// database and its -wal and -shm must be writable, and where one of those
// does not exist yet, its directory (SQLite creates it there).
func checkWritableFiles(abs string) error {
	if err := openProbe(abs, os.O_RDWR); err != nil {
		return permissionError(err, "database %s is read-only for this user, and this command writes", abs)
	}
	for _, side := range walSidecars {
		p := abs + side
		err := openProbe(p, os.O_RDWR)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if err := dirWritable(filepath.Dir(abs)); err != nil {
				return permissionError(err, "cannot create %s: its directory is read-only for this user", p)
			}
		case err != nil:
			return permissionError(err, "%s is read-only for this user, and this command writes", p)
		}
	}
	return nil
}

// readProblem explains why a read-only open failed when the cause is a
// file this user may not read (the database, or its -wal or -shm, which
// SQLite reports as "unable to open database file (14)"); nil otherwise.
func readProblem(abs string) error {
	for _, p := range []string{abs, abs + "-wal", abs + "-shm"} {
		if err := openProbe(p, os.O_RDONLY); isPermission(err) {
			return permissionError(err, "cannot read %s", p)
		}
	}
	return nil
}

// openProbe opens p with flag and closes it: nothing is created or
// changed.
func openProbe(p string, flag int) error {
	f, err := os.OpenFile(p, flag, 0)
	if err != nil {
		return err
	}
	return f.Close()
}

// permissionError is a permission problem said in words, or nil when err
// is something else (left for SQLite to report as it finds it).
func permissionError(err error, format string, args ...any) error {
	if !isPermission(err) {
		return nil
	}
	e := dsherr.New(dsherr.StoreUnavailable, "permission denied: "+format, args...)
	e.Err = err
	return e
}
