//lint:file-ignore SA1019 Switchboard forwards sampling, elicitation and logging for as long as servers and clients use them.

package mcpconn

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A Peer is the MCP client on whose behalf the host makes a request: in the
// gateway, one downstream session. What a server sends while it serves the
// request goes to the peer, and the peer's answer goes back to the server:
// sampling and elicitation requests, log messages, and progress, with the
// peer's own progress token. An *mcp.ServerSession has every method but
// Session and Done.
//
// Over Streamable HTTP a server sends these on the response stream of the
// request that caused them, so they reach exactly its peer. Over stdio
// nothing on the wire says which request a message belongs to: it goes to
// the peer only while the requests in flight to that server come from a
// single session; otherwise a request is refused with a JSON-RPC error, and
// a log message goes to the host's logger.
type Peer interface {
	// Session identifies the peer's session: the requests of one session
	// count as one client. It must be comparable.
	Session() any
	// Done is closed when the peer's session ends; nil if that cannot be
	// known. A server with processPerSession runs one process per peer
	// session whose end can be known, until it ends.
	Done() <-chan struct{}
	CreateMessage(context.Context, *mcp.CreateMessageWithToolsParams) (*mcp.CreateMessageWithToolsResult, error)
	Elicit(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error)
	NotifyElicitationComplete(context.Context, *mcp.ElicitationCompleteParams) error
	Log(context.Context, *mcp.LoggingMessageParams) error
	NotifyProgress(context.Context, *mcp.ProgressNotificationParams) error
	ListRoots(context.Context, *mcp.ListRootsParams) (*mcp.ListRootsResult, error)
}
