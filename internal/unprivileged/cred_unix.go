//go:build unix

package unprivileged

import (
	"io/fs"
	"os/exec"
	"syscall"
)

const credentialsSupported = true

// setCredential makes cmd start as uid/gid with no supplementary groups, so
// that none of root's groups come along.
func setCredential(cmd *exec.Cmd, uid, gid uint32) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uid, Gid: gid, Groups: []uint32{}}
}

func owner(fi fs.FileInfo) (uid, gid uint32, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return st.Uid, st.Gid, true
}
