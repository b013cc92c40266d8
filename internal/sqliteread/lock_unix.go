//go:build unix

package sqliteread

import (
	"fmt"
	"os"
	"syscall"
)

// lockHeld reports whether another process holds a lock on byte off of f
// that a write lock would conflict with. F_GETLK only asks: it takes no lock
// and needs no write access.
func lockHeld(f *os.File, off int64) (bool, error) {
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: 0, Start: off, Len: 1}
	if err := syscall.FcntlFlock(f.Fd(), syscall.F_GETLK, &lk); err != nil {
		return false, fmt.Errorf("query the locks on %s: %w", f.Name(), err)
	}
	return lk.Type != syscall.F_UNLCK, nil
}
