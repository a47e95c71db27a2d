//go:build unix

package mcptest

import (
	"errors"
	"fmt"
	"syscall"
)

// Gone returns nil if no process pid exists, and an error that says why
// otherwise: for tests that check that no process outlived what ended it.
func Gone(pid int) error {
	err := syscall.Kill(pid, 0)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return fmt.Errorf("process %d is still there (kill 0: %v)", pid, err)
}
