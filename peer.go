//lint:file-ignore SA1019 Switchboard forwards sampling, elicitation and logging for as long as servers and clients use them.

package switchboard

import (
	"context"
	"errors"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/internal/upstream"
	"github.com/switchboard-mcp/switchboard/mcpconn"
)

// A Peer is the MCP client on whose behalf the host makes a request; see
// [mcpconn.Peer].
type Peer = mcpconn.Peer

// WithPeer returns ctx carrying p: the calls, prompt gets, resource reads
// and completions made with it are made on p's behalf.
func WithPeer(ctx context.Context, p Peer) context.Context {
	return upstream.WithPeer(ctx, p)
}

// setLoggingLevel asks every server that logs to send its log messages at
// level and above, now and after every reconnect: the gateway's hook, for
// the level its clients ask for (a host sets Options.LoggingLevel).
func (m *Manager) setLoggingLevel(ctx context.Context, level mcp.LoggingLevel) error {
	if err := m.open("set logging level", string(level)); err != nil {
		return err
	}
	var errs []error
	for _, up := range slices.Concat(m.view.Load().servers, m.perSession.all()) {
		if err := up.SetLoggingLevel(ctx, level); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
