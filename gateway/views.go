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

// listsOfNotification are the lists each list_changed tells of.
var listsOfNotification = map[string][]string{
	"notifications/tools/list_changed":     {"tools/list"},
	"notifications/prompts/list_changed":   {"prompts/list"},
	"notifications/resources/list_changed": {"resources/list", "resources/templates/list"},
}

// A viewOf is what a session got, or would get, of one list: the tools by
// their definitions as registered (a tool that changes is registered
// anew, so its definition is another), the other lists by a hash of what
// they hold.
type viewOf struct {
	tools []*mcp.Tool
	sum   uint64
}

func (a viewOf) same(b viewOf) bool { return a.sum == b.sum && slices.Equal(a.tools, b.tools) }

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

// sumOf hashes items, in any order.
func sumOf[T any](items []T) uint64 {
	encoded := make([]string, 0, len(items))
	for _, item := range items {
		// Definitions came from JSON, and encode again.
		b, _ := json.Marshal(item)
		encoded = append(encoded, string(b))
	}
	slices.Sort(encoded)
	var h maphash.Hash
	h.SetSeed(sumSeed)
	for _, e := range encoded {
		h.WriteString(e)
		h.WriteByte(0)
	}
	return h.Sum64()
}

// now returns what the session st of req would get of the list method now:
// for a list but tools/list, the definitions the registry has registered
// (which the go-sdk answers from) that its identity may see.
func (v *views) now(ctx context.Context, st *session, method string, req mcp.Request) viewOf {
	if method == "tools/list" {
		tools, _ := v.tools(ctx, st, req)
		return viewOf{tools: tools}
	}
	q := v.sessions.query(req)
	keep := make(map[string]bool)
	kind := kindPrompt
	switch method {
	case "prompts/list":
		for _, p := range v.m.Prompts(ctx, q) {
			keep[p.Name] = true
		}
	case "resources/list":
		kind = kindResource
		for _, r := range v.m.Resources(ctx, q) {
			keep[r.Resource.URI] = true
		}
	case "resources/templates/list":
		kind = kindTemplate
		for _, t := range v.m.ResourceTemplates(ctx, q) {
			keep[t.Template.URITemplate] = true
		}
	}
	var items []any
	for key, def := range v.registry.registered(kind) {
		if keep[key] {
			items = append(items, def)
		}
	}
	return viewOf{sum: sumOf(items)}
}

// record remembers that the session st got view of the list method.
func (st *session) record(method string, view viewOf) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.listed == nil {
		st.listed = make(map[string]viewOf)
	}
	st.listed[method] = view
}

// forget forgets what the session st got of the list method: it is
// unknown.
func (st *session) forget(method string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	delete(st.listed, method)
}

// got returns what the session st last got of the list method, if known.
func (st *session) got(method string) (viewOf, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	view, ok := st.listed[method]
	return view, ok
}

// unchanged reports whether the session st of req got some of methods,
// and would get the same of each of them now.
func (v *views) unchanged(ctx context.Context, st *session, methods []string, req mcp.Request) bool {
	known := false
	for _, method := range methods {
		view, ok := st.got(method)
		if !ok {
			continue
		}
		if !view.same(v.now(ctx, st, method, req)) {
			return false
		}
		known = true
	}
	return known
}

// recordList remembers what the session of req got of the list method,
// res (filtered for it), asked from its first page: a hash of its items if
// that page holds them all, else nothing (what it has is unknown).
func (v *views) recordList(method string, req mcp.Request, res mcp.Result) {
	ss, ok := req.GetSession().(*mcp.ServerSession)
	if !ok || v.stateless {
		return
	}
	st := v.sessions.of(ss)
	if st == nil {
		return
	}
	var sum uint64
	var next string
	switch r := res.(type) {
	case *mcp.ListPromptsResult:
		sum, next = sumOf(r.Prompts), r.NextCursor
	case *mcp.ListResourcesResult:
		sum, next = sumOf(r.Resources), r.NextCursor
	case *mcp.ListResourceTemplatesResult:
		sum, next = sumOf(r.ResourceTemplates), r.NextCursor
	default:
		return
	}
	if next != "" {
		st.forget(method)
		return
	}
	st.record(method, viewOf{sum: sum})
}

// baseline records, as the session st of req starts (its handshake is
// complete), what it would get of every list, as if it had listed them: a
// change from then on is news to it, whether or not it lists.
func (v *views) baseline(ctx context.Context, st *session, req mcp.Request) {
	for _, methods := range listsOfNotification {
		for _, method := range methods {
			st.record(method, v.now(ctx, st, method, req))
		}
	}
}

// spareUnchanged is sending middleware: it sends a session a list_changed
// only if what it would get of one of the lists it tells of differs from
// what it last got, or had as it started (see baseline); or if that is
// unknown (a session of the stateless protocol that listens without having
// listed, a list of several pages).
// A session whose handshake is not complete is sent none. Every other
// notification and request goes through.
func (v *views) spareUnchanged(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if lists, ok := listsOfNotification[method]; ok {
			if ss, ok := req.GetSession().(*mcp.ServerSession); ok {
				st := v.sessions.following(ss)
				switch {
				case st != nil && v.unchanged(ctx, st, lists, req):
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
