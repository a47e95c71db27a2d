//go:build unix && !linux

package upstream

import "syscall"

// sysProcAttr puts the child in its own process group, so that it and its
// children can be signalled together.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
