//go:build unix && !linux

package subagent

import "syscall"

// dieWithParent does nothing: only Linux can tie a child's life to its
// parent's. A crashed dsh leaves the command to finish on its own.
func dieWithParent(*syscall.SysProcAttr) {}
