package subagent

import "syscall"

// dieWithParent has the kernel signal the guard shell (see shellArgs) when
// dsh itself dies, even by SIGKILL, when dsh cannot clean up. The signal is
// SIGTERM, not SIGKILL: the guard traps it and kills the whole process
// group, so nothing the command started outlives a crashed holder.
func dieWithParent(attr *syscall.SysProcAttr) { attr.Pdeathsig = syscall.SIGTERM }

// guardScript runs the command ($1) as /bin/sh -c would, in a child shell,
// and waits for it. The parent-death SIGTERM kills the process group:
// the kernel signals only the direct child of dsh, and a command such as
// `sleep 60; echo done` runs sleep as a grandchild that would otherwise be
// left running. A background job's stdin is /dev/null in a non-interactive
// shell, so the message is passed on through fd 3; the guard's own stderr
// goes to /dev/null once the command has its own (a shell reports a job a signal
// ended, which is not the command's output). A command killed by a
// signal is reported as killed by it (the guard re-raises it on itself),
// as a shell reports a status above 128.
const guardScript = `trap 'kill -KILL 0' TERM
exec 3<&0
/bin/sh -c "$1" <&3 3<&- &
exec 3<&- 2>/dev/null
wait "$!"
s=$?
if [ "$s" -gt 128 ]; then
	trap - TERM
	kill -s "$(kill -l "$s")" "$$"
fi
exit "$s"`

// shellArgs is the argv that runs command under the guard.
func shellArgs(command string) []string {
	return []string{"/bin/sh", "-c", guardScript, "dsh-exec-guard", command}
}
