package upstream

import (
	"errors"

	"golang.org/x/sys/windows"
)

// brokenPipe reports whether err is a write to a pipe whose reader is gone:
// on Windows, ERROR_NO_DATA ("the pipe is being closed"). ERROR_BROKEN_PIPE
// is left out: reads fail with it too, and a read's failure does not prove
// that a request was not written.
func brokenPipe(err error) bool { return errors.Is(err, windows.ERROR_NO_DATA) }
