package switchboard

import (
	"errors"

	"github.com/switchboard-mcp/switchboard/internal/upstream"
)

// Errors that callers branch on with errors.Is.
var (
	// ErrUnknownTool means no connected server exposes a tool by that name.
	ErrUnknownTool = errors.New("unknown tool")
	// ErrUnknownPrompt means no connected server exposes a prompt by that
	// name.
	ErrUnknownPrompt = errors.New("unknown prompt")
	// ErrUnknownResource means no connected server offers that resource URI.
	ErrUnknownResource = errors.New("unknown resource")
	// ErrUnknownServer means no server is configured by that name.
	ErrUnknownServer = errors.New("unknown server")
	// ErrNotSupported means the server does not offer what was asked, such
	// as resource subscriptions.
	ErrNotSupported = upstream.ErrNotSupported
	// ErrNotConnected means the tool's server has no usable session, and an
	// attempt to make one failed.
	ErrNotConnected = upstream.ErrNotConnected
	// ErrReconnecting means the tool's server lost its connection, which is
	// being restored; the call could not wait for it.
	ErrReconnecting = upstream.ErrReconnecting
	// ErrCircuitOpen means the server restarted too often and is left alone
	// (the crash-loop state) until a manual reconnect.
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
)

// ServerError is an error from one server and one operation. Its Err is
// already redacted.
type ServerError = upstream.Error

// AmbiguousError reports a call whose outcome is unknown and which was not
// replayed because its tool is not read-only or idempotent. It wraps
// [ErrAmbiguous].
type AmbiguousError = upstream.AmbiguousError
