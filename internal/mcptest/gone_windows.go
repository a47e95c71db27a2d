package mcptest

import (
	"errors"
	"fmt"

	"golang.org/x/sys/windows"
)

// Gone returns nil if no process pid exists, and an error that says why
// otherwise: for tests that check that no process outlived what ended it.
func Gone(pid int) error {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if errors.Is(err, windows.ERROR_INVALID_PARAMETER) {
		return nil // no such process
	}
	if err != nil {
		return fmt.Errorf("process %d: %w", pid, err)
	}
	defer windows.CloseHandle(h)
	var code uint32
	if err := windows.GetExitCodeProcess(h, &code); err != nil {
		return fmt.Errorf("process %d: %w", pid, err)
	}
	if code != 259 { // STILL_ACTIVE
		return nil
	}
	return fmt.Errorf("process %d is still running", pid)
}
