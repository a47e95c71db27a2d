package switchboard

import (
	"errors"

	"github.com/switchboard-mcp/switchboard/internal/oauth"
	"github.com/switchboard-mcp/switchboard/internal/upstream"
)

// Errors that callers branch on with errors.Is.
var (
	// ErrUnknownTool means no server exposes a tool by that name to the
	// caller.
	ErrUnknownTool = errors.New("unknown tool")
	// ErrUnknownPrompt means no server exposes a prompt by that name to the
	// caller.
	ErrUnknownPrompt = errors.New("unknown prompt")
	// ErrUnknownResource means no server offers that resource URI to the
	// caller.
	ErrUnknownResource = errors.New("unknown resource")
	// ErrUnknownServer means no server is configured by that name.
	ErrUnknownServer = errors.New("unknown server")
	// ErrNotSupported means the server does not offer what was asked, such
	// as resource subscriptions.
	ErrNotSupported = upstream.ErrNotSupported
	// ErrNotConnected means the server has no usable session and none is on
	// its way: it failed (it is retried on its schedule), or it was
	// disconnected or disabled.
	ErrNotConnected = upstream.ErrNotConnected
	// ErrReconnecting means the server's connection is being made or
	// restored, and the call could not wait for it.
	ErrReconnecting = upstream.ErrReconnecting
	// ErrCircuitOpen means the server crashed too often (the crash-loop
	// state): it is retried every few minutes, or at once on a manual
	// reconnect.
	ErrCircuitOpen = upstream.ErrCircuitOpen
	// ErrAmbiguous means a call may have run: it was sent, then the
	// connection broke or the time ran out. It is never replayed unless the
	// tool is read-only or idempotent. See [AmbiguousError].
	ErrAmbiguous = upstream.ErrAmbiguous
	// ErrInvalidArguments means the arguments were rejected before anything
	// was sent to the server.
	ErrInvalidArguments = upstream.ErrInvalidArguments
	// ErrTimeout means the server did not answer within its timeout.
	ErrTimeout = upstream.ErrTimeout
	// ErrClosed means the manager, or the server, was closed.
	ErrClosed = upstream.ErrClosed
	// ErrLoginRequired means the server asks for an OAuth login that no
	// stored token answers (the needs-auth state): run `switchboard login
	// NAME`, which stores one where the manager finds it.
	ErrLoginRequired = oauth.ErrLoginRequired
)

// ServerError is an error from one server and one operation. Its Err is
// already redacted.
type ServerError struct {
	Server string // the configured server name
	Op     string // what was being done, such as "connect" or `call tool "x"`
	Err    error  // the cause
}

func (e *ServerError) Error() string {
	return (&upstream.Error{Server: e.Server, Op: e.Op, Err: e.Err}).Error()
}

func (e *ServerError) Unwrap() error { return e.Err }

// AmbiguousError reports a call whose outcome is unknown: it was delivered,
// then the connection broke or the time ran out. It was not replayed,
// because its tool is not read-only or idempotent. It wraps [ErrAmbiguous]
// and the cause.
type AmbiguousError struct {
	Tool string // the tool's name on its server
	Err  error  // what happened after the call was sent
}

func (e *AmbiguousError) Error() string {
	return (&upstream.AmbiguousError{Tool: e.Tool, Err: e.Err}).Error()
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

	from error // the upstream's error this one was made of, which words it
}

func (e *UnavailableError) Error() string {
	if e.from != nil {
		return e.from.Error()
	}
	if e.Err == nil {
		return e.State.String()
	}
	// The server is named by the error that carries this one.
	return e.State.String() + "; last error: " + causeText(e.Err)
}

// causeText is the message of err without the server's name, for a text
// that names the server already.
func causeText(err error) string {
	var cause *ServerError
	if errors.As(err, &cause) {
		return cause.Op + ": " + cause.Err.Error()
	}
	return err.Error()
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

// publicError turns the error types of the upstream package into this
// package's, down the chain as far as they go.
func publicError(err error) error {
	switch e := err.(type) {
	case *upstream.Error:
		return &ServerError{Server: e.Server, Op: e.Op, Err: publicError(e.Err)}
	case *upstream.AmbiguousError:
		return &AmbiguousError{Tool: e.Tool, Err: publicError(e.Err)}
	case *upstream.UnavailableError:
		return &UnavailableError{State: stateOf(e.State), Err: publicError(e.Err), from: e}
	}
	return err
}
