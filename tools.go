package switchboard

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/internal/catalog"
	"github.com/switchboard-mcp/switchboard/internal/upstream"
)

// Tool is one exposed tool: its public name, the server that owns it, its
// original name there, and a copy of its definition whose Name is the public
// name and whose input schema is an object with properties.
type Tool = catalog.Tool

// Query says who asks for tools: dynamic filters and approval policies may
// depend on it.
type Query = catalog.Query

// FilterContext is what a dynamic filter or an approval function sees.
type FilterContext = catalog.FilterContext

// DynamicFilter decides per query whether a tool is exposed. It gets a copy
// of the tool, under its original name.
type DynamicFilter = catalog.DynamicFilter

// ApprovalPolicy says which tools need a human's approval before they run.
type ApprovalPolicy = catalog.ApprovalPolicy

// ApprovalFunc decides per call whether a tool needs approval; an error
// means it does.
type ApprovalFunc = catalog.ApprovalFunc

// NewApprovalPolicy builds an approval policy from any of these forms, and
// fails on anything else, so that a mistake never lets a tool run unchecked:
// nil (none); a bool or "always"/"never" (all or none); a map from original
// tool name to "always", "never" or a bool (unlisted tools need none); a
// map{"always": {"tool_names": [...]}, "never": {"tool_names": [...]}}; or an
// ApprovalFunc.
func NewApprovalPolicy(v any) (*ApprovalPolicy, error) { return catalog.NewApprovalPolicy(v) }

// Tools returns the exposed tools of every server, filtered by the static
// filters of their configs and by Options.Filter for q (which may be nil),
// sorted by public name. A server that is still connecting for the first
// time contributes the tools it had last time, from the persistent cache; a
// server that is reconnecting keeps its tools. The result is a copy.
func (m *Manager) Tools(ctx context.Context, q *Query) []Tool {
	v := m.views()
	tools := make([]Tool, len(v.exposed))
	for i, t := range v.exposed {
		tools[i] = t
		tools[i].Tool = catalog.CloneTool(t.Tool)
	}
	if m.opts.Filter == nil {
		return tools
	}
	var query Query
	if q != nil {
		query = *q
	}
	return catalog.FilterTools(ctx, tools, query, m.opts.Filter, m.opts.Logger)
}

// Lookup returns the exposed tool with the given public name: which server
// owns it and its original name there.
func (m *Manager) Lookup(name string) (Tool, bool) {
	v := m.views()
	i, ok := v.exposedByName[name]
	if !ok {
		return Tool{}, false
	}
	t := v.exposed[i]
	t.Tool = catalog.CloneTool(t.Tool)
	return t, true
}

// RequiresApproval reports whether the tool with the given public name needs
// a human's approval before it runs, under Options.Approval, for q (which
// may be nil). An unknown tool requires approval.
func (m *Manager) RequiresApproval(ctx context.Context, q *Query, name string) bool {
	t, ok := m.Lookup(name)
	if !ok {
		return true
	}
	var query Query
	if q != nil {
		query = *q
	}
	def := catalog.CloneTool(t.Tool)
	def.Name = t.Original
	return m.opts.Approval.Requires(ctx, FilterContext{Query: query, Server: t.Server}, def)
}

// CallTool calls the tool with the given public name on the server that
// owns it, by its original name. Nil arguments are sent as {}.
//
// It waits for a server that is still connecting or reconnecting, within the
// server's timeout, and replays a call that was not delivered; see the
// package documentation for the rules. An error result (IsError) is a
// result, not an error. Errors are returned, unless Options.FormatError
// turns them into a result for the model.
func (m *Manager) CallTool(ctx context.Context, name string, args map[string]any) (*mcp.CallToolResult, error) {
	res, err := m.callTool(ctx, name, args)
	if err != nil && m.opts.FormatError != nil {
		if formatted := m.opts.FormatError(ctx, name, err); formatted != nil {
			return formatted, nil
		}
	}
	return res, err
}

func (m *Manager) callTool(ctx context.Context, name string, args map[string]any) (*mcp.CallToolResult, error) {
	if err := m.open("call tool", name); err != nil {
		return nil, err
	}
	server, original, ok := m.views().tools.Route(name)
	if !ok {
		if err := m.unavailable(name); err != nil {
			return nil, fmt.Errorf("call tool %q: %w", name, err)
		}
		return nil, fmt.Errorf("call tool %q: %w", name, ErrUnknownTool)
	}
	up := m.upstreamOf(m.byName[server])
	if up == nil {
		return nil, fmt.Errorf("call tool %q: %w", name, ErrUnknownTool)
	}
	return up.CallTool(ctx, original, args)
}

// unavailable explains why a tool that is not exposed may be missing: its
// name carries the prefix of a server that failed or is in crash-loop, and
// so lost its tools. It returns nil if no such server is found.
func (m *Manager) unavailable(name string) error {
	for _, s := range m.servers {
		prefix := catalog.NamePrefix(s.cfg.PublicPrefix())
		up := m.upstreamOf(s)
		if prefix == "" || up == nil || !strings.HasPrefix(name, prefix) {
			continue
		}
		switch snap := up.Snapshot(); snap.State {
		case upstream.CrashLoop:
			return fmt.Errorf("server %q is in crash-loop: %w", s.cfg.Name, snap.Err)
		case upstream.Failed:
			return fmt.Errorf("server %q failed: %w: %w", s.cfg.Name, ErrNotConnected, snap.Err)
		}
	}
	return nil
}

// An ErrorFormatter turns the error of a tool call into a result that a
// model can read, or returns nil to have the error returned.
type ErrorFormatter func(ctx context.Context, tool string, err error) *mcp.CallToolResult

// DefaultErrorFormatter says what went wrong in words a model can act on.
// When the tool's server is unavailable it says not to retry, so that an
// agent does not loop on a dead server (kagent #1530). A caller's
// cancellation is never turned into output: it returns nil for it.
func DefaultErrorFormatter(ctx context.Context, tool string, err error) *mcp.CallToolResult {
	if ctx.Err() != nil {
		return nil
	}
	var text string
	switch {
	case errors.Is(err, ErrNotConnected), errors.Is(err, ErrReconnecting), errors.Is(err, ErrCircuitOpen), errors.Is(err, ErrClosed):
		text = fmt.Sprintf("The server of tool %s is unavailable: %v. Do not retry this tool; tell the user that it is unavailable.", tool, err)
	case errors.Is(err, ErrAmbiguous):
		text = fmt.Sprintf("Tool %s may or may not have run: %v. Check its effect before you run it again.", tool, err)
	case errors.Is(err, ErrInvalidArguments):
		text = fmt.Sprintf("The arguments of tool %s were invalid: %v. Fix them and try again.", tool, err)
	case errors.Is(err, ErrUnknownTool):
		text = fmt.Sprintf("There is no tool named %s. Use one of the tools listed.", tool)
	default:
		text = fmt.Sprintf("An error occurred while running the tool. Please try again. Error: %v", err)
	}
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

// views are what the manager exposes, built from snapshots of every
// server's lists at one generation.
type views struct {
	gen           uint64
	tools         *catalog.View
	exposed       []Tool // prepared for hosts: schemas with properties, maybe strict
	exposedByName map[string]int
	prompts       *catalog.PromptView
	resources     *catalog.ResourceView
}

// generation is a number that grows whenever any server's state or lists
// change: the manager's epoch (moved when an upstream is replaced) over the
// sum of the current upstreams' versions. m.mu must be held.
func (m *Manager) generationLocked() uint64 {
	var sum uint64
	for _, s := range m.servers {
		if s.up != nil {
			sum += s.up.Version()
		}
	}
	return m.epoch.Load()<<32 | sum&(1<<32-1)
}

// views returns the current views, rebuilding them if anything changed
// since they were built.
func (m *Manager) views() *views {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.viewsLocked()
}

func (m *Manager) viewsLocked() *views {
	gen := m.generationLocked()
	// A view is built from snapshots taken after its generation was read:
	// one of a later generation is as new.
	if m.view != nil && m.view.gen >= gen {
		return m.view
	}
	var (
		tools     []catalog.Source
		prompts   []catalog.PromptSource
		resources []catalog.ResourceSource
	)
	for _, s := range m.servers {
		if s.up == nil || s.disconnected {
			continue
		}
		snap := s.up.Snapshot()
		list := snap.Tools
		if len(list) == 0 && snap.State == upstream.Connecting {
			list = s.deferred
		}
		prefix := s.cfg.PublicPrefix()
		tools = append(tools, catalog.Source{Server: s.cfg.Name, Prefix: prefix, Allow: s.cfg.Tools.Allow, Deny: s.cfg.Tools.Deny, Tools: list})
		prompts = append(prompts, catalog.PromptSource{Server: s.cfg.Name, Prefix: prefix, Prompts: snap.Prompts})
		resources = append(resources, catalog.ResourceSource{Server: s.cfg.Name, Resources: snap.Resources, Templates: snap.Templates})
	}
	v := &views{gen: gen, tools: catalog.Build(tools), prompts: catalog.BuildPrompts(prompts), resources: catalog.BuildResources(resources)}
	v.exposed = v.tools.Tools()
	v.exposedByName = make(map[string]int, len(v.exposed))
	for i := range v.exposed {
		t := v.exposed[i].Tool
		t.InputSchema = catalog.InputSchema(t)
		if m.opts.StrictSchemas {
			t.InputSchema, _ = catalog.StrictSchema(t.InputSchema.(map[string]any))
		}
		v.exposedByName[v.exposed[i].Name] = i
	}
	m.view = v
	return v
}

// published is what the last EventChanged told subscribers.
type published struct {
	tools, prompts, resources []string
}

// publish sends an EventChanged if the exposed names differ from the last
// ones sent. The views are rebuilt first, so a subscriber that reads Tools
// sees the change; the event is queued under m.mu, so that events keep the
// order of the views.
func (m *Manager) publish() {
	m.mu.Lock()
	defer m.mu.Unlock()
	v := m.viewsLocked()
	now := published{tools: v.tools.Names(), prompts: v.prompts.Names(), resources: v.resources.URIs()}
	ev := Event{
		Kind:      EventChanged,
		Tools:     diff(m.published.tools, now.tools),
		Prompts:   diff(m.published.prompts, now.prompts),
		Resources: diff(m.published.resources, now.resources),
	}
	if ev.Tools.empty() && ev.Prompts.empty() && ev.Resources.empty() {
		return
	}
	m.published = now
	m.emit(ev)
}

// diff compares two sorted lists of names.
func diff(before, after []string) Diff {
	var d Diff
	i, j := 0, 0
	for i < len(before) || j < len(after) {
		switch {
		case j == len(after) || i < len(before) && before[i] < after[j]:
			d.Removed = append(d.Removed, before[i])
			i++
		case i == len(before) || after[j] < before[i]:
			d.Added = append(d.Added, after[j])
			j++
		default:
			i++
			j++
		}
	}
	return d
}
