package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/config"
)

// The kinds of definitions the gateway registers.
const (
	kindTool = iota
	kindPrompt
	kindResource
	kindTemplate
	numKinds
)

var kindNames = [numKinds]string{"tool", "prompt", "resource", "resource template"}

// syncExposed makes the exposed tools, prompts, resources and resource
// templates match the manager's current view: it adds new and changed
// definitions and removes the rest, so that clients are told list_changed
// only when something did change. It runs on every change event, which the
// manager's Connect, Reconnect and Reconfigure wait for before they return,
// and before a handshake or a list is answered.
func (g *Gateway) syncExposed() {
	var told func() // the log line of a switch of tool search, after the lock
	defer func() {
		if told != nil {
			told()
		}
	}()
	g.mu.Lock()
	defer g.mu.Unlock()
	ctx := context.Background()
	var defs [numKinds][]definition
	tools := g.m.Tools(ctx, nil)
	searchOn := g.search.Enabled(len(tools))
	g.exposedTools = len(tools)
	for _, t := range tools {
		if searchOn && isSearchTool(t.Name) {
			g.opts.Logger.Warn("tool not exposed: tool search has a tool of that name; call_tool reaches it", "tool", t.Name, "server", t.Server)
			continue
		}
		def, err := exposable(t.Definition())
		if err != nil {
			g.opts.Logger.Warn("tool not exposed", "tool", t.Name, "server", t.Server, "error", err)
			continue
		}
		defs[kindTool] = append(defs[kindTool], definition{def.Name, t.Server, def, func() { g.server.AddTool(def, g.callTool(def.Name)) }})
	}
	for _, p := range g.m.Prompts(ctx, nil) {
		def := p.Prompt
		defs[kindPrompt] = append(defs[kindPrompt], definition{def.Name, p.Server, def, func() { g.server.AddPrompt(def, g.getPrompt) }})
	}
	for _, r := range g.m.Resources(ctx, nil) {
		def := r.Resource
		defs[kindResource] = append(defs[kindResource], definition{def.URI, r.Server, def, func() { g.server.AddResource(def, g.readResource) }})
	}
	for _, t := range g.m.ResourceTemplates(ctx, nil) {
		def := t.Template
		defs[kindTemplate] = append(defs[kindTemplate], definition{def.URITemplate, t.Server, def, func() { g.server.AddResourceTemplate(def, g.readResource) }})
	}
	switched := searchOn != g.searchOn
	if switched {
		g.searchOn = searchOn
		g.sessions.markAllStale()
		told = toolSearchSwitched(g.opts.Logger, g.search, searchOn, len(tools))
	}
	if switched && !searchOn {
		// Before a server's own tool of the same name is registered.
		g.server.RemoveTools(searchToolsName, callToolName)
	}
	if g.expose(kindTool, defs[kindTool], g.server.RemoveTools) || g.tools == nil {
		g.tools = make(map[string]exposedTool, len(defs[kindTool]))
		for _, d := range defs[kindTool] {
			if _, ok := g.exposed[kindTool][d.key]; ok {
				g.tools[d.key] = exposedTool{d.server, d.def.(*mcp.Tool)}
			}
		}
		g.toolOrder = slices.Sorted(maps.Keys(g.tools))
	}
	if switched && searchOn {
		g.server.AddTool(searchToolsDef, g.searchTools)
		g.server.AddTool(callToolDef, g.callNamedTool)
	}
	g.expose(kindPrompt, defs[kindPrompt], g.server.RemovePrompts)
	g.expose(kindResource, defs[kindResource], g.server.RemoveResources)
	g.expose(kindTemplate, defs[kindTemplate], g.server.RemoveResourceTemplates)
}

// toolSearchSwitched returns the log line of tool search switching on or
// off, as setting asks with tools exposed.
// The count of tools is the cause of a switch in auto mode alone.
func toolSearchSwitched(logger *slog.Logger, setting config.ToolSearch, on bool, tools int) func() {
	attrs := []any{"setting", setting.String()}
	if setting.Mode == config.ToolSearchAuto {
		attrs = append(attrs, "tools", tools)
	}
	return func() {
		if on {
			logger.Info("tool search on: tools are behind search_tools", attrs...)
		} else {
			logger.Info("tool search off: every tool is listed", attrs...)
		}
	}
}

// toolSearchRow is the tool search line of /status.
func (g *Gateway) toolSearchRow() ToolSearchRow {
	g.mu.Lock()
	defer g.mu.Unlock()
	return ToolSearchRow{Setting: g.search.String(), On: g.searchOn, Tools: g.exposedTools}
}

// A definition is one tool, prompt, resource or template to register.
type definition struct {
	key    string // its name, or URI
	server string
	def    any // what add registers, to compare
	add    func()
}

// expose registers defs, the wanted definitions of kind, in place of those
// registered now: it adds what is new or changed and removes the rest with
// remove. It reports whether it changed what is registered.
func (g *Gateway) expose(kind int, defs []definition, remove func(...string)) bool {
	exposed := g.exposed[kind]
	changed := false
	want := make(map[string]bool, len(defs))
	for _, d := range defs {
		key, err := json.Marshal(d.def)
		if err != nil {
			continue
		}
		want[d.key] = true
		if exposed[d.key] == string(key) {
			continue
		}
		g.changing(kind, changed)
		if err := register(d.add); err != nil {
			g.opts.Logger.Warn(kindNames[kind]+" not exposed", kindNames[kind], d.key, "server", d.server, "error", err)
			delete(want, d.key)
			continue
		}
		exposed[d.key] = string(key)
		changed = true
	}
	var gone []string
	for key := range exposed {
		if !want[key] {
			gone = append(gone, key)
			delete(exposed, key)
		}
	}
	if len(gone) > 0 {
		g.changing(kind, changed)
		remove(gone...)
	}
	return changed || len(gone) > 0
}

// changing is told before expose changes what is registered of kind,
// unless it has already changed some (changed): a change of the tools may
// change any session's list (see toolsListChanged), before the go-sdk tells
// the sessions.
func (g *Gateway) changing(kind int, changed bool) {
	if kind == kindTool && !changed {
		g.sessions.markAllStale()
	}
}

// register runs add. The go-sdk panics on definitions it cannot serve (a
// tool without an object schema, a resource URI it cannot parse); one bad
// definition from one server must not take the gateway down.
func register(add func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("rejected by the MCP server library: %v", r)
		}
	}()
	add()
	return nil
}

// exposable returns def ready for mcp.Server.AddTool, which requires an
// object input schema: a missing schema becomes an empty object schema.
func exposable(def *mcp.Tool) (*mcp.Tool, error) {
	switch schema := def.InputSchema.(type) {
	case nil:
		def.InputSchema = map[string]any{"type": "object", "properties": map[string]any{}}
	case map[string]any:
		if schema["type"] != "object" {
			return nil, fmt.Errorf("input schema type is %v, not object", schema["type"])
		}
	default:
		return nil, fmt.Errorf("input schema is a %T, not a JSON object", schema)
	}
	return def, nil
}
