package subagent

import "syscall"

// dieWithParent has the kernel kill the shell when dsh itself dies (even by
// SIGKILL, when dsh cannot clean up), so a crashed holder leaves no command
// running.
func dieWithParent(attr *syscall.SysProcAttr) { attr.Pdeathsig = syscall.SIGKILL }
