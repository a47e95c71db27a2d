//go:build !windows

package upstream

import (
	"errors"
	"syscall"
)

// brokenPipe reports whether err is a write to a pipe whose reader is gone.
// Only writes fail with EPIPE.
func brokenPipe(err error) bool { return errors.Is(err, syscall.EPIPE) }
