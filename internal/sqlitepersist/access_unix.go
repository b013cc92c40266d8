//go:build unix

package sqlitepersist

import (
	"errors"
	"io/fs"

	"golang.org/x/sys/unix"
)

// dirWritable asks the kernel whether this user may create files in dir.
func dirWritable(dir string) error {
	if err := unix.Access(dir, unix.W_OK|unix.X_OK); err != nil {
		return &fs.PathError{Op: "access", Path: dir, Err: err}
	}
	return nil
}

// isPermission reports a refusal by permissions, or by a read-only file
// system.
func isPermission(err error) bool {
	return errors.Is(err, fs.ErrPermission) || errors.Is(err, unix.EROFS)
}
