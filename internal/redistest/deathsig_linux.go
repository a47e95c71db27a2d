package redistest

import (
	"os/exec"
	"syscall"
)

// dieWithTheTests has the kernel kill redis-server if the test process dies
// before its cleanup runs.
func dieWithTheTests(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
