package mcptest

import (
	"errors"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// WatchExit returns a function that reports whether the process pid, which
// need not be the caller's child, has exited, waiting up to d for it. It
// uses a pidfd, which becomes readable when the process terminates.
func WatchExit(t testing.TB, pid int) func(d time.Duration) bool {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return func(time.Duration) bool { return true }
	}
	if err != nil {
		t.Fatalf("pidfd_open(%d): %v", pid, err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return func(d time.Duration) bool {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		for {
			n, err := unix.Poll(fds, int(d.Milliseconds()))
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return err == nil && n == 1
		}
	}
}
