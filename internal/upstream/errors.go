package upstream

import (
	"errors"
	"fmt"
)

// Errors that callers branch on. Every error returned by this package is an
// [*Error] that wraps one of these or the underlying cause.
var (
	// ErrNotConnected means the server has no usable session.
	ErrNotConnected = errors.New("not connected")
	// ErrClosed means the upstream was closed.
	ErrClosed = errors.New("closed")
	// ErrInvalidArguments means the arguments were rejected before anything
	// was sent.
	ErrInvalidArguments = errors.New("invalid arguments")
	// ErrTimeout means the server did not answer within its configured timeout.
	ErrTimeout = errors.New("timed out")
)

// Error is an error from one server and one operation.
type Error struct {
	Server string // the configured server name
	Op     string // what was being done, such as "connect" or `call tool "x"`
	Err    error  // the cause, already redacted
}

func (e *Error) Error() string {
	return fmt.Sprintf("server %q: %s: %v", e.Server, e.Op, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }
