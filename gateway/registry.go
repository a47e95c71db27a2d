package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/hooks"
)

// An exposure is what the gateway exposes at one revision of the manager's
// view. The registry publishes it whole and never changes it after (but
// for a memo): a session reads it with one atomic load and takes no lock.
type exposure struct {
	revision uint64 // the manager's (see hooks.Gateway.Revision)
	setting  config.ToolSearch
	searchOn bool
	count    int           // the servers' tools, listed or behind search_tools
	tools    []exposedTool // as registered with the go-sdk server, by name
	byName   map[string]int
	search   []*mcp.Tool     // search_tools and call_tool, registered while searchOn
	servers  []serverAbout   // the servers search_tools names, while searchOn
	always   map[string]bool // the servers marked alwaysLoad
	// searchDefs memoizes the definitions of search_tools listed to
	// identities that see fewer servers (see searchToolsFor): the one
	// part of an exposure that grows after it is published.
	searchDefs struct {
		mu        sync.Mutex
		byServers map[string]*mcp.Tool
	}
}

// An exposedTool is a server's tool registered with the go-sdk server.
type exposedTool struct {
	tool switchboard.Tool // the manager's, for its identity (see Tool.Same)
	def  *mcp.Tool        // as registered
}

// tool returns the exposed tool called name.
func (e *exposure) tool(name string) (exposedTool, bool) {
	i, ok := e.byName[name]
	if !ok {
		return exposedTool{}, false
	}
	return e.tools[i], true
}

// A searchTool is one of the tools of tool search, with its handler.
type searchTool struct {
	def    *mcp.Tool
	handle mcp.ToolHandler
}

// registryHandlers serve what the registry registers.
type registryHandlers struct {
	callTool     func(name string) mcp.ToolHandler
	getPrompt    mcp.PromptHandler
	readResource mcp.ResourceHandler
	search       []searchTool // search_tools first: see tellToolsChanged
	// searchDef is the definition of search_tools, search[0], that names
	// servers; nil: search[0]'s is.
	searchDef func(servers []serverAbout) *mcp.Tool
}

// The kinds of definitions the registry registers besides tools.
const (
	kindPrompt = iota
	kindResource
	kindTemplate
	numKinds
)

var kindNames = [numKinds]string{"prompt", "resource", "resource template"}

// The registry keeps what the go-sdk server has registered (the servers'
// tools, prompts, resources and templates, and the tools of tool search)
// the same as what the manager exposes, one revision of its view at a
// time, and publishes each revision's exposure. A revision it has seen
// costs one atomic load; a new one registers again only the definitions
// that changed, which it tells by the tools' identities (see
// switchboard.Tool.Same), so that clients are told list_changed only when
// something did change.
type registry struct {
	m        *switchboard.Manager
	hooks    hooks.Gateway
	server   *mcp.Server
	logger   *slog.Logger
	override *config.ToolSearch // Options.ToolSearch, over the config's
	serve    registryHandlers

	// mu serializes syncs and the re-adds of tellToolsChanged, which hold
	// it for writing. A session's list holds it for reading, only to load
	// the exposure: a list made while a sync registers what changed waits
	// for the sync, as must a session's view computed as the go-sdk tells
	// it of the change (see views). Lock order: mu, then sessions.mu, then
	// a session's own.
	mu      sync.RWMutex
	others  [numKinds]map[string]any    // by name or URI: the definition registered
	refused map[string]switchboard.Tool // tools the go-sdk refused, warned of once
	clashed map[string]switchboard.Tool // tools named as tool search's, warned of once
	cur     atomic.Pointer[exposure]
}

// exposure returns the exposure of the revision synced last, without
// waiting for a sync in progress: for what does not list.
func (r *registry) exposure() *exposure { return r.cur.Load() }

// listed returns the exposure of the revision synced last, once no sync is
// in progress: for a list.
func (r *registry) listed() *exposure {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.cur.Load()
}

// sync brings what is registered up to the manager's current revision, if
// it is not there already. It runs after each new revision (see
// hooks.Gateway.Follow), which the manager's Connect, Reconnect and
// Reconfigure wait for before they return, and before a handshake or a
// list is answered.
func (r *registry) sync() {
	revision := r.hooks.Revision()
	if cur := r.cur.Load(); cur != nil && cur.revision == revision {
		return
	}
	var told func() // the log line of a switch of tool search, after the lock
	defer func() {
		if told != nil {
			told()
		}
	}()
	r.mu.Lock()
	defer r.mu.Unlock()
	prev := r.cur.Load()
	if prev != nil && prev.revision == revision {
		return // another sync has done it
	}
	if prev == nil {
		prev = &exposure{}
	}
	ctx := hooks.Unfiltered(context.Background()) // every session's view is filtered for it
	tools := r.m.Tools(ctx, nil)
	setting := r.setting()
	next := &exposure{revision: revision, setting: setting, searchOn: setting.Enabled(len(tools)), count: len(tools),
		byName: make(map[string]int, len(tools)), always: make(map[string]bool)}
	for _, t := range tools {
		if _, ok := next.always[t.Server]; !ok {
			next.always[t.Server] = r.hooks.AlwaysLoad(t.Server)
		}
	}
	told, changed := r.registerTools(prev, next, tools)
	if !changed && next.searchOn && (prev.setting != next.setting || !maps.Equal(prev.always, next.always)) {
		// The lists are what they were, but which tools are listed may
		// not be.
		r.tellLocked(next)
	}
	r.registerOthers()
	r.cur.Store(next)
}

// setting is the tool search setting: Options.ToolSearch, else the
// config's.
func (r *registry) setting() config.ToolSearch {
	if r.override != nil {
		return *r.override
	}
	return r.hooks.ToolSearch()
}

// registerTools registers the tools of next, the manager's tools, in place
// of prev's: it adds the new and changed ones, removes the rest, and adds or
// removes the tools of tool search as it switches on or off. It fills
// next.tools, and returns the log line of a switch, or nil, and whether
// any tool was registered or removed.
func (r *registry) registerTools(prev, next *exposure, tools []switchboard.Tool) (told func(), changed bool) {
	// change is called before each registration.
	change := func() { changed = true }
	switched := next.searchOn != prev.searchOn
	if switched {
		change()
		told = toolSearchSwitched(r.logger, next.setting, next.searchOn, next.count)
	}
	if switched && !next.searchOn {
		// Before a server's own tool of the same name is registered.
		r.server.RemoveTools(searchNames(r.serve.search)...)
	}
	refused, clashed := make(map[string]switchboard.Tool), make(map[string]switchboard.Tool)
	for _, t := range tools {
		if next.searchOn && r.isSearchTool(t.Name) {
			// Left out while search is on, and registered once it is off.
			if old, ok := r.clashed[t.Name]; !ok || !old.Same(t) {
				r.logger.Warn("tool not exposed", "tool", t.Name, "server", t.Server, "error", "tool search has a tool of that name; call_tool reaches it")
			}
			clashed[t.Name] = t
			continue
		}
		if old, ok := prev.tool(t.Name); ok && old.tool.Same(t) {
			next.add(t, old.def)
			continue
		}
		if old, ok := r.refused[t.Name]; ok && old.Same(t) {
			refused[t.Name] = t // warned of already
			continue
		}
		def, err := exposable(t.Definition())
		if err == nil {
			change()
			err = register(func() { r.server.AddTool(def, r.serve.callTool(def.Name)) })
		}
		if err != nil {
			r.logger.Warn("tool not exposed", "tool", t.Name, "server", t.Server, "error", err)
			refused[t.Name] = t
			continue
		}
		next.add(t, def)
	}
	r.refused, r.clashed = refused, clashed
	var gone []string
	for _, old := range prev.tools {
		if _, ok := next.byName[old.tool.Name]; !ok {
			gone = append(gone, old.tool.Name)
		}
	}
	if len(gone) > 0 {
		change()
		r.server.RemoveTools(gone...)
	}
	if next.searchOn {
		r.registerSearch(prev, next, change)
	}
	return told, changed
}

// add adds t, registered as def, to e's tools.
func (e *exposure) add(t switchboard.Tool, def *mcp.Tool) {
	e.byName[t.Name] = len(e.tools)
	e.tools = append(e.tools, exposedTool{t, def})
}

// registerSearch registers the tools of tool search for next, while
// search is on: all of them as it switches on, and search_tools again
// when the servers it names changed, each after change. It fills
// next.search and next.servers.
func (r *registry) registerSearch(prev, next *exposure, change func()) {
	switched := !prev.searchOn
	if r.serve.searchDef != nil {
		next.servers = namedServers(r.m.Status(), r.hooks.Description)
	}
	next.search = make([]*mcp.Tool, len(r.serve.search))
	for i, t := range r.serve.search {
		def := t.def
		if i == 0 && r.serve.searchDef != nil {
			if !switched && slices.Equal(prev.servers, next.servers) {
				def = prev.search[0] // unchanged: not registered again
			} else {
				def = r.serve.searchDef(next.servers)
			}
		}
		next.search[i] = def
		if switched || def != prev.search[i] {
			change()
			r.server.AddTool(def, t.handle)
		}
	}
}

// registerOthers registers the manager's prompts, resources and resource
// templates in place of those registered: those that are new or differ,
// and removes the rest. It runs on a new revision alone, and these lists
// are short: it compares them by content.
func (r *registry) registerOthers() {
	ctx := hooks.Unfiltered(context.Background()) // every session's list is filtered for it
	var defs [numKinds][]definition
	for _, p := range r.m.Prompts(ctx, nil) {
		def := p.Prompt
		defs[kindPrompt] = append(defs[kindPrompt], definition{def.Name, p.Server, def, func() { r.server.AddPrompt(def, r.serve.getPrompt) }})
	}
	for _, res := range r.m.Resources(ctx, nil) {
		def := res.Resource
		defs[kindResource] = append(defs[kindResource], definition{def.URI, res.Server, def, func() { r.server.AddResource(def, r.serve.readResource) }})
	}
	for _, t := range r.m.ResourceTemplates(ctx, nil) {
		def := t.Template
		defs[kindTemplate] = append(defs[kindTemplate], definition{def.URITemplate, t.Server, def, func() { r.server.AddResourceTemplate(def, r.serve.readResource) }})
	}
	r.expose(kindPrompt, defs[kindPrompt], r.server.RemovePrompts)
	r.expose(kindResource, defs[kindResource], r.server.RemoveResources)
	r.expose(kindTemplate, defs[kindTemplate], r.server.RemoveResourceTemplates)
}

// A definition is one prompt, resource or template to register.
type definition struct {
	key    string // its name, or URI
	server string
	def    any // what add registers, to compare
	add    func()
}

// expose registers defs, the wanted definitions of kind, in place of those
// registered now: it adds what is new or changed and removes the rest with
// remove.
func (r *registry) expose(kind int, defs []definition, remove func(...string)) {
	if r.others[kind] == nil {
		r.others[kind] = make(map[string]any)
	}
	exposed := r.others[kind]
	want := make(map[string]bool, len(defs))
	for _, d := range defs {
		want[d.key] = true
		if old, ok := exposed[d.key]; ok && reflect.DeepEqual(old, d.def) {
			continue
		}
		if err := register(d.add); err != nil {
			r.logger.Warn(kindNames[kind]+" not exposed", kindNames[kind], d.key, "server", d.server, "error", err)
			delete(want, d.key)
			continue
		}
		exposed[d.key] = d.def
	}
	var gone []string
	for key := range exposed {
		if !want[key] {
			gone = append(gone, key)
			delete(exposed, key)
		}
	}
	if len(gone) > 0 {
		slices.Sort(gone)
		remove(gone...)
	}
}

// tellToolsChanged has the go-sdk tell every client session
// notifications/tools/list_changed, while tool search is on: the go-sdk
// offers no notification to one session, and tells every session after
// any change to its tools, an unchanged one registered again included
// (TestSDKTellsEverySessionOfAToolAddedAgain holds it to that), so
// search_tools is registered again. The sessions whose list did not change
// are spared it (see views.spareUnchanged). docs/go-sdk.md asks the
// go-sdk for a notification to one session (its issue #666).
func (r *registry) tellToolsChanged() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if cur := r.cur.Load(); cur != nil {
		r.tellLocked(cur)
	}
}

// registered returns the definitions of kind registered, by name or URI,
// once no sync is in progress.
func (r *registry) registered(kind int) map[string]any {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return maps.Clone(r.others[kind])
}

// tellAll has the go-sdk tell every client session list_changed of every
// kind of list that holds anything, by registering one definition of each
// again: each session whose view changed is told, the rest are spared
// (see views.spareUnchanged).
func (r *registry) tellAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.cur.Load()
	switch {
	case e == nil:
		return
	case e.searchOn:
		r.tellLocked(e)
	case len(e.tools) > 0:
		def := e.tools[0].def
		r.server.AddTool(def, r.serve.callTool(def.Name))
	}
	for kind := range r.others {
		for _, def := range r.others[kind] {
			switch def := def.(type) {
			case *mcp.Prompt:
				r.server.AddPrompt(def, r.serve.getPrompt)
			case *mcp.Resource:
				r.server.AddResource(def, r.serve.readResource)
			case *mcp.ResourceTemplate:
				r.server.AddResourceTemplate(def, r.serve.readResource)
			}
			break // one of each kind tells every session
		}
	}
}

func (r *registry) tellLocked(e *exposure) {
	if e.searchOn && len(r.serve.search) > 0 {
		r.server.AddTool(e.search[0], r.serve.search[0].handle)
	}
}

// isSearchTool reports whether name is one of the tools of tool search.
func (r *registry) isSearchTool(name string) bool {
	return slices.ContainsFunc(r.serve.search, func(t searchTool) bool { return t.def.Name == name })
}

// A serverAbout is a server that search_tools names, and what it is for.
type serverAbout struct{ name, about string }

// namedServers returns the servers that search_tools names: those that
// expose tools, in the config's order, each with what it is for: its
// config description (description returns it), else the first sentence
// of its instructions, else nothing.
func namedServers(statuses switchboard.Status, description func(server string) string) []serverAbout {
	var out []serverAbout
	for _, st := range statuses {
		if st.Rejected || st.Tools == 0 {
			continue
		}
		about := strings.Join(strings.Fields(description(st.Name)), " ")
		if about == "" {
			about = firstSentence(st.Instructions, maxSentence)
		}
		out = append(out, serverAbout{st.Name, about})
	}
	return out
}

// searchNames returns the names of tools.
func searchNames(tools []searchTool) []string {
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.def.Name
	}
	return names
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
