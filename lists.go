package switchboard

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/internal/catalog"
)

// Prompt is one exposed prompt: its public name (made as tools' are), the
// server that owns it, its original name there, and a copy of its
// definition whose Name is the public name.
type Prompt = catalog.Prompt

// Resource is one exposed resource, with the server that serves it.
// Resources keep their URIs: on a URI that two servers offer, the one
// configured first serves it, and the other's status reports the collision.
type Resource = catalog.Resource

// ResourceTemplate is one exposed resource template, with its server.
type ResourceTemplate = catalog.ResourceTemplate

// Prompts returns every exposed prompt, sorted by public name, as copies.
func (m *Manager) Prompts() []Prompt { return m.views().prompts.Prompts() }

// GetPrompt gets the prompt with the given public name from the server that
// owns it.
func (m *Manager) GetPrompt(ctx context.Context, name string, args map[string]string) (*mcp.GetPromptResult, error) {
	if err := m.open("get prompt", name); err != nil {
		return nil, err
	}
	server, original, ok := m.views().prompts.Route(name)
	if !ok {
		return nil, fmt.Errorf("get prompt %q: %w", name, ErrUnknownPrompt)
	}
	up := m.upstreamOf(m.byName[server])
	if up == nil {
		return nil, fmt.Errorf("get prompt %q: %w", name, ErrUnknownPrompt)
	}
	return up.GetPrompt(ctx, original, args)
}

// Resources returns every exposed resource, sorted by URI, as copies.
func (m *Manager) Resources() []Resource { return m.views().resources.Resources() }

// ResourceTemplates returns every exposed resource template, in configured
// order of their servers, as copies.
func (m *Manager) ResourceTemplates() []ResourceTemplate { return m.views().resources.Templates() }

// ReadResource reads uri from the server that serves it: the one that lists
// it (the first configured, on a collision), else the first whose template
// matches it.
func (m *Manager) ReadResource(ctx context.Context, uri string) (*mcp.ReadResourceResult, error) {
	return routeResource(m, "read resource", uri, func(up resourceServer) (*mcp.ReadResourceResult, error) {
		return up.ReadResource(ctx, uri)
	})
}

// SubscribeResource subscribes to updates of uri, which arrive as
// EventResourceUpdated. The subscription is kept across reconnects.
func (m *Manager) SubscribeResource(ctx context.Context, uri string) error {
	_, err := routeResource(m, "subscribe", uri, func(up resourceServer) (struct{}, error) {
		return struct{}{}, up.Subscribe(ctx, uri)
	})
	return err
}

// UnsubscribeResource ends a subscription made with SubscribeResource.
func (m *Manager) UnsubscribeResource(ctx context.Context, uri string) error {
	_, err := routeResource(m, "unsubscribe", uri, func(up resourceServer) (struct{}, error) {
		return struct{}{}, up.Unsubscribe(ctx, uri)
	})
	return err
}

// resourceServer is what routeResource hands on: an upstream's resource
// methods.
type resourceServer interface {
	ReadResource(ctx context.Context, uri string) (*mcp.ReadResourceResult, error)
	Subscribe(ctx context.Context, uri string) error
	Unsubscribe(ctx context.Context, uri string) error
}

// routeResource runs do on the upstream that serves uri.
func routeResource[T any](m *Manager, op, uri string, do func(resourceServer) (T, error)) (T, error) {
	var zero T
	if err := m.open(op, uri); err != nil {
		return zero, err
	}
	server, ok := m.views().resources.Route(uri)
	if !ok {
		return zero, fmt.Errorf("%s %q: %w", op, uri, ErrUnknownResource)
	}
	up := m.upstreamOf(m.byName[server])
	if up == nil {
		return zero, fmt.Errorf("%s %q: %w", op, uri, ErrUnknownResource)
	}
	return do(up)
}
