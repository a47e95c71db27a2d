package switchboard

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/identity"
	"github.com/switchboard-mcp/switchboard/internal/policy"
)

// IdentityKey is the key of [Query.Extra] under which the gateway puts the
// caller's verified identity (an *identity.Identity) for the policy
// filters.
const IdentityKey = "identity"

// identityOf is the identity under IdentityKey in q, or nil.
func identityOf(q Query) *identity.Identity {
	id, _ := q.Extra[IdentityKey].(*identity.Identity)
	return id
}

// Policies are a config's "gateway.policies", compiled, for a host that
// enforces them (switchboard serve): [Policies.Filters] are Options'
// Filter, PromptFilter and ResourceFilter, and [Policies.Set] replaces the
// rules, on a reload, for every decision made from then on. The zero of
// *Policies (nil) allows everything.
type Policies struct {
	logger *slog.Logger
	cur    atomic.Pointer[policy.Engine]
	rules  atomic.Pointer[[]config.PolicyRule]
}

// NewPolicies compiles rules (nil or empty: everything is allowed). The
// logger receives the first run-time failure of each rule's condition;
// nil discards it. The error wraps [config.ErrGatewayPolicy].
func NewPolicies(rules []config.PolicyRule, logger *slog.Logger) (*Policies, error) {
	p := &Policies{logger: logger}
	if err := p.Set(rules); err != nil {
		return nil, err
	}
	return p, nil
}

// Set replaces the rules with rules, which it compiles; on error the
// rules in force stay.
func (p *Policies) Set(rules []config.PolicyRule) error {
	e, err := policy.New(config.PolicyRules(rules), &policy.Options{Logger: p.logger})
	if err != nil {
		return fmt.Errorf("gateway.policies: %w: %w", config.ErrGatewayPolicy, err)
	}
	p.cur.Store(e)
	rules = slices.Clone(rules)
	p.rules.Store(&rules)
	return nil
}

// Rules returns the rules in force: nil for none, or for a nil *Policies.
func (p *Policies) Rules() []config.PolicyRule {
	if p == nil {
		return nil
	}
	if r := p.rules.Load(); r != nil {
		return slices.Clone(*r)
	}
	return nil
}

// Filters returns Options' Filter, PromptFilter and ResourceFilter for the
// rules in force at each decision: each item is decided for the identity
// under [IdentityKey] in the query's Extra (none means an anonymous
// caller), by its server and its public name ([FilterContext.Name]), and
// for tools by their annotations. The filters never return an error: a
// rule that cannot decide denies.
func (p *Policies) Filters() (DynamicFilter, PromptFilter, ResourceFilter) {
	decide := func(q Query, target policy.Target) bool {
		if p == nil {
			return true
		}
		return p.cur.Load().Decide(identityOf(q), target).Allowed
	}
	tools := func(_ context.Context, fc FilterContext, t *mcp.Tool) (bool, error) {
		return decide(fc.Query, policy.Target{Server: fc.Server, Tool: fc.Name, Annotations: t.Annotations}), nil
	}
	prompts := func(_ context.Context, fc FilterContext, _ *mcp.Prompt) (bool, error) {
		return decide(fc.Query, policy.Target{Server: fc.Server, Prompt: fc.Name}), nil
	}
	resources := func(_ context.Context, fc FilterContext, r *mcp.Resource) (bool, error) {
		return decide(fc.Query, policy.Target{Server: fc.Server, URI: r.URI}), nil
	}
	return tools, prompts, resources
}
