//lint:file-ignore SA1019 Switchboard forwards logging for as long as servers and clients use it.

package switchboard

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/config"

	"github.com/switchboard-mcp/switchboard/internal/hooks"
)

func init() {
	hooks.Of = func(m any) hooks.Gateway { return gatewayHooks{m.(*Manager)} }
}

// gatewayHooks are the manager's hooks that only the gateway uses, off the
// public API: see package hooks.
type gatewayHooks struct{ m *Manager }

func (h gatewayHooks) Settle(ctx context.Context) { h.m.settle(ctx) }

func (h gatewayHooks) PeerRootsChanged(p Peer) { h.m.peerRootsChanged(p) }

func (h gatewayHooks) SetLoggingLevel(ctx context.Context, level mcp.LoggingLevel) error {
	return h.m.setLoggingLevel(ctx, level)
}

func (h gatewayHooks) Revision() uint64 { return h.m.view.Load().revision }

func (h gatewayHooks) ToolSearch() config.ToolSearch { return h.m.view.Load().toolSearch }

func (h gatewayHooks) Follow(f func()) (stop func()) {
	return h.m.subs.subscribe(func(ev Event) {
		if ev.Kind == eventRevised {
			f()
		}
	})
}

func (h gatewayHooks) Description(server string) string {
	up := h.m.view.Load().byName[server]
	if up == nil {
		return ""
	}
	return up.Config().Description
}

func (h gatewayHooks) ResourceVisible(ctx context.Context, query any, uri string) bool {
	q, _ := query.(*Query)
	_, err := h.m.resourceServer(ctx, q, "subscribe", uri)
	return err == nil
}

func (h gatewayHooks) AlwaysLoad(server string) bool {
	up := h.m.view.Load().byName[server]
	return up != nil && up.Config().AlwaysLoad
}

func (h gatewayHooks) ResourceServer(uri string) string {
	up, err := h.m.templateServer(hooks.Unfiltered(context.Background()), nil, uri)
	if err != nil || up == nil {
		return ""
	}
	return up.Name()
}

func (h gatewayHooks) AuditPayloads(server string) bool {
	up := h.m.view.Load().byName[server]
	return up != nil && up.Config().AuditPayloads
}
