package interop

import (
	"os/exec"
	"syscall"
)

// dieWithTheTests makes cmd die with the test binary, even one that
// panicked or timed out, so that no peer is left listening.
func dieWithTheTests(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
