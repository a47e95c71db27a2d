package gateway

import (
	"context"
	"encoding/json"
	"hash/maphash"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard"
)

// The go-sdk has one list of each kind for all sessions, and tells every
// session list_changed after any change to one (see registry.tellAll). A
// session's lists are its own, filtered for its identity and holding what
// it found, so the gateway remembers what each session last listed and
// spares it a list_changed while what it would list is what it has: a
// change to a server that it may not see, another session's finds, or a
// reload whose rules leave its rights as they were.

// Kinds of list, as a session remembers them.
const (
	toolsList = iota
	promptsList
	resourcesList // resources and templates: one list_changed tells both
	numLists
)

// listOfNotification is the kind of list each list_changed is about.
var listOfNotification = map[string]int{
	"notifications/tools/list_changed":     toolsList,
	"notifications/prompts/list_changed":   promptsList,
	"notifications/resources/list_changed": resourcesList,
}

// listedViews is what a session last listed, of each kind.
type listedViews struct {
	listed [numLists]bool
	// tools are the definitions listed, as registered: a tool that
	// changes is registered anew, so its definition is another.
	tools []*mcp.Tool
	// sums hash the prompts, and the resources and templates, listed.
	sums [numLists]uint64
}

// A viewOf is what a session would list of one kind now: tools by
// definition, the others by a hash of their content.
type viewOf struct {
	tools []*mcp.Tool
	sum   uint64
}

// views computes the sessions' views and spares them list_changed when
// theirs did not change.
type views struct {
	m         *switchboard.Manager
	registry  *registry
	sessions  *sessions
	stateless bool // Options.Stateless: no session is followed
}

// tools returns the tools the session st (nil for one not followed) of req
// would list now: its view of the registry's exposure (see session.list),
// of the tools its identity may see; and the exposure.
// With tool search on, the search_tools listed names only the servers of
// which the identity may see a tool.
func (v *views) tools(ctx context.Context, st *session, req mcp.Request) ([]*mcp.Tool, *exposure) {
	tools, e := st.list(v.registry)
	visible := visibleTools(ctx, v.m, v.sessions.query(req))
	tools = keepOnly(tools, func(t *mcp.Tool) bool {
		_, server := e.tool(t.Name)
		return !server || visible[t.Name] // search_tools and call_tool are no server's
	})
	if e.searchOn && v.registry.serve.searchDef != nil {
		if i := slices.IndexFunc(tools, func(t *mcp.Tool) bool { return t.Name == searchToolsName }); i >= 0 {
			tools[i] = e.searchToolsFor(visibleServers(e, visible), v.registry.serve.searchDef)
		}
	}
	return tools, e
}

// visibleServers returns the servers of e's tools that are visible.
func visibleServers(e *exposure, visible map[string]bool) map[string]bool {
	servers := make(map[string]bool)
	for name := range visible {
		if t, ok := e.tool(name); ok {
			servers[t.tool.Server] = true
		}
	}
	return servers
}

// maxSearchDefs bounds the definitions of search_tools an exposure keeps,
// one for each set of servers that some identity sees: rules make few.
// Past it, each list gets a new one, and its session is told list_changed
// at each change of any server.
const maxSearchDefs = 64

// searchToolsFor returns search_tools as it is listed to an identity that
// sees the tools of servers alone: e's own if that is all e names, else
// one that names no other, the same for every list of e's revision that
// asks for the same servers.
func (e *exposure) searchToolsFor(servers map[string]bool, define func([]serverAbout) *mcp.Tool) *mcp.Tool {
	named := keepOnly(e.servers, func(s serverAbout) bool { return servers[s.name] })
	if len(named) == len(e.servers) {
		return e.search[0]
	}
	var key strings.Builder
	for _, s := range named {
		key.WriteString(s.name)
		key.WriteByte(0)
	}
	e.searchDefs.mu.Lock()
	defer e.searchDefs.mu.Unlock()
	if def, ok := e.searchDefs.byServers[key.String()]; ok {
		return def
	}
	def := define(named)
	if e.searchDefs.byServers == nil {
		e.searchDefs.byServers = make(map[string]*mcp.Tool)
	}
	if len(e.searchDefs.byServers) < maxSearchDefs {
		e.searchDefs.byServers[key.String()] = def
	}
	return def
}

// sumSeed seeds the hashes of lists: they are compared within the process
// alone.
var sumSeed = maphash.MakeSeed()

// now returns what the session st of req would list of kind now.
func (v *views) now(ctx context.Context, st *session, kind int, req mcp.Request) viewOf {
	q := v.sessions.query(req)
	var items []any
	switch kind {
	case toolsList:
		tools, _ := v.tools(ctx, st, req)
		return viewOf{tools: tools}
	case promptsList:
		for _, p := range v.m.Prompts(ctx, q) {
			items = append(items, p)
		}
	case resourcesList:
		for _, r := range v.m.Resources(ctx, q) {
			items = append(items, r)
		}
		for _, t := range v.m.ResourceTemplates(ctx, q) {
			items = append(items, t)
		}
	}
	var h maphash.Hash
	h.SetSeed(sumSeed)
	// Definitions came from JSON, and encode again.
	_ = json.NewEncoder(&h).Encode(items)
	return viewOf{sum: h.Sum64()}
}

// record remembers that the session st listed view, of kind.
func (st *session) record(kind int, view viewOf) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.listed.listed[kind] = true
	if kind == toolsList {
		st.listed.tools = view.tools
	} else {
		st.listed.sums[kind] = view.sum
	}
}

// unchanged reports whether what the session listed of kind, if it did,
// is view.
func (st *session) unchanged(kind int, view viewOf) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	switch {
	case !st.listed.listed[kind]:
		return false // what it has, if anything, is unknown
	case kind == toolsList:
		return slices.Equal(st.listed.tools, view.tools)
	}
	return st.listed.sums[kind] == view.sum
}

// recordList remembers what the session of req, which asked for the list
// method from its first page, got: its view now.
func (v *views) recordList(ctx context.Context, method string, req mcp.Request) {
	kind := toolsList
	switch method {
	case "prompts/list":
		kind = promptsList
	case "resources/list", "resources/templates/list":
		kind = resourcesList
	}
	if ss, ok := req.GetSession().(*mcp.ServerSession); ok && !v.stateless {
		if st := v.sessions.of(ss); st != nil {
			st.record(kind, v.now(ctx, st, kind, req))
		}
	}
}

// baseline records, as the session st of req starts (its handshake is
// complete), its views of every kind, as if it had listed them: a change
// from then on is news to it, whether or not it lists.
func (v *views) baseline(ctx context.Context, st *session, req mcp.Request) {
	for kind := range numLists {
		st.record(kind, v.now(ctx, st, kind, req))
	}
}

// spareUnchanged is sending middleware: it sends a session a list_changed
// only if what it would list of that kind now differs from what it last
// listed, or had as it started (see baseline); or if that is unknown (a
// session of the stateless protocol that listens without having listed).
// A session whose handshake is not complete is sent none. Every other
// notification and request goes through.
func (v *views) spareUnchanged(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if kind, ok := listOfNotification[method]; ok {
			if ss, ok := req.GetSession().(*mcp.ServerSession); ok {
				st := v.sessions.following(ss)
				switch {
				case st != nil && st.unchanged(kind, v.now(ctx, st, kind, req)):
					return nil, nil
				case st == nil && ss.InitializeParams() == nil && !listening(req):
					return nil, nil // no handshake yet: nothing to refresh
				}
			}
		}
		return next(ctx, method, req)
	}
}

// listening reports whether the notification req goes to a
// subscriptions/listen stream (the stateless protocol's), which has no
// handshake: the go-sdk names the stream in its _meta.
func listening(req mcp.Request) bool {
	if p := req.GetParams(); p != nil {
		_, ok := p.GetMeta()[mcp.MetaKeySubscriptionID]
		return ok
	}
	return false
}
