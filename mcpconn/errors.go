package mcpconn

import (
	"errors"
	"fmt"
)

// Errors that callers branch on with errors.Is. An error from a server is a
// [*ServerError] that wraps one of these, or the underlying cause.
var (
	// ErrNotConnected means the server has no usable session and none is on
	// its way: it failed (it is retried on its schedule), or it was
	// disconnected or disabled.
	ErrNotConnected = errors.New("not connected")
	// ErrReconnecting means the server's connection is being made or
	// restored, and the request could not wait for it.
	ErrReconnecting = errors.New("reconnecting")
	// ErrCircuitOpen means the server crashed too often (the crash-loop
	// state): it is retried every few minutes, or at once on a manual
	// reconnect.
	ErrCircuitOpen = errors.New("circuit open: the server crashed too often")
	// ErrClosed means the manager, or the server, was closed.
	ErrClosed = errors.New("closed")
	// ErrInvalidArguments means the arguments were rejected before anything
	// was sent to the server.
	ErrInvalidArguments = errors.New("invalid arguments")
	// ErrTimeout means the server did not answer within its timeout.
	ErrTimeout = errors.New("timed out")
	// ErrAmbiguous means a call may have run: it was sent, then the
	// connection broke or the time ran out. It is never replayed unless the
	// tool is read-only or idempotent. See [AmbiguousError].
	ErrAmbiguous = errors.New("the call may have run")
	// ErrNotSupported means the server does not offer what was asked, such
	// as resource subscriptions.
	ErrNotSupported = errors.New("not supported by the server")
	// ErrRecursion means the server is a Switchboard that refused to run
	// inside the one that started it: its config starts Switchboard on
	// itself, or too many Switchboards run one inside another (see
	// config.Chain). It would refuse again, so it is not retried until its
	// config changes or a manual reconnect; the error carries what it
	// said, with the fix.
	ErrRecursion = errors.New("refused to run: Switchboard would start itself again; remove this entry, or give that Switchboard a config of its own (--config)")
	// ErrListTooLarge means a server's list of tools, prompts, resources
	// or resource templates went over a limit on its items, its bytes or
	// its pages, and was not taken. See [ListTooLargeError].
	ErrListTooLarge = errors.New("list too large")
)

// ListTooLargeError reports a server's list that went over a limit: the
// rest of it was not fetched, and nothing of it was taken. It wraps
// [ErrListTooLarge]; the [ServerError] that carries it names the server.
type ListTooLargeError struct {
	List  string // "tools", "prompts", "resources" or "resource templates"
	Limit string // what went over: "items", "bytes" or "pages"
	Max   int    // the limit
}

func (e *ListTooLargeError) Error() string {
	return fmt.Sprintf("%v: the %s list is over the limit of %d %s", ErrListTooLarge, e.List, e.Max, e.Limit)
}

func (e *ListTooLargeError) Unwrap() error { return ErrListTooLarge }

// ServerError is an error from one server and one operation. Its Err is
// already redacted.
type ServerError struct {
	Server string // the configured server name
	Op     string // what was being done, such as "connect" or `call tool "x"`
	Err    error  // the cause
}

func (e *ServerError) Error() string {
	return fmt.Sprintf("server %q: %s: %v", e.Server, e.Op, e.Err)
}

func (e *ServerError) Unwrap() error { return e.Err }

// AmbiguousError reports a call whose outcome is unknown: it was delivered,
// then the connection broke or the time ran out. It was not replayed,
// because its tool is not read-only or idempotent, and replaying it could
// run it twice. It wraps [ErrAmbiguous] and the cause.
type AmbiguousError struct {
	Tool string // the tool's name on its server
	Err  error  // what happened after the call was sent
}

func (e *AmbiguousError) Error() string {
	return fmt.Sprintf("%v: tool %q is not marked idempotent or read-only, so it was not retried: %v", ErrAmbiguous, e.Tool, e.Err)
}

func (e *AmbiguousError) Unwrap() []error { return []error{ErrAmbiguous, e.Err} }

// UnavailableError says why a request found its server without a session:
// the server's state and its last failure. It wraps the sentinel of the
// state ([ErrReconnecting] while a connection is on its way,
// [ErrCircuitOpen] in crash-loop, [ErrClosed] once closed, else
// [ErrNotConnected]) and the cause.
type UnavailableError struct {
	State State
	Err   error // the last failure, if any
}

func (e *UnavailableError) Error() string {
	msg := e.State.String()
	if e.State == StateCrashLoop {
		msg += " (" + ErrCircuitOpen.Error() + ")"
	}
	if e.Err != nil {
		// The server is named by the error that carries this one.
		msg += "; last error: " + causeText(e.Err)
	}
	return msg
}

func (e *UnavailableError) Unwrap() []error {
	sentinel := ErrNotConnected
	switch e.State {
	case StateConnecting, StateReconnecting:
		sentinel = ErrReconnecting
	case StateCrashLoop:
		sentinel = ErrCircuitOpen
	case StateClosed:
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
	var e *ServerError
	if errors.As(err, &e) {
		return e.Op + ": " + e.Err.Error()
	}
	return err.Error()
}
