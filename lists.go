package switchboard

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/internal/catalog"
	"github.com/switchboard-mcp/switchboard/internal/hooks"
	"github.com/switchboard-mcp/switchboard/internal/upstream"
)

// Prompt is one exposed prompt.
type Prompt struct {
	// Name is the public name, made as tools' are.
	Name string
	// Server is the configured name of the server that owns the prompt.
	Server string
	// Original is the prompt's name on its server; gets use it.
	Original string
	// Prompt is a copy of the server's definition whose Name is the public
	// name.
	Prompt *mcp.Prompt
}

// Resource is one exposed resource, with the server that serves it.
// Resources keep their URIs: on a URI that two servers offer, the one
// configured first serves it, and the other's status reports the collision.
type Resource struct {
	Server   string
	Resource *mcp.Resource // a copy
}

// ResourceTemplate is one exposed resource template, with its server.
type ResourceTemplate struct {
	Server   string
	Template *mcp.ResourceTemplate // a copy
}

// Prompts returns every prompt exposed to q (which may be nil), sorted by
// public name, as copies.
func (m *Manager) Prompts(ctx context.Context, q *Query) []Prompt {
	prompts := m.view.Load().prompts.Prompts()
	out := make([]Prompt, len(prompts))
	for i, p := range prompts {
		out[i] = Prompt(p)
	}
	return m.keepPrompts(ctx, q, out)
}

// keepPrompts is Options.PromptFilter for q.
func (m *Manager) keepPrompts(ctx context.Context, q *Query, prompts []Prompt) []Prompt {
	f := m.opts.PromptFilter
	if f == nil {
		return prompts
	}
	query := q.value()
	return catalog.Filter(ctx, prompts, "prompt", func(p Prompt) (string, string) { return p.Server, p.Original },
		func(ctx context.Context, p Prompt) (bool, error) {
			if hooks.IsUnfiltered(ctx) {
				return true, nil
			}
			c := catalog.ClonePrompt(p.Prompt)
			c.Name = p.Original
			return f(ctx, FilterContext{Query: query, Server: p.Server, Name: p.Name}, c)
		}, m.opts.Logger)
}

// GetPrompt gets the prompt params.Name, a public name, for q (which may be
// nil), from the server that owns it. A prompt that Options.PromptFilter
// hides from q is refused, as unknown.
func (m *Manager) GetPrompt(ctx context.Context, q *Query, params *mcp.GetPromptParams) (*mcp.GetPromptResult, error) {
	up, original, err := m.promptServer(ctx, q, "get prompt", params.Name)
	if err != nil {
		return nil, err
	}
	if err = hooks.Admit(ctx, up.Name()); err == nil { // before serverFor, which may start a process
		up, err = m.serverFor(ctx, up)
	}
	if err != nil {
		return nil, err
	}
	get := *params
	get.Name = original
	res, err := up.GetPrompt(ctx, &get)
	return res, err
}

// promptServer returns the upstream that serves the prompt name, a public
// name, to q, and the prompt's name there.
func (m *Manager) promptServer(ctx context.Context, q *Query, op, name string) (*upstream.Upstream, string, error) {
	if err := m.open(op, name); err != nil {
		return nil, "", err
	}
	v := m.view.Load()
	var found *Prompt
	for _, p := range v.prompts.Entries() {
		if p.Name == name {
			found = &Prompt{Name: p.Name, Server: p.Server, Original: p.Original, Prompt: p.Prompt}
			break
		}
	}
	if found == nil || len(m.keepPrompts(ctx, q, []Prompt{*found})) == 0 {
		return nil, "", fmt.Errorf("%s %q: %w", op, name, ErrUnknownPrompt)
	}
	return v.byName[found.Server], found.Original, nil
}

// Complete asks for completions of an argument of a prompt (ref/prompt,
// by public name) or of a resource template (ref/resource, by URI
// template), from the server that owns it.
func (m *Manager) Complete(ctx context.Context, q *Query, params *mcp.CompleteParams) (*mcp.CompleteResult, error) {
	if params.Ref == nil {
		return nil, fmt.Errorf("complete: %w: no ref", ErrInvalidArguments)
	}
	ref := *params.Ref
	var (
		up  *upstream.Upstream
		err error
	)
	switch ref.Type {
	case "ref/prompt":
		up, ref.Name, err = m.promptServer(ctx, q, "complete", ref.Name)
	case "ref/resource":
		up, err = m.templateServer(ctx, q, ref.URI)
	default:
		err = fmt.Errorf("complete: %w: unknown ref type %q", ErrInvalidArguments, ref.Type)
	}
	if err == nil {
		err = hooks.Admit(ctx, up.Name()) // before serverFor, which may start a process
	}
	if err == nil {
		up, err = m.serverFor(ctx, up)
	}
	if err != nil {
		return nil, err
	}
	complete := *params
	complete.Ref = &ref
	res, err := up.Complete(ctx, &complete)
	return res, err
}

// templateServer returns the upstream that serves the resource template
// uri (a URI template, or a resource's URI) to q.
func (m *Manager) templateServer(ctx context.Context, q *Query, uri string) (*upstream.Upstream, error) {
	if err := m.open("complete", uri); err != nil {
		return nil, err
	}
	v := m.view.Load()
	for _, t := range m.ResourceTemplates(ctx, q) {
		if t.Template.URITemplate == uri {
			return v.byName[t.Server], nil
		}
	}
	return m.resourceServer(ctx, q, "complete", uri)
}

// Resources returns every resource exposed to q (which may be nil), sorted
// by URI, as copies.
func (m *Manager) Resources(ctx context.Context, q *Query) []Resource {
	resources := m.view.Load().resources.Resources()
	out := make([]Resource, len(resources))
	for i, r := range resources {
		out[i] = Resource(r)
	}
	return keepResources(m, ctx, q, out, func(r Resource) (string, *mcp.Resource) { return r.Server, r.Resource })
}

// ResourceTemplates returns every resource template exposed to q (which may
// be nil), in configured order of their servers, as copies.
func (m *Manager) ResourceTemplates(ctx context.Context, q *Query) []ResourceTemplate {
	templates := m.view.Load().resources.Templates()
	out := make([]ResourceTemplate, len(templates))
	for i, t := range templates {
		out[i] = ResourceTemplate(t)
	}
	return keepResources(m, ctx, q, out, func(t ResourceTemplate) (string, *mcp.Resource) {
		return t.Server, templateResource(t.Template, t.Template.URITemplate)
	})
}

// templateResource is how a ResourceFilter sees a template, or a URI read
// through it: a resource with that URI.
func templateResource(t *mcp.ResourceTemplate, uri string) *mcp.Resource {
	return &mcp.Resource{URI: uri, Name: t.Name, Title: t.Title, Description: t.Description, MIMEType: t.MIMEType}
}

// keepResources is Options.ResourceFilter for q, over items that show
// describes: their server, and the resource the filter sees, a copy.
func keepResources[T any](m *Manager, ctx context.Context, q *Query, items []T, show func(T) (string, *mcp.Resource)) []T {
	f := m.opts.ResourceFilter
	if f == nil {
		return items
	}
	query := q.value()
	return catalog.Filter(ctx, items, "resource",
		func(item T) (string, string) {
			server, r := show(item)
			return server, r.URI
		},
		func(ctx context.Context, item T) (bool, error) {
			if hooks.IsUnfiltered(ctx) {
				return true, nil
			}
			server, r := show(item)
			return f(ctx, FilterContext{Query: query, Server: server, Name: r.URI}, catalog.CloneResource(r))
		}, m.opts.Logger)
}

// ReadResource reads the resource params.URI, for q (which may be nil),
// from the server that serves it: the one that lists it (the first
// configured, on a collision), else the first whose template matches it. A
// resource that Options.ResourceFilter hides from q is refused, as unknown.
func (m *Manager) ReadResource(ctx context.Context, q *Query, params *mcp.ReadResourceParams) (*mcp.ReadResourceResult, error) {
	up, err := m.resourceServer(ctx, q, "read resource", params.URI)
	if err == nil {
		err = hooks.Admit(ctx, up.Name()) // before serverFor, which may start a process
	}
	if err == nil {
		up, err = m.serverFor(ctx, up)
	}
	if err != nil {
		return nil, err
	}
	res, err := up.ReadResource(ctx, params)
	return res, err
}

// SubscribeResource subscribes to updates of uri, for q (which may be nil),
// which arrive as EventResourceUpdated. The subscription belongs to the
// server for its whole life: it survives every reconnect.
func (m *Manager) SubscribeResource(ctx context.Context, q *Query, uri string) error {
	up, err := m.resourceServer(ctx, q, "subscribe", uri)
	if err == nil {
		err = hooks.Admit(ctx, up.Name())
	}
	if err != nil {
		return err
	}
	return up.Subscribe(ctx, uri)
}

// UnsubscribeResource ends a subscription made with SubscribeResource.
func (m *Manager) UnsubscribeResource(ctx context.Context, q *Query, uri string) error {
	up, err := m.resourceServer(ctx, q, "unsubscribe", uri)
	if err != nil {
		return err
	}
	return up.Unsubscribe(ctx, uri)
}

// resourceServer returns the upstream that serves uri to q.
func (m *Manager) resourceServer(ctx context.Context, q *Query, op, uri string) (*upstream.Upstream, error) {
	if err := m.open(op, uri); err != nil {
		return nil, err
	}
	v := m.view.Load()
	server, res, tmpl, ok := v.resources.Find(uri)
	if ok && m.opts.ResourceFilter != nil {
		if res == nil {
			res = templateResource(tmpl, uri)
		}
		ok = len(keepResources(m, ctx, q, []Resource{{Server: server, Resource: res}},
			func(r Resource) (string, *mcp.Resource) { return r.Server, r.Resource })) > 0
	}
	if !ok {
		return nil, fmt.Errorf("%s %q: %w", op, uri, ErrUnknownResource)
	}
	return v.byName[server], nil
}
