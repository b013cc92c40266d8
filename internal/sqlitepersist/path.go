package sqlitepersist

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/boundedfile"
	"github.com/dsh-project/dsh/internal/dsherr"
)

// prepareWritablePath makes sure path can be opened as the store: its parent
// directory exists (created 0700) and is a real directory, and the file
// exists (created empty, 0600, so SQLite never picks the mode) and is a
// regular file. It returns the absolute path.
func prepareWritablePath(path string) (string, error) {
	abs, err := absPath(path)
	if err != nil {
		return "", err
	}
	dir := filepath.Dir(abs)
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return "", dsherr.Wrap(dsherr.StoreUnavailable, err, "create database directory %s", dir)
		}
	}
	if err := checkParentDir(dir); err != nil {
		return "", err
	}
	if _, err := os.Lstat(abs); errors.Is(err, fs.ErrNotExist) {
		f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		switch {
		case err == nil:
			if err := f.Close(); err != nil {
				return "", dsherr.Wrap(dsherr.StoreUnavailable, err, "create database %s", abs)
			}
		case errors.Is(err, fs.ErrExist):
			// Another process created it between the two calls; the
			// checks below apply to whatever it created.
		default:
			return "", dsherr.Wrap(dsherr.StoreUnavailable, err, "create database %s", abs)
		}
	}
	if err := checkDBFile(abs); err != nil {
		return "", err
	}
	return abs, nil
}

// checkReadablePath checks an existing store path without creating anything.
// A missing directory or file is an error wrapping ErrNoDatabase.
func checkReadablePath(path string) (string, error) {
	abs, err := absPath(path)
	if err != nil {
		return "", err
	}
	dir := filepath.Dir(abs)
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return "", noDatabase(abs)
	}
	if err := checkParentDir(dir); err != nil {
		return "", err
	}
	if _, err := os.Lstat(abs); errors.Is(err, fs.ErrNotExist) {
		return "", noDatabase(abs)
	}
	if err := checkDBFile(abs); err != nil {
		return "", err
	}
	return abs, nil
}

func noDatabase(abs string) error {
	return &dsherr.Error{
		Code: dsherr.StoreUnavailable,
		Msg:  "no database at " + abs + " (run dsh init to create it)",
		Err:  backend.ErrNoDatabase,
	}
}

func absPath(path string) (string, error) {
	if path == "" {
		return "", dsherr.New(dsherr.InvalidInput, "database path is empty")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", dsherr.Wrap(dsherr.InvalidInput, err, "database path %q", path)
	}
	return abs, nil
}

// checkParentDir refuses a parent that is a symlink: the directory the store
// lives in must be the one the path names, not somewhere a link points to.
func checkParentDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return dsherr.Wrap(dsherr.StoreUnavailable, err, "database directory %s", dir)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return dsherr.New(dsherr.StoreUnavailable, "database directory %s is a symbolic link; refusing to use it", dir)
	}
	if !fi.IsDir() {
		return dsherr.New(dsherr.StoreUnavailable, "database directory %s is not a directory", dir)
	}
	return nil
}

func checkDBFile(abs string) error {
	fi, err := os.Lstat(abs)
	if err != nil {
		return dsherr.Wrap(dsherr.StoreUnavailable, err, "database %s", abs)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return dsherr.New(dsherr.StoreUnavailable, "database %s is a symbolic link; refusing to open it", abs)
	}
	if !fi.Mode().IsRegular() {
		return dsherr.New(dsherr.StoreUnavailable, "database %s is %s, not a database file", abs, boundedfile.Kind(fi.Mode()))
	}
	return nil
}
