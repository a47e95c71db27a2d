//lint:file-ignore SA1019 Switchboard forwards logging for as long as servers and clients use it.

package gateway

import (
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/hooks"
)

// requests sees every request from clients before the go-sdk handles it:
// the handshake and lists wait, briefly, for servers still making their
// first connection, and find the registry up to date (see settle); a
// tools/list is the session's view (see session.view); it records logging
// levels, and completes the handshake's answer with what the servers
// offer.
type requests struct {
	m         *switchboard.Manager
	hooks     hooks.Gateway
	registry  *registry
	sessions  *sessions
	views     *views
	stateless bool // Options.Stateless: no session keeps its finds
}

// settle waits for the servers making their first connection, no longer
// than the startup gate (see [hooks.Gateway]), and brings the registry up
// to the manager's view: the revision that would do it may still be on its
// way.
func (q *requests) settle(ctx context.Context) {
	q.hooks.Settle(ctx)
	q.registry.sync()
}

func (q *requests) intercept(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "initialize", "server/discover", "tools/list", "prompts/list", "resources/list", "resources/templates/list":
			q.settle(ctx)
		}
		if method == "tools/list" {
			return q.listTools(ctx, req)
		}
		var reached bool
		if method == "resources/read" {
			ctx = context.WithValue(ctx, readReachedKey{}, &reached)
		}
		res, err := next(ctx, method, req)
		if err != nil {
			if params, ok := req.GetParams().(*mcp.ReadResourceParams); ok && !reached && isResourceNotFound(err) {
				// The go-sdk's own answer for a URI that nothing
				// registered matches, which does not name it.
				err = resourceNotFound(params.URI)
			}
			return res, err
		}
		switch method {
		case "prompts/list", "resources/list", "resources/templates/list":
			filterList(ctx, q.m, q.sessions.query(req), res)
			if firstPage(req) {
				q.views.recordList(method, req, res)
			}
		case "logging/setLevel":
			params, _ := req.GetParams().(*mcp.SetLoggingLevelParams)
			if ss, ok := req.GetSession().(*mcp.ServerSession); ok && params != nil {
				q.sessions.setLoggingLevel(ctx, ss, params.Level)
			}
		case "initialize":
			if r, ok := res.(*mcp.InitializeResult); ok {
				q.describe(&r.Capabilities, &r.Instructions)
			}
		case "server/discover":
			if r, ok := res.(*mcp.DiscoverResult); ok {
				q.describe(&r.Capabilities, &r.Instructions)
			}
		}
		return res, err
	}
}

// listTools answers a tools/list with the session's view of the
// registry's exposure, of the tools its identity may see, a page of
// mcp.DefaultPageSize tools at a time, as the go-sdk pages its own.
func (q *requests) listTools(ctx context.Context, req mcp.Request) (*mcp.ListToolsResult, error) {
	var st *session
	if ss, ok := req.GetSession().(*mcp.ServerSession); ok && !q.stateless {
		st = q.sessions.of(ss)
	}
	var cursor string
	if params, ok := req.GetParams().(*mcp.ListToolsParams); ok && params != nil {
		cursor = params.Cursor
	}
	tools, e := q.views.tools(ctx, st, req)
	if st != nil && cursor == "" {
		st.record("tools/list", viewOf{tools: tools})
	}
	tools, next, err := pageOf(tools, cursor, mcp.DefaultPageSize)
	if err != nil {
		return nil, err
	}
	res := &mcp.ListToolsResult{Tools: tools, NextCursor: next}
	res.CacheScope = "public" // as the go-sdk says of its own lists
	if e.searchOn || q.sessions.query(req) != nil {
		res.CacheScope = "private" // each session, or each identity, has its own
	}
	return res, nil
}

// firstPage reports whether req lists from the start, without a cursor.
func firstPage(req mcp.Request) bool {
	var cursor string
	switch p := req.GetParams().(type) {
	case *mcp.ListPromptsParams:
		cursor = p.Cursor
	case *mcp.ListResourcesParams:
		cursor = p.Cursor
	case *mcp.ListResourceTemplatesParams:
		cursor = p.Cursor
	}
	return cursor == ""
}

// pageOf returns the page of tools, at most size, that follows cursor (""
// for the first), and the cursor of the next one ("" for none). A cursor
// holds the name of the page's last tool: the next page begins after it,
// or, if it is gone and tools are sorted by name, after where it was.
func pageOf(tools []*mcp.Tool, cursor string, size int) (_ []*mcp.Tool, next string, _ error) {
	start := 0
	if cursor != "" {
		last, err := base64.RawURLEncoding.DecodeString(cursor)
		byName := func(a, b *mcp.Tool) int { return strings.Compare(a.Name, b.Name) }
		i := slices.IndexFunc(tools, func(t *mcp.Tool) bool { return t.Name == string(last) })
		switch {
		case err == nil && i >= 0:
			start = i + 1
		case err == nil && slices.IsSortedFunc(tools, byName):
			start, _ = slices.BinarySearchFunc(tools, string(last), func(t *mcp.Tool, name string) int { return strings.Compare(t.Name, name) })
		default:
			return nil, "", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("tools/list: cursor %q is not one this gateway gave, or the list changed since: list again from the start", cursor)}
		}
	}
	tools = tools[start:]
	if len(tools) > size {
		tools = tools[:size]
		next = base64.RawURLEncoding.EncodeToString([]byte(tools[size-1].Name))
	}
	return tools, next, nil
}

// describe sets what the gateway advertises: tools, the prompts and
// resources it exposes (the go-sdk has set those) or its servers offer,
// with list_changed, and what else its servers offer that it forwards, no
// more; and their instructions, labelled by server.
func (q *requests) describe(caps **mcp.ServerCapabilities, instructions *string) {
	c := *caps
	if c == nil {
		c = &mcp.ServerCapabilities{}
		*caps = c
	}
	var (
		text                                         []string
		logs, completes, subscribe, prompts, listing bool
	)
	for _, st := range q.m.Status() {
		if st.Instructions != "" {
			text = append(text, fmt.Sprintf("## %s\n%s", st.Name, st.Instructions))
		}
		if sc := st.Capabilities; sc != nil {
			logs = logs || sc.Logging != nil
			completes = completes || sc.Completions != nil
			subscribe = subscribe || sc.Resources != nil && sc.Resources.Subscribe
			prompts = prompts || sc.Prompts != nil
			listing = listing || sc.Resources != nil
		}
	}
	if prompts && c.Prompts == nil {
		c.Prompts = &mcp.PromptCapabilities{ListChanged: true}
	}
	if listing && c.Resources == nil {
		c.Resources = &mcp.ResourceCapabilities{ListChanged: true}
	}
	c.Logging, c.Completions = nil, nil
	if logs {
		c.Logging = &mcp.LoggingCapabilities{}
	}
	if completes {
		c.Completions = &mcp.CompletionCapabilities{}
	}
	if c.Resources != nil {
		c.Resources.Subscribe = subscribe && !q.stateless
	}
	if q.registry.exposure().searchOn {
		text = append([]string{searchInstructions}, text...)
	}
	if len(text) > 0 {
		*instructions = strings.Join(text, "\n\n")
	}
}
