package proctree

import "syscall"

// sysProcAttr puts the root in a process group of its own and has the
// kernel kill it if Switchboard dies without ending it.
//
// The signal is sent when the thread that started the root exits, not the
// process: Go's threads outlive goroutines unless a goroutine that locked
// its thread ends, which Switchboard's never do.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
