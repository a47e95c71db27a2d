package upstream

import (
	"errors"

	"github.com/switchboard-mcp/switchboard/mcpconn"
)

// Errors that callers branch on. Every error returned by this package is an
// [*Error] that wraps one of these, or the underlying cause. All but
// ErrKilled are mcpconn's.
var (
	ErrNotConnected     = mcpconn.ErrNotConnected
	ErrReconnecting     = mcpconn.ErrReconnecting
	ErrCircuitOpen      = mcpconn.ErrCircuitOpen
	ErrClosed           = mcpconn.ErrClosed
	ErrInvalidArguments = mcpconn.ErrInvalidArguments
	ErrTimeout          = mcpconn.ErrTimeout
	ErrAmbiguous        = mcpconn.ErrAmbiguous
	ErrNotSupported     = mcpconn.ErrNotSupported
	ErrRecursion        = mcpconn.ErrRecursion
	ErrListTooLarge     = mcpconn.ErrListTooLarge
	// ErrKilled means a stdio server ignored its stdin's close and SIGTERM
	// and was killed: it is gone, but was not stopped gracefully.
	ErrKilled = errors.New("killed")
)

// Error is an error from one server and one operation.
type Error = mcpconn.ServerError

// AmbiguousError reports a call whose outcome is unknown; see
// [mcpconn.AmbiguousError].
type AmbiguousError = mcpconn.AmbiguousError

// ListTooLargeError reports a server's list over a limit; see
// [mcpconn.ListTooLargeError].
type ListTooLargeError = mcpconn.ListTooLargeError

// UnavailableError says why a request found no session; see
// [mcpconn.UnavailableError].
type UnavailableError = mcpconn.UnavailableError
