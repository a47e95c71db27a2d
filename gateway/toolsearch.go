package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard"
)

// The tools of tool search (design §2).
const (
	searchToolsName = "search_tools"
	callToolName    = "call_tool"
)

// maxSearchLimit is the largest limit search_tools takes.
const maxSearchLimit = 50

// MaxFoundPerSession is how many of the tools a client session found with
// search_tools its tools/list holds, besides search_tools, call_tool and
// the alwaysLoad servers' tools: the most recently found, so that the list
// stays small however long the session searches. A tool that dropped out
// stays callable, directly and through call_tool.
const MaxFoundPerSession = 32

// searchInstructions tell the model how to use the two tools.
const searchInstructions = "Most tools are not listed: call search_tools with what you want done, in words, to find the tools that do it. " +
	"Call a tool it found with call_tool, giving the tool's name and its arguments, or directly once it appears in your tool list."

var (
	searchToolsDef = &mcp.Tool{
		Name:        searchToolsName,
		Description: "Find the tools that do what you ask: say in words what you want done. Returns the best matches, best first, with each tool's name, server, description and input schema.",
		InputSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"query": map[string]any{"type": "string", "minLength": 1, "description": "What you want done, in words"},
				"limit": map[string]any{"type": "integer", "minimum": 1, "maximum": maxSearchLimit, "default": switchboard.DefaultSearchLimit, "description": "How many tools to return"},
			},
			"required": []any{"query"},
		},
	}
	callToolDef = &mcp.Tool{
		Name:        callToolName,
		Description: "Call a tool that search_tools found, by its name, with its arguments. Returns the tool's result.",
		InputSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"name":      map[string]any{"type": "string", "description": "The tool's name, as search_tools gave it"},
				"arguments": map[string]any{"type": "object", "description": "The tool's arguments, as its input schema asks"},
			},
			"required": []any{"name"},
		},
	}
)

// A foundTool is one match of search_tools, as its result gives it.
type foundTool struct {
	Name        string  `json:"name"`
	Server      string  `json:"server"`
	Title       string  `json:"title"`
	Description string  `json:"description"`
	InputSchema any     `json:"inputSchema"`
	Score       float64 `json:"score"`
}

// searchTools is search_tools: it ranks the tools the client may see by its
// query, and adds those it found to the session's tools/list.
func (g *Gateway) searchTools(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args struct {
		Query *string          `json:"query"`
		Limit *json.RawMessage `json:"limit"`
	}
	if err := decodeArguments(req.Params.Arguments, &args); err != nil {
		return badInput(searchToolsName, err), nil
	}
	if args.Query == nil {
		return badInput(searchToolsName, errors.New(`"query" is required: say in words what you want done`)), nil
	}
	limit, err := searchLimit(args.Limit)
	if err != nil {
		return badInput(searchToolsName, err), nil
	}
	matches, err := g.m.SearchTools(ctx, *args.Query, &switchboard.SearchOptions{Limit: limit})
	switch {
	case errors.Is(err, switchboard.ErrInvalidSearch): // the limit is checked: the query has no word
		return badInput(searchToolsName, errors.New(`"query" has no word to search for: say in words what you want done`)), nil
	case err != nil:
		return toolAnswer(ctx, nil, err)
	}
	found := make([]foundTool, len(matches))
	names := make([]string, len(matches))
	for i, m := range matches {
		def := m.Definition()
		found[i] = foundTool{Name: m.Name, Server: m.Server, Title: def.Title, Description: def.Description, InputSchema: def.InputSchema, Score: m.Score}
		names[i] = m.Name
	}
	structured := map[string]any{"tools": found}
	text, err := json.Marshal(structured)
	if err != nil {
		return toolAnswer(ctx, nil, fmt.Errorf("search tools: %w", err))
	}
	if ss := req.Session; ss != nil && !g.opts.Stateless {
		g.addFound(ss, names)
	}
	content := []mcp.Content{&mcp.TextContent{Text: string(text)}}
	if len(*args.Query) > switchboard.MaxSearchQueryBytes {
		content = append(content, &mcp.TextContent{Text: fmt.Sprintf(
			"The query is %d bytes long: only its first words, within %d bytes, were searched.", len(*args.Query), switchboard.MaxSearchQueryBytes)})
	}
	return &mcp.CallToolResult{Content: content, StructuredContent: structured}, nil
}

// callNamedTool is call_tool: it calls the named tool as a direct
// tools/call of it would be, on the same path, with call_tool's _meta (a
// progress token, say).
func (g *Gateway) callNamedTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args struct {
		Name      *string         `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := decodeArguments(req.Params.Arguments, &args); err != nil {
		return badInput(callToolName, err), nil
	}
	if args.Name == nil || strings.TrimSpace(*args.Name) == "" {
		return badInput(callToolName, errors.New(`"name" is required: the name of a tool that search_tools found`)), nil
	}
	name := *args.Name
	arguments, err := objectArguments(args.Arguments)
	if err != nil {
		return badInput(callToolName, fmt.Errorf(`"arguments" of tool %q must be a JSON object`, name)), nil
	}
	params := *req.Params
	params.Name, params.Arguments = name, arguments
	call := *req
	call.Params = &params
	res, err := g.forwardCall(ctx, name, &call)
	if unknown := (*switchboard.UnknownToolError)(nil); errors.As(err, &unknown) {
		if len(unknown.Suggestions) == 0 {
			return badInput(callToolName, fmt.Errorf("%w: search_tools finds tools by what they do", unknown)), nil
		}
		return badInput(callToolName, unknown), nil
	}
	return toolAnswer(ctx, res, err)
}

// objectArguments returns the arguments call_tool was given for its tool: a
// JSON object, null or absent; or a JSON string that holds an object, as
// models often send it ("{\"path\": \"/a\"}"), whose object it returns.
func objectArguments(raw json.RawMessage) (json.RawMessage, error) {
	var s string
	if trimmed := bytes.TrimSpace(raw); len(trimmed) == 0 || trimmed[0] != '"' || json.Unmarshal(trimmed, &s) != nil {
		return raw, checkArguments(raw)
	}
	object := bytes.TrimSpace([]byte(s))
	if len(object) == 0 || object[0] != '{' || !json.Valid(object) {
		return nil, errors.New("a string that holds no JSON object")
	}
	return object, nil
}

// decodeArguments decodes a tool call's arguments, which must be a JSON
// object or absent, into v, naming the field that does not fit.
func decodeArguments(raw json.RawMessage, v any) error {
	if err := checkArguments(raw); err != nil {
		return errors.New("arguments must be a JSON object")
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) && typeErr.Field != "" {
			// The fields decoded are strings; the rest stay raw.
			return fmt.Errorf("%q must be a %s, not a JSON %s", typeErr.Field, typeErr.Type, typeErr.Value)
		}
		return fmt.Errorf("arguments: %w", err)
	}
	return nil
}

// searchLimit is the limit search_tools was given: a whole number from 1
// to maxSearchLimit, or the default if raw is absent. The number may come
// as a string ("3"), as models often send it.
func searchLimit(raw *json.RawMessage) (int, error) {
	if raw == nil || string(*raw) == "null" {
		return switchboard.DefaultSearchLimit, nil
	}
	number := []byte(*raw)
	var s string
	if json.Unmarshal(number, &s) == nil {
		number = []byte(strings.TrimSpace(s))
	}
	var f float64
	if err := json.Unmarshal(number, &f); err != nil || f != math.Trunc(f) || f < 1 || f > maxSearchLimit {
		return 0, fmt.Errorf(`"limit" is %s: want a whole number from 1 to %d`, *raw, maxSearchLimit)
	}
	return int(f), nil
}

// badInput is the error result of a call of tool with input that does not
// fit: a result, so that the model reads what to correct, as the go-sdk
// answers arguments that do not fit a tool's input schema.
func badInput(tool string, err error) *mcp.CallToolResult {
	return &mcp.CallToolResult{
		IsError: true,
		Content: []mcp.Content{&mcp.TextContent{Text: tool + ": " + err.Error()}},
	}
}

// isSearchTool reports whether name is one of the tools of tool search.
func isSearchTool(name string) bool { return name == searchToolsName || name == callToolName }

// toolsList answers req, a tools/list, while tool search is on; else nil.
func (g *Gateway) toolsList(req mcp.Request) *mcp.ListToolsResult {
	g.mu.Lock()
	on := g.searchOn
	g.mu.Unlock()
	if !on {
		return nil
	}
	ss, _ := req.GetSession().(*mcp.ServerSession)
	return g.searchList(ss)
}

// searchList is the tools/list of session ss while tool search is on:
// search_tools, call_tool, the tools of the alwaysLoad servers and those
// the session found, in that order, each once.
func (g *Gateway) searchList(ss *mcp.ServerSession) *mcp.ListToolsResult {
	var found []string
	if ss != nil && !g.opts.Stateless {
		found = g.sessions.listed(g, ss)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	tools := []*mcp.Tool{searchToolsDef, callToolDef}
	listed := map[string]bool{searchToolsName: true, callToolName: true}
	always := make(map[string]bool)
	for _, name := range g.toolOrder {
		t := g.tools[name]
		load, ok := always[t.server]
		if !ok {
			load = g.hooks.AlwaysLoad(t.server)
			always[t.server] = load
		}
		if load && !listed[name] {
			listed[name] = true
			tools = append(tools, t.def)
		}
	}
	for _, name := range found {
		if t, ok := g.tools[name]; ok && !listed[name] {
			listed[name] = true
			tools = append(tools, t.def)
		}
	}
	res := &mcp.ListToolsResult{Tools: tools}
	res.CacheScope = "private" // each session has its own
	return res
}

// addFound adds names to the tools session ss found, most recent last, up
// to MaxFoundPerSession; if its list grew, the session is told list_changed.
func (g *Gateway) addFound(ss *mcp.ServerSession, names []string) {
	if g.sessions.addFound(g, ss, names) {
		g.notifyToolsChanged()
	}
}

// notifyToolsChanged has the go-sdk send tools/list_changed: it offers no
// notification to one session, and sends it after any change to its
// tools, so search_tools is registered again, unchanged. The sessions
// whose list did not change are spared it: see toolsListChanged.
// TestSDKTellsEverySessionOfAToolAddedAgain pins the go-sdk's part, and
// docs/go-sdk.md asks it for a notification to one session.
func (g *Gateway) notifyToolsChanged() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.searchOn {
		g.server.AddTool(searchToolsDef, g.searchTools)
	}
}

// toolsListChanged is sending middleware: while tool search is on, it
// sends a session tools/list_changed only if its list may have changed (see
// sessions.stale); every other notification and request goes through.
func (g *Gateway) toolsListChanged(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == "notifications/tools/list_changed" {
			g.mu.Lock()
			on := g.searchOn
			g.mu.Unlock()
			if ss, ok := req.GetSession().(*mcp.ServerSession); ok && on && !g.sessions.takeStale(ss) {
				return nil, nil
			}
		}
		return next(ctx, method, req)
	}
}

// An exposedTool is an upstream tool registered with the go-sdk server.
type exposedTool struct {
	server string
	def    *mcp.Tool
}
