//go:build unix

package subagent

import (
	"errors"
	"os/exec"
	"syscall"
)

// isolateProcessGroup starts the command as the leader of a new process
// group: a terminal's SIGINT reaches dsh alone, and dsh can kill the
// command with everything it started.
func isolateProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	dieWithParent(cmd.SysProcAttr)
}

// killProcessGroup sends SIGKILL to the command's process group. A group
// that is already gone is not an error.
func killProcessGroup(cmd *exec.Cmd) error {
	err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}
