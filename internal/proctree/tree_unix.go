//go:build unix

package proctree

import (
	"os/exec"
	"syscall"
)

const interruptName = "SIGTERM"

// A sysTree is the process group that the root leads: its ID is the
// root's pid (Setpgid).
type sysTree struct{ pgid int }

func adopt(cmd *exec.Cmd) (*sysTree, error) { return &sysTree{pgid: cmd.Process.Pid}, nil }

func (t *sysTree) interrupt() { syscall.Kill(-t.pgid, syscall.SIGTERM) }
func (t *sysTree) kill()      { syscall.Kill(-t.pgid, syscall.SIGKILL) }
func (t *sysTree) release()   {}
