package switchboard

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/internal/catalog"
	"github.com/switchboard-mcp/switchboard/internal/hooks"
	"github.com/switchboard-mcp/switchboard/internal/upstream"
)

// Tool is one exposed tool. It is a small value: its definition is read
// through its methods, each of which returns a copy the caller may change,
// so that listing many tools costs little more than the list.
type Tool struct {
	// Name is the public name: <prefix>__<tool>, sanitized, at most 64
	// characters, with a hash suffix when it would be too long or shared.
	Name string
	// Server is the configured name of the server that owns the tool.
	Server string
	// Original is the tool's name on its server; calls use it.
	Original string
	// Title and Description are the definition's, for display.
	Title, Description string

	def      *mcp.Tool       // as prepared for hosts, named by Name; shared, never changed
	src      *mcp.Tool       // the prepared definition, the same while the server's tool is
	approval *ApprovalPolicy // the manager's Options.Approval
}

// RequiresApproval reports whether the tool needs a human's approval before
// it runs, under the manager's Options.Approval, for q (which may be nil).
// The zero Tool, which [Manager.Lookup] returns for an unknown name,
// requires approval.
func (t Tool) RequiresApproval(ctx context.Context, q *Query) bool {
	if t.def == nil {
		return true
	}
	def := t.Definition()
	def.Name = t.Original
	return t.approval.Requires(ctx, FilterContext{Query: q.value(), Server: t.Server, Name: t.Name}, def)
}

// Same reports whether t and u are the same definition under the same
// public name: two results of [Manager.Tools] hold the same tool for as
// long as its server lists it unchanged, however often it lists it. It
// compares identities, not contents, so that a host that mirrors the
// tools (a gateway, say) finds what changed at little cost.
func (t Tool) Same(u Tool) bool {
	return t.Name == u.Name && t.Server == u.Server && t.src == u.src
}

// Definition returns a deep copy of the tool's definition, named by its
// public name, whose input schema is an object with properties (made strict
// if Options.StrictSchemas asks). It is nil for the zero Tool.
func (t Tool) Definition() *mcp.Tool { return catalog.CloneTool(t.def) }

// InputSchema returns a deep copy of the definition's input schema: a JSON
// object with "type": "object" and a "properties" object.
func (t Tool) InputSchema() map[string]any {
	if t.def == nil {
		return nil
	}
	return catalog.CloneTool(&mcp.Tool{InputSchema: t.def.InputSchema}).InputSchema.(map[string]any)
}

// Annotations returns a copy of the definition's annotations, or nil.
func (t Tool) Annotations() *mcp.ToolAnnotations {
	if t.def == nil || t.def.Annotations == nil {
		return nil
	}
	return catalog.CloneTool(&mcp.Tool{Annotations: t.def.Annotations}).Annotations
}

// Tools returns the exposed tools of every server, filtered by the static
// filters of their configs and by Options.Filter for q (which may be nil),
// sorted by public name. A server that has not listed its tools yet
// contributes the tools it had last time, from the persistent cache; a
// server that is down keeps its last tools. The list is the caller's; the
// definitions are copied only when asked for.
func (m *Manager) Tools(ctx context.Context, q *Query) []Tool {
	tools := slices.Clone(m.view.Load().exposed)
	if tools == nil {
		tools = []Tool{}
	}
	keep := m.toolFilter(q)
	if keep == nil {
		return tools
	}
	return catalog.Filter(ctx, tools, "tool", func(t Tool) (string, string) { return t.Server, t.Original }, keep, m.opts.Logger)
}

// toolFilter is Options.Filter for q, or nil. The filter sees a deep copy of
// each tool, under its original name.
func (m *Manager) toolFilter(q *Query) func(context.Context, Tool) (bool, error) {
	f := m.opts.Filter
	if f == nil {
		return nil
	}
	query := q.value()
	return func(ctx context.Context, t Tool) (bool, error) {
		if hooks.IsUnfiltered(ctx) {
			return true, nil
		}
		def := t.Definition()
		def.Name = t.Original
		return f(ctx, FilterContext{Query: query, Server: t.Server, Name: t.Name}, def)
	}
}

// Lookup returns the exposed tool with the given public name: which server
// owns it and its original name there. It knows no query, so
// Options.Filter does not apply: [Manager.CallTool] applies it.
func (m *Manager) Lookup(name string) (Tool, bool) {
	v := m.view.Load()
	i, ok := v.exposedByName[name]
	if !ok {
		return Tool{}, false
	}
	return v.exposed[i], true
}

// CallTool calls the tool params.Name, a public name, for q (which may be
// nil), on the server that owns it, by its original name, with params'
// arguments and _meta (a progress token, say). Nil arguments are sent as
// {}. A tool that Options.Filter hides from q is refused, as unknown.
//
// A call waits for a server that is connecting or reconnecting, within the
// server's timeout, and replays a call that was not delivered; see the
// package documentation for the rules. That includes a server that has not
// listed its tools yet: a call to one of its tools, known by its prefix,
// waits for it instead of failing as unknown. A call to a server that is
// down fails, naming the server, its state and its last error. An error
// result (IsError) is a result, not an error. Errors are returned, unless
// Options.FormatError turns them into a result for the model.
func (m *Manager) CallTool(ctx context.Context, q *Query, params *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	res, err := m.callTool(ctx, q, params)
	if err != nil && m.opts.FormatError != nil {
		if formatted := m.opts.FormatError(ctx, params.Name, err); formatted != nil {
			return formatted, nil
		}
	}
	return res, err
}

func (m *Manager) callTool(ctx context.Context, q *Query, params *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	name := params.Name
	if err := m.open("call tool", name); err != nil {
		return nil, err
	}
	v := m.view.Load()
	i, ok := v.exposedByName[name]
	if !ok {
		if h, held := v.held[name]; held {
			return nil, m.heldError(ctx, q, v, h)
		}
		if v, ok = m.awaitOwner(ctx, name); ok {
			i = v.exposedByName[name]
		} else if h, held := v.held[name]; held {
			return nil, m.heldError(ctx, q, v, h)
		} else if err := m.unavailable(v, name); err != nil {
			return nil, err
		} else {
			return nil, m.unknownTool(ctx, q, name)
		}
	}
	t := v.exposed[i]
	if keep := m.toolFilter(q); keep != nil && len(catalog.Filter(ctx, []Tool{t}, "tool", func(t Tool) (string, string) { return t.Server, t.Original }, keep, m.opts.Logger)) == 0 {
		return nil, m.unknownTool(ctx, q, name)
	}
	if sp := v.pins[t.Server]; sp != nil && sp.noReplay[t.Original] {
		ctx = upstream.WithoutReplay(ctx) // its readOnlyHint or idempotentHint is new since it was pinned
	}
	call := *params
	call.Name = t.Original
	// Admitted before serverFor, which may start a process of the
	// caller's session for it.
	if err := hooks.Admit(ctx, t.Server); err != nil {
		return nil, err
	}
	up, err := m.serverFor(ctx, v.byName[t.Server])
	if err != nil {
		return nil, err
	}
	o := m.opts.Observer
	if o == nil || o.CallStarted == nil && o.CallEnded == nil {
		res, err := up.CallTool(ctx, &call)
		return res, err
	}
	if o.CallStarted != nil {
		o.CallStarted(t.Server, name)
	}
	start := time.Now()
	res, err := up.CallTool(ctx, &call)
	if o.CallEnded != nil {
		o.CallEnded(CallEnd{Server: t.Server, Tool: name, Outcome: outcomeOf(ctx, res, err), Duration: time.Since(start), Err: err})
	}
	return res, err
}

// unknownTool is the error of a call of name, which no server exposes to
// q: with the names of the tools q may see that it may have meant.
func (m *Manager) unknownTool(ctx context.Context, q *Query, name string) error {
	suggestions := catalog.Suggest(name, m.Tools(ctx, q), func(t Tool) (string, string) { return t.Name, t.Original })
	return fmt.Errorf("call tool: %w", &UnknownToolError{Name: name, Suggestions: suggestions})
}

// owners returns the servers that may own the public tool name but have not
// listed their tools yet, and are connecting: those whose prefix the name
// starts with, and those without a prefix.
func owners(v *view, name string) []*upstream.Upstream {
	var out []*upstream.Upstream
	for i, up := range v.servers {
		st := v.statuses[i]
		if st.State != StateConnecting || st.Tools > 0 || st.Deferred {
			continue
		}
		if catalog.MayOwn(catalog.NamePrefix(up.PublicPrefix()), name) {
			out = append(out, up)
		}
	}
	return out
}

// awaitOwner waits, within ctx and each server's timeout, for the servers
// that may own the tool name but are still connecting with nothing listed,
// and reports whether the name is exposed once they settled, with the view
// that exposes it.
func (m *Manager) awaitOwner(ctx context.Context, name string) (*view, bool) {
	v := m.view.Load()
	waiting := owners(v, name)
	if len(waiting) == 0 {
		return v, false
	}
	for _, up := range waiting {
		cfg := up.Config()
		up.Settle(ctx, cfg.TimeoutDuration())
	}
	m.events.Flush(ctx)
	v = m.view.Load()
	_, ok := v.exposedByName[name]
	return v, ok
}

// unavailable explains why a tool that is not exposed may be missing: its
// name carries the prefix of a server that is not connected and has no
// tools listed. It returns nil if no such server is found.
func (m *Manager) unavailable(v *view, name string) error {
	for i, st := range v.statuses {
		var prefix string
		if i < len(v.servers) {
			prefix = catalog.NamePrefix(v.servers[i].PublicPrefix())
		} else {
			prefix = catalog.NamePrefix(st.Name) // a rejected entry: its name is the default prefix
		}
		if prefix == "" || !catalog.MayOwn(prefix, name) || st.State == StateConnected {
			continue
		}
		return &ServerError{Server: st.Name, Op: fmt.Sprintf("call tool %q", name), Err: &UnavailableError{State: st.State, Err: st.Err}}
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
	case errors.Is(err, ErrToolHeld):
		text = fmt.Sprintf("Tool %s is held back by tool pinning: %v. Do not retry it; tell the user.", tool, err)
	case errors.Is(err, ErrAmbiguous):
		text = fmt.Sprintf("Tool %s may or may not have run: %v. Check its effect before you run it again.", tool, err)
	case errors.Is(err, ErrInvalidArguments):
		text = fmt.Sprintf("The arguments of tool %s were invalid: %v. Fix them and try again.", tool, err)
	case errors.Is(err, ErrUnknownTool):
		text = fmt.Sprintf("There is no tool named %s. Use one of the tools listed.", tool)
		if unknown := (*UnknownToolError)(nil); errors.As(err, &unknown) && len(unknown.Suggestions) > 0 {
			text = fmt.Sprintf("There is no tool named %s%s", tool, unknown.didYouMean())
		}
	default:
		text = fmt.Sprintf("An error occurred while running the tool. Please try again. Error: %v", err)
	}
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

// CallToolForModel calls a tool as [Manager.CallTool] does, for hosts whose
// agent loop ends on a tool's error (the agent frameworks do): an error
// becomes a result for the model instead, Options.FormatError's or, when
// that is unset or gives nil, [DefaultErrorFormatter]'s. An error is
// returned only once ctx is done, for the loop to end.
func (m *Manager) CallToolForModel(ctx context.Context, q *Query, params *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	res, err := m.CallTool(ctx, q, params)
	if err == nil {
		return res, nil
	}
	if res := DefaultErrorFormatter(ctx, params.Name, err); res != nil {
		return res, nil
	}
	return nil, err
}
