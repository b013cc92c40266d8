//go:build unix && !linux

package subagent

import "syscall"

// dieWithParent does nothing: only Linux can tie a child's life to its
// parent's. A crashed dsh leaves the command to finish on its own.
func dieWithParent(*syscall.SysProcAttr) {}

// shellArgs runs command with /bin/sh -c; without a parent-death signal a
// guard shell would have nothing to react to.
func shellArgs(command string) []string { return []string{"/bin/sh", "-c", command} }
