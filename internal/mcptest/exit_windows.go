package mcptest

import (
	"errors"
	"testing"
	"time"

	"golang.org/x/sys/windows"
)

// WatchExit returns a function that reports whether the process pid, which
// need not be the caller's child, has exited, waiting up to d for it. It
// waits on a handle of the process, which is signalled when it exits.
func WatchExit(t testing.TB, pid int) func(d time.Duration) bool {
	t.Helper()
	h, err := windows.OpenProcess(windows.SYNCHRONIZE, false, uint32(pid))
	if errors.Is(err, windows.ERROR_INVALID_PARAMETER) {
		return func(time.Duration) bool { return true } // gone already
	}
	if err != nil {
		t.Fatalf("open process %d: %v", pid, err)
	}
	t.Cleanup(func() { windows.CloseHandle(h) })
	return func(d time.Duration) bool {
		ev, err := windows.WaitForSingleObject(h, uint32(d.Milliseconds()))
		return err == nil && ev == windows.WAIT_OBJECT_0
	}
}
