package gateway

import (
	"context"
	"fmt"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/hooks"
	"github.com/switchboard-mcp/switchboard/internal/identity"
)

// The gateway registers every tool, prompt, resource and template of the
// manager with its go-sdk server, unfiltered (see hooks.Unfiltered), and
// decides per request what its caller sees and may use: every request it
// forwards carries the caller's query, whose Extra holds the session's
// identity under switchboard.IdentityKey, and the manager's filters
// (Options.Filter, PromptFilter and ResourceFilter: a policy's, say) decide
// with it. The lists a session gets are filtered for it the same way.

// query returns the query of a client's request: the identity its session
// recorded as it started (see recordIdentity), else, for a session not
// followed (a stateless one), the identity of the request's token; nil
// without either.
func (s *sessions) query(req mcp.Request) *switchboard.Query {
	var id *identity.Identity
	if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss != nil {
		s.mu.Lock()
		st := s.byID[ss]
		s.mu.Unlock()
		if st != nil {
			id = st.Identity()
		}
	}
	if id == nil {
		if extra := req.GetExtra(); extra != nil {
			id = identityOf(extra.TokenInfo)
		}
	}
	if id == nil {
		return nil
	}
	return &switchboard.Query{Extra: map[string]any{switchboard.IdentityKey: id}}
}

// notPermitted is the answer to a request for a tool, prompt or resource
// (kind) that the caller may not use; and, for a caller who does not see
// everything, to one for what does not exist, so that the answer never
// tells the two apart. It names nothing but what the caller asked for.
func notPermitted(kind, name string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("switchboard: %s %q: not permitted", kind, name)}
}

// Kinds of item, as notPermitted names them.
const (
	kindNameTool     = "tool"
	kindNamePrompt   = "prompt"
	kindNameResource = "resource"
)

// restricted reports whether q sees fewer items of kind than there are:
// a refusal of what q cannot see then says it is not permitted, whether or
// not it exists.
func restricted(ctx context.Context, m *switchboard.Manager, q *switchboard.Query, kind string) bool {
	all := hooks.Unfiltered(ctx)
	switch kind {
	case kindNamePrompt:
		return len(m.Prompts(ctx, q)) < len(m.Prompts(all, nil))
	default:
		return len(m.Resources(ctx, q)) < len(m.Resources(all, nil)) ||
			len(m.ResourceTemplates(ctx, q)) < len(m.ResourceTemplates(all, nil))
	}
}

// hiddenTool reports whether q may not see the tool called name while it
// sees fewer tools than there are: an error about that tool would tell q
// that it exists (the tools' part of restricted, with one list of q's).
func hiddenTool(ctx context.Context, m *switchboard.Manager, q *switchboard.Query, name string) bool {
	shown := m.Tools(ctx, q)
	if slices.ContainsFunc(shown, func(t switchboard.Tool) bool { return t.Name == name }) {
		return false
	}
	return len(shown) < len(m.Tools(hooks.Unfiltered(ctx), nil))
}

// visibleTools returns the public names of the tools q may see.
func visibleTools(ctx context.Context, m *switchboard.Manager, q *switchboard.Query) map[string]bool {
	tools := m.Tools(ctx, q)
	names := make(map[string]bool, len(tools))
	for _, t := range tools {
		names[t.Name] = true
	}
	return names
}

// filterList filters the result of a prompts/list, resources/list or
// resources/templates/list, as the go-sdk answered it from what is
// registered, to what q may see. A page may then hold fewer items than
// the page size, or none, and still name the next. A list for an identity
// is its own: its cacheScope is "private".
func filterList(ctx context.Context, m *switchboard.Manager, q *switchboard.Query, res mcp.Result) {
	scope := func(c *mcp.Cacheable) {
		if q != nil {
			c.CacheScope = "private"
		}
	}
	switch r := res.(type) {
	case *mcp.ListPromptsResult:
		keep := make(map[string]bool)
		for _, p := range m.Prompts(ctx, q) {
			keep[p.Name] = true
		}
		r.Prompts = keepOnly(r.Prompts, func(p *mcp.Prompt) bool { return keep[p.Name] })
		scope(&r.Cacheable)
	case *mcp.ListResourcesResult:
		keep := make(map[string]bool)
		for _, res := range m.Resources(ctx, q) {
			keep[res.Resource.URI] = true
		}
		r.Resources = keepOnly(r.Resources, func(res *mcp.Resource) bool { return keep[res.URI] })
		scope(&r.Cacheable)
	case *mcp.ListResourceTemplatesResult:
		keep := make(map[string]bool)
		for _, t := range m.ResourceTemplates(ctx, q) {
			keep[t.Template.URITemplate] = true
		}
		r.ResourceTemplates = keepOnly(r.ResourceTemplates, func(t *mcp.ResourceTemplate) bool { return keep[t.URITemplate] })
		scope(&r.Cacheable)
	}
}

// keepOnly returns the items of s that keep reports; never nil, as the
// go-sdk sends an empty list, not null.
func keepOnly[T any](s []T, keep func(T) bool) []T {
	out := make([]T, 0, len(s))
	for _, item := range s {
		if keep(item) {
			out = append(out, item)
		}
	}
	return out
}
