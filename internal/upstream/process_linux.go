package upstream

import "syscall"

// sysProcAttr puts the child in its own process group, so that it and its
// children can be signalled together, and asks the kernel to kill it if the
// gateway dies without closing it.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
