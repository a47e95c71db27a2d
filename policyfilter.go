package switchboard

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/internal/identity"
	"github.com/switchboard-mcp/switchboard/internal/policy"
)

// IdentityKey is the key of [Query.Extra] under which the gateway puts the
// caller's verified identity (an *identity.Identity) for the policy
// filters.
const IdentityKey = "identity"

// PolicyFilters returns Options' Filter, PromptFilter and ResourceFilter
// for the gateway's policy engine (built from the config's
// "gateway.policies"): each item is decided for the identity under
// [IdentityKey] in the query's Extra (none means an anonymous caller), by
// its server and its public name ([FilterContext.Name]), and for tools by
// their annotations. A nil engine allows everything. The filters never
// return an error: a rule that cannot decide denies.
func PolicyFilters(e *policy.Engine) (DynamicFilter, PromptFilter, ResourceFilter) {
	tools := func(_ context.Context, fc FilterContext, t *mcp.Tool) (bool, error) {
		return e.Decide(identityOf(fc.Query), policy.Target{Server: fc.Server, Tool: fc.Name, Annotations: t.Annotations}).Allowed, nil
	}
	prompts := func(_ context.Context, fc FilterContext, _ *mcp.Prompt) (bool, error) {
		return e.Decide(identityOf(fc.Query), policy.Target{Server: fc.Server, Prompt: fc.Name}).Allowed, nil
	}
	resources := func(_ context.Context, fc FilterContext, r *mcp.Resource) (bool, error) {
		return e.Decide(identityOf(fc.Query), policy.Target{Server: fc.Server, URI: r.URI}).Allowed, nil
	}
	return tools, prompts, resources
}

// identityOf is the identity under IdentityKey in q, or nil.
func identityOf(q Query) *identity.Identity {
	id, _ := q.Extra[IdentityKey].(*identity.Identity)
	return id
}
