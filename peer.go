//lint:file-ignore SA1019 Switchboard forwards sampling, elicitation and logging for as long as servers and clients use them.

package switchboard

import (
	"context"
	"errors"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/internal/upstream"
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
// a log message goes to the manager's logger.
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

// WithPeer returns ctx carrying p: the calls, prompt gets, resource reads
// and completions made with it are made on p's behalf.
func WithPeer(ctx context.Context, p Peer) context.Context {
	return upstream.WithPeer(ctx, p)
}

// SetLoggingLevel asks every server that logs to send its log messages at
// level and above, now and after every reconnect. They reach the peer
// whose request caused them (see [Peer]), else the manager's logger.
func (m *Manager) SetLoggingLevel(ctx context.Context, level mcp.LoggingLevel) error {
	if err := m.open("set logging level", string(level)); err != nil {
		return err
	}
	var errs []error
	for _, up := range slices.Concat(m.view.Load().servers, m.perSession.all()) {
		if err := up.SetLoggingLevel(ctx, level); err != nil {
			errs = append(errs, publicError(err))
		}
	}
	return errors.Join(errs...)
}
