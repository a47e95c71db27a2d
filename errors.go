package switchboard

import (
	"errors"

	"github.com/switchboard-mcp/switchboard/internal/upstream"
)

// Errors that callers branch on with errors.Is.
var (
	// ErrUnknownTool means no connected server exposes a tool by that name.
	ErrUnknownTool = errors.New("unknown tool")
	// ErrNotConnected means the tool's server has no usable session.
	ErrNotConnected = upstream.ErrNotConnected
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
