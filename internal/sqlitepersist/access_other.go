//go:build !unix

package sqlitepersist

import (
	"errors"
	"io/fs"
)

// dirWritable cannot ask without access(2); SQLite reports the problem.
func dirWritable(string) error { return nil }

// isPermission reports a refusal by permissions.
func isPermission(err error) bool { return errors.Is(err, fs.ErrPermission) }
