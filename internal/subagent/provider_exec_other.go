//go:build !unix

package subagent

import "os/exec"

// isolateProcessGroup does nothing where there are no process groups.
func isolateProcessGroup(*exec.Cmd) {}

// killProcessGroup kills the shell itself.
func killProcessGroup(cmd *exec.Cmd) error { return cmd.Process.Kill() }

// shellArgs runs command with /bin/sh -c.
func shellArgs(command string) []string { return []string{"/bin/sh", "-c", command} }
