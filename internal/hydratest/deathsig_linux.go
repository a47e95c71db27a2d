package hydratest

import (
	"os/exec"
	"syscall"
)

// dieWithTheTests has the kernel kill Hydra if the test process dies
// before its cleanup runs.
func dieWithTheTests(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
