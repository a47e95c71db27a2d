package switchboard

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

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
	ErrListTooLarge     = mcpconn.ErrListTooLarge     // see [mcpconn.ErrListTooLarge]
	// ErrLoginRequired means the server asks for an OAuth login that no
	// stored token answers (the needs-auth state): run `switchboard login
	// NAME`, which stores one where the manager finds it.
	ErrLoginRequired = oauth.ErrLoginRequired
)

// UnknownToolError is the error of a call of a tool that no server exposes
// to the caller by that name. It wraps [ErrUnknownTool], and its text
// suggests the names the caller may have meant: `unknown tool
// "read_text_file"; did you mean "filesystem__read_text_file"?`.
type UnknownToolError struct {
	// Name is the name the caller gave.
	Name string
	// Suggestions are the public names of tools the caller may see that it
	// may have meant, best first, at most 3: the tool of that name on its
	// server (the prefix left out), the name in another case or with other
	// joiners (filesystem_read_text_file), the name after a wrong prefix, or
	// else near misses. Nil when nothing comes close.
	Suggestions []string
}

func (e *UnknownToolError) Error() string {
	return fmt.Sprintf("%v %q", ErrUnknownTool, e.Name) + e.didYouMean()
}

// didYouMean is what the error's text says of its suggestions, if any:
// `; did you mean "a"?` or `; did you mean one of "a", "b"?`.
func (e *UnknownToolError) didYouMean() string {
	switch len(e.Suggestions) {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf("; did you mean %q?", e.Suggestions[0])
	}
	quoted := make([]string, len(e.Suggestions))
	for i, name := range e.Suggestions {
		quoted[i] = strconv.Quote(name)
	}
	return "; did you mean one of " + strings.Join(quoted, ", ") + "?"
}

func (e *UnknownToolError) Unwrap() error { return ErrUnknownTool }

// ServerError is an error from one server and one operation; see
// [mcpconn.ServerError].
type ServerError = mcpconn.ServerError

// AmbiguousError reports a call whose outcome is unknown; see
// [mcpconn.AmbiguousError].
type AmbiguousError = mcpconn.AmbiguousError

// UnavailableError says why a request found its server without a session;
// see [mcpconn.UnavailableError].
type UnavailableError = mcpconn.UnavailableError

// ListTooLargeError reports a server's list that went over a limit; see
// [mcpconn.ListTooLargeError].
type ListTooLargeError = mcpconn.ListTooLargeError
