package switchboard

import (
	"errors"

	"github.com/switchboard-mcp/switchboard/internal/oauth"
	"github.com/switchboard-mcp/switchboard/mcpconn"
)

// Errors that callers branch on with errors.Is. Those of a server and its
// connection are mcpconn's, documented there.
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

	// A server's and its connection's: mcpconn's, under the same names.
	ErrNotSupported     = mcpconn.ErrNotSupported     // see [mcpconn.ErrNotSupported]
	ErrNotConnected     = mcpconn.ErrNotConnected     // see [mcpconn.ErrNotConnected]
	ErrReconnecting     = mcpconn.ErrReconnecting     // see [mcpconn.ErrReconnecting]
	ErrCircuitOpen      = mcpconn.ErrCircuitOpen      // see [mcpconn.ErrCircuitOpen]
	ErrAmbiguous        = mcpconn.ErrAmbiguous        // see [mcpconn.ErrAmbiguous]
	ErrInvalidArguments = mcpconn.ErrInvalidArguments // see [mcpconn.ErrInvalidArguments]
	ErrTimeout          = mcpconn.ErrTimeout          // see [mcpconn.ErrTimeout]
	ErrClosed           = mcpconn.ErrClosed           // see [mcpconn.ErrClosed]
	ErrRecursion        = mcpconn.ErrRecursion        // see [mcpconn.ErrRecursion]
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
