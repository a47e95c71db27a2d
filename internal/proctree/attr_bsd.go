//go:build unix && !linux

package proctree

import "syscall"

// sysProcAttr puts the root in a process group of its own. These systems
// have no parent-death signal: a tree outlives a Switchboard that is
// killed with SIGKILL, though a stdio server whose stdin closes with it
// should exit by itself.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
