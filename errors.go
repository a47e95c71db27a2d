package switchboard

import (
	"errors"

	"github.com/switchboard-mcp/switchboard/internal/oauth"
	"github.com/switchboard-mcp/switchboard/mcpconn"
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
	ErrNotSupported = mcpconn.ErrNotSupported
	// ErrNotConnected means the server has no usable session and none is on
	// its way: it failed (it is retried on its schedule), or it was
	// disconnected or disabled.
	ErrNotConnected = mcpconn.ErrNotConnected
	// ErrReconnecting means the server's connection is being made or
	// restored, and the call could not wait for it.
	ErrReconnecting = mcpconn.ErrReconnecting
	// ErrCircuitOpen means the server crashed too often (the crash-loop
	// state): it is retried every few minutes, or at once on a manual
	// reconnect.
	ErrCircuitOpen = mcpconn.ErrCircuitOpen
	// ErrAmbiguous means a call may have run: it was sent, then the
	// connection broke or the time ran out. It is never replayed unless the
	// tool is read-only or idempotent. See [AmbiguousError].
	ErrAmbiguous = mcpconn.ErrAmbiguous
	// ErrInvalidArguments means the arguments were rejected before anything
	// was sent to the server.
	ErrInvalidArguments = mcpconn.ErrInvalidArguments
	// ErrTimeout means the server did not answer within its timeout.
	ErrTimeout = mcpconn.ErrTimeout
	// ErrClosed means the manager, or the server, was closed.
	ErrClosed = mcpconn.ErrClosed
	// ErrLoginRequired means the server asks for an OAuth login that no
	// stored token answers (the needs-auth state): run `switchboard login
	// NAME`, which stores one where the manager finds it.
	ErrLoginRequired = oauth.ErrLoginRequired
)

// ServerError is an error from one server and one operation; see
// [mcpconn.ServerError].
type ServerError = mcpconn.ServerError

// AmbiguousError reports a call whose outcome is unknown; see
// [mcpconn.AmbiguousError].
type AmbiguousError = mcpconn.AmbiguousError

// UnavailableError says why a request found its server without a session;
// see [mcpconn.UnavailableError].
type UnavailableError = mcpconn.UnavailableError
