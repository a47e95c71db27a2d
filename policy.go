package switchboard

import (
	"context"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/internal/catalog"
)

// Query says who asks: dynamic filters and approval policies may depend on
// it. Pass the same query to the listing and to the call: a tool hidden from
// a query is also refused to it.
type Query struct {
	// Client identifies the caller, e.g. the MCP client's name or the host's
	// user.
	Client string
	// Agent is the agent asking, if the host has several.
	Agent string
	// Extra holds anything else the host wants its filters to see. Filters
	// and policies share it, so they must treat it as read-only.
	Extra map[string]any
}

// FilterContext is what a dynamic filter or an approval function sees.
type FilterContext struct {
	Query Query
	// Server is the configured name of the server that owns the item.
	Server string
	// Name is the item's public name: a tool's or a prompt's as
	// [Manager.Tools] and [Manager.Prompts] give it, a resource's URI. The
	// item itself is named by its original name.
	Name string
}

// DynamicFilter decides per query whether a tool is exposed. It gets a deep
// copy of the tool, named by its original name on its server, so it can
// never change the catalog. An error or a panic excludes the tool, and is
// logged.
type DynamicFilter func(ctx context.Context, fc FilterContext, tool *mcp.Tool) (bool, error)

// PromptFilter decides per query whether a prompt is exposed. It gets a copy
// of the prompt, named by its original name. An error or a panic excludes
// the prompt, and is logged.
type PromptFilter func(ctx context.Context, fc FilterContext, prompt *mcp.Prompt) (bool, error)

// ResourceFilter decides per query whether a resource is exposed. It gets a
// copy of the resource; a resource template is shown to it as a resource
// whose URI is the template, and a URI read through a template as a
// resource with that URI. An error or a panic excludes the resource, and is
// logged.
type ResourceFilter func(ctx context.Context, fc FilterContext, resource *mcp.Resource) (bool, error)

// ApprovalFunc decides per call whether a tool needs approval. It gets a deep
// copy of the tool, named by its original name. An error or a panic means
// approval is required: a policy that cannot decide fails closed.
type ApprovalFunc func(ctx context.Context, fc FilterContext, tool *mcp.Tool) (bool, error)

// ApprovalPolicy says which tools need a human's approval before they run.
// The zero value and a nil *ApprovalPolicy need none. A policy is immutable
// once built, so it is safe for concurrent use.
type ApprovalPolicy struct {
	rules *catalog.ApprovalRules
	fn    ApprovalFunc // if set, decides instead of rules
}

// NewApprovalPolicy builds an approval policy from any of the forms that
// config files and hosts use, and fails on anything else, so that a mistake
// never lets a tool run unchecked:
//
//	nil                         no tool needs approval
//	true, false                 every tool, or none
//	"always", "never"           every tool, or none
//	{"delete": "always", "read": false}
//	                            per tool, by original name: "always", "never"
//	                            or a bool; unlisted tools need none
//	{"always": {"tool_names": ["delete"]}, "never": {"tool_names": ["read"]}}
//	                            lists of tools; unlisted tools need none
//	an ApprovalFunc             decides per call
//
// Maps may be map[string]any, map[string]string or map[string]bool.
func NewApprovalPolicy(v any) (*ApprovalPolicy, error) {
	switch f := v.(type) {
	case ApprovalFunc:
		return funcPolicy(f)
	case func(context.Context, FilterContext, *mcp.Tool) (bool, error):
		return funcPolicy(f)
	}
	rules, err := catalog.ParseApproval(v)
	if err != nil {
		return nil, err
	}
	return &ApprovalPolicy{rules: rules}, nil
}

// funcPolicy rejects a nil func: it is a wiring mistake, not "no policy".
func funcPolicy(f ApprovalFunc) (*ApprovalPolicy, error) {
	if f == nil {
		return nil, fmt.Errorf("approval policy: %w", errors.New("nil ApprovalFunc"))
	}
	return &ApprovalPolicy{fn: f}, nil
}

// Requires reports whether tool, named by its original name on fc.Server,
// needs approval before it runs. A func policy gets a deep copy of the
// tool; if it returns an error or panics, approval is required.
func (p *ApprovalPolicy) Requires(ctx context.Context, fc FilterContext, tool *mcp.Tool) bool {
	switch {
	case p == nil:
		return false
	case p.fn != nil:
		need, err := catalog.Guard(func() (bool, error) { return p.fn(ctx, fc, catalog.CloneTool(tool)) })
		return need || err != nil
	case tool == nil:
		return p.rules.Requires("")
	}
	return p.rules.Requires(tool.Name)
}

// value returns the query, or the zero query for nil.
func (q *Query) value() Query {
	if q == nil {
		return Query{}
	}
	return *q
}
