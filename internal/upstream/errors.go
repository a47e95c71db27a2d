package upstream

import (
	"errors"
	"fmt"
)

// Errors that callers branch on. Every error returned by this package is an
// [*Error] that wraps one of these, or the underlying cause.
var (
	// ErrNotConnected means the server has no usable session and none is
	// on its way: it failed, or it was disconnected or disabled.
	ErrNotConnected = errors.New("not connected")
	// ErrReconnecting means the server's connection is being made or
	// restored, and the request could not wait for it.
	ErrReconnecting = errors.New("reconnecting")
	// ErrCircuitOpen means the server crashed too often (the crash-loop
	// state): it is retried only every few minutes, or on a manual
	// reconnect.
	ErrCircuitOpen = errors.New("circuit open: the server crashed too often")
	// ErrClosed means the upstream was closed.
	ErrClosed = errors.New("closed")
	// ErrInvalidArguments means the arguments were rejected before anything
	// was sent.
	ErrInvalidArguments = errors.New("invalid arguments")
	// ErrTimeout means the server did not answer within its configured
	// timeout.
	ErrTimeout = errors.New("timed out")
	// ErrKilled means a stdio server ignored its stdin's close and SIGTERM
	// and was killed: it is gone, but was not stopped gracefully.
	ErrKilled = errors.New("killed")
	// ErrAmbiguous means a call may or may not have run: it was sent, and
	// the connection broke or the time ran out before the answer came. It is
	// never replayed unless the tool is read-only or idempotent. See
	// [AmbiguousError].
	ErrAmbiguous = errors.New("the call may have run")
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

// AmbiguousError reports a call whose outcome is unknown: it was delivered,
// and then the connection broke or the time ran out. Replaying it could run
// it twice, so it was not replayed. It wraps [ErrAmbiguous] and the cause.
type AmbiguousError struct {
	Tool string // the tool's name on its server
	Err  error  // what happened after the call was sent
}

func (e *AmbiguousError) Error() string {
	return fmt.Sprintf("%v: tool %q is not marked idempotent or read-only, so it was not retried: %v", ErrAmbiguous, e.Tool, e.Err)
}

func (e *AmbiguousError) Unwrap() []error { return []error{ErrAmbiguous, e.Err} }

// UnavailableError says why a request found no session: the server's state
// and its last failure. It wraps the sentinel of the state
// ([ErrReconnecting] while a connection is on its way, [ErrCircuitOpen] in
// crash-loop, [ErrClosed] when closed, else [ErrNotConnected]) and the
// cause.
type UnavailableError struct {
	State State
	Err   error // the last failure, if any
}

func (e *UnavailableError) Error() string {
	msg := e.State.String()
	if e.State == CrashLoop {
		msg += " (" + ErrCircuitOpen.Error() + ")"
	}
	if e.Err != nil {
		msg += "; last error: " + causeText(e.Err)
	}
	return msg
}

func (e *UnavailableError) Unwrap() []error {
	sentinel := ErrNotConnected
	switch e.State {
	case Connecting, Reconnecting:
		sentinel = ErrReconnecting
	case CrashLoop:
		sentinel = ErrCircuitOpen
	case Closed:
		sentinel = ErrClosed
	}
	if e.Err == nil {
		return []error{sentinel}
	}
	return []error{sentinel, e.Err}
}

// causeText is the message of a failure without the server's name, which
// the error that carries it already gives.
func causeText(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Op + ": " + e.Err.Error()
	}
	return err.Error()
}
