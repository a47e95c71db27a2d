package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard"
)

// The tools of tool search (design §2).
const (
	searchToolsName = "search_tools"
	callToolName    = "call_tool"
)

// noMatch is the text of a search_tools result that found nothing.
const noMatch = "No tool matches: say what you want done in other words."

// maxSearchLimit is the largest limit search_tools takes, and the most
// tools it lists of one server.
const maxSearchLimit = 50

// searchToolsAbout is the description of search_tools, before the servers
// it names.
const searchToolsAbout = "Find the tools that do what you ask: say in words what you want done. " +
	"Returns the best matches, best first, a line each: the tool's name, what it does and the arguments it requires. " +
	`To search one server's tools, give its name as "server"; with the query "*", all its tools are listed.`

// listAllQuery is the query that, with a server, lists all its tools.
const listAllQuery = "*"

// The bounds of the list of servers in search_tools' description, which
// every client reads: past them, the servers left are counted.
const (
	maxNamedServers    = 30
	maxServerListBytes = 2048
)

// searchInstructions tell the model how to use the two tools.
const searchInstructions = "Most tools are not listed: call search_tools with what you want done, in words, to find the tools that do it. " +
	"Call a tool it found with call_tool, giving the tool's name and its arguments, or directly once it appears in your tool list."

var (
	searchToolsDef = &mcp.Tool{
		Name:        searchToolsName,
		Description: searchToolsAbout,
		InputSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"query":  map[string]any{"type": "string", "minLength": 1, "description": `What you want done, in words; with "server", "*" lists all its tools`},
				"limit":  map[string]any{"type": "integer", "minimum": 1, "maximum": maxSearchLimit, "default": switchboard.DefaultSearchLimit, "description": "How many tools to return"},
				"server": map[string]any{"type": "string", "description": "Search only this server's tools"},
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

// The search face serves search_tools and call_tool: it finds tools for
// a session, adds them to the session's view, and calls them as a direct
// call would be.
type searchFace struct {
	m         *switchboard.Manager
	sessions  *sessions
	registry  *registry
	forwarder *forwarder
	stateless bool // Options.Stateless: no session keeps its finds
}

// tools returns the tools of tool search, with their handlers,
// search_tools first.
func (f *searchFace) tools() []searchTool {
	return []searchTool{{searchToolsDef, f.searchTools}, {callToolDef, f.callNamedTool}}
}

// searchToolsDefinition is the definition of search_tools, whose
// description names servers, a line each with what it is for: at most
// maxNamedServers, within maxServerListBytes; the rest are counted.
func searchToolsDefinition(servers []serverAbout) *mcp.Tool {
	def := *searchToolsDef
	if len(servers) == 0 {
		return &def
	}
	var b strings.Builder
	b.WriteString(searchToolsAbout)
	b.WriteString("\nThe servers:")
	listed := 0
	for _, s := range servers {
		line := "\n- " + s.name
		if s.about != "" {
			line += ": " + s.about
		}
		if listed == maxNamedServers || b.Len()-len(searchToolsAbout)+len(line) > maxServerListBytes {
			break
		}
		b.WriteString(line)
		listed++
	}
	if n := len(servers) - listed; n > 0 {
		fmt.Fprintf(&b, "\n- and %d more", n)
	}
	def.Description = b.String()
	return &def
}

// searchTools is search_tools: it ranks the tools the client may see by its
// query, and adds those it found to the session's tools/list. With a
// server, it ranks that server's tools alone; and with the query "*" (or
// none), it lists them all by name, up to the limit if one is given, else
// maxSearchLimit, and adds none to the list.
func (f *searchFace) searchTools(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args struct {
		Query  *string          `json:"query"`
		Limit  *json.RawMessage `json:"limit"`
		Server *string          `json:"server"`
	}
	if err := decodeArguments(req.Params.Arguments, &args); err != nil {
		return badInput(searchToolsName, err), nil
	}
	server := ""
	if args.Server != nil {
		server = strings.TrimSpace(*args.Server)
	}
	query := ""
	if args.Query != nil {
		query = *args.Query
	}
	listAllOf := server != "" && (strings.TrimSpace(query) == "" || strings.TrimSpace(query) == listAllQuery)
	if args.Query == nil && !listAllOf {
		return badInput(searchToolsName, errors.New(`"query" is required: say in words what you want done`)), nil
	}
	limit, err := searchLimit(args.Limit)
	if err != nil {
		return badInput(searchToolsName, err), nil
	}
	q := f.sessions.query(req) // only what the caller may call is found
	var matches []switchboard.ToolMatch
	var more int // the server's tools that a listing leaves out
	if server == "" {
		matches, err = f.m.SearchTools(ctx, query, &switchboard.SearchOptions{Limit: limit, Query: q})
	} else {
		if args.Limit == nil && listAllOf {
			limit = maxSearchLimit
		}
		var bad error
		matches, more, bad, err = f.searchServer(ctx, q, server, query, limit, listAllOf)
		if bad != nil {
			return badInput(searchToolsName, bad), nil
		}
	}
	switch {
	case errors.Is(err, switchboard.ErrInvalidSearch): // the limit is checked: the query has no word
		return badInput(searchToolsName, errors.New(`"query" has no word to search for: say in words what you want done, or give "server" and the query "*" to list a server's tools`)), nil
	case err != nil:
		return toolAnswer(ctx, nil, err)
	}
	found := make([]foundTool, len(matches))
	names := make([]string, len(matches))
	for i, m := range matches {
		found[i] = newFoundTool(m)
		names[i] = m.Name
	}
	structured := map[string]any{"tools": found}
	if ss := req.Session; ss != nil && !f.stateless && !listAllOf {
		if st := f.sessions.of(ss); st != nil && st.addFound(names) {
			f.registry.tellToolsChanged()
		}
	}
	text := listing(found)
	if text == "" {
		text = noMatch
	}
	content := []mcp.Content{&mcp.TextContent{Text: text}}
	if more > 0 {
		content = append(content, &mcp.TextContent{Text: fmt.Sprintf(
			"%s has %d more tools: search them with words as the query, and this server.", server, more)})
	}
	if len(query) > switchboard.MaxSearchQueryBytes {
		content = append(content, &mcp.TextContent{Text: fmt.Sprintf(
			"The query is %d bytes long: only its first words, within %d bytes, were searched.", len(query), switchboard.MaxSearchQueryBytes)})
	}
	return &mcp.CallToolResult{Content: content, StructuredContent: structured}, nil
}

// searchServer is search_tools with a server: the server's tools that the
// client may see, ranked by query, the best limit; or with all, the first
// limit by name, and how many more it has. A server of which the client
// may see no tool is bad input, which names those it may see tools of.
func (f *searchFace) searchServer(ctx context.Context, q *switchboard.Query, server, query string, limit int, all bool) (matches []switchboard.ToolMatch, more int, bad, err error) {
	visible := f.m.Tools(ctx, q)
	var servers []string
	var own []switchboard.Tool
	for _, t := range visible {
		if t.Server == server {
			own = append(own, t)
		}
		if !slices.Contains(servers, t.Server) {
			servers = append(servers, t.Server)
		}
	}
	if len(own) == 0 {
		slices.Sort(servers)
		names := make([]string, 0, min(len(servers), maxNamedServers))
		for _, s := range servers[:min(len(servers), maxNamedServers)] {
			names = append(names, strconv.Quote(s))
		}
		known := strings.Join(names, ", ")
		if n := len(servers) - len(names); n > 0 {
			known += fmt.Sprintf(" and %d more", n)
		}
		if known == "" {
			known = "none"
		}
		return nil, 0, fmt.Errorf(`unknown server %q: the servers with tools are %s`, server, known), nil
	}
	if all {
		slices.SortFunc(own, func(a, b switchboard.Tool) int { return strings.Compare(a.Name, b.Name) })
		for _, t := range own[:min(len(own), limit)] {
			matches = append(matches, switchboard.ToolMatch{Tool: t})
		}
		return matches, len(own) - len(matches), nil, nil
	}
	// Ranked among all the tools, so that the server's are in the order
	// of a search of all, with their scores.
	ranked, err := f.m.SearchTools(ctx, query, &switchboard.SearchOptions{Limit: len(visible), Query: q})
	if err != nil {
		return nil, 0, nil, err
	}
	for _, m := range ranked {
		if m.Server == server && len(matches) < limit {
			matches = append(matches, m)
		}
	}
	return matches, 0, nil, nil
}

// callNamedTool is call_tool: it calls the named tool as a direct
// tools/call of it would be, on the same path, with call_tool's _meta (a
// progress token, say).
func (f *searchFace) callNamedTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
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
	res, err := f.forwarder.forwardCall(ctx, name, &call)
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
