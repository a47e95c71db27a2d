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

// noMatch is the text of a search_tools result that found nothing.
const noMatch = "No tool matches: say what you want done in other words."

// maxSearchLimit is the largest limit search_tools takes.
const maxSearchLimit = 50

// searchInstructions tell the model how to use the two tools.
const searchInstructions = "Most tools are not listed: call search_tools with what you want done, in words, to find the tools that do it. " +
	"Call a tool it found with call_tool, giving the tool's name and its arguments, or directly once it appears in your tool list."

var (
	searchToolsDef = &mcp.Tool{
		Name:        searchToolsName,
		Description: "Find the tools that do what you ask: say in words what you want done. Returns the best matches, best first, a line each: the tool's name, what it does and the arguments it requires.",
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

// searchTools is search_tools: it ranks the tools the client may see by its
// query, and adds those it found to the session's tools/list.
func (f *searchFace) searchTools(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
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
	matches, err := f.m.SearchTools(ctx, *args.Query, &switchboard.SearchOptions{Limit: limit})
	switch {
	case errors.Is(err, switchboard.ErrInvalidSearch): // the limit is checked: the query has no word
		return badInput(searchToolsName, errors.New(`"query" has no word to search for: say in words what you want done`)), nil
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
	if ss := req.Session; ss != nil && !f.stateless {
		if st := f.sessions.of(ss); st != nil && st.addFound(names) {
			f.registry.tellToolsChanged()
		}
	}
	text := listing(found)
	if text == "" {
		text = noMatch
	}
	content := []mcp.Content{&mcp.TextContent{Text: text}}
	if len(*args.Query) > switchboard.MaxSearchQueryBytes {
		content = append(content, &mcp.TextContent{Text: fmt.Sprintf(
			"The query is %d bytes long: only its first words, within %d bytes, were searched.", len(*args.Query), switchboard.MaxSearchQueryBytes)})
	}
	return &mcp.CallToolResult{Content: content, StructuredContent: structured}, nil
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
