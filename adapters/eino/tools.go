// Package einotools gives an Eino agent every tool of a Switchboard
// manager, as Eino tools.
//
// Each tool is a [tool.InvokableTool]: its [Tool.Info] carries the tool's
// public name, description and input schema exactly, and its
// [Tool.InvokableRun] calls [switchboard.Manager.CallTool] with the model's
// JSON arguments, so that a call is routed, validated, replayed after a
// reconnect and cancelled with Eino's context as any call through the
// manager is.
//
// Eino's ToolsNode ends the whole run when a tool returns an error, so a
// tool's failure reaches the model as text instead: an error result as
// its text, and an error of the manager (a server that is down, unknown
// arguments) as the text that [switchboard.DefaultErrorFormatter] gives,
// or the manager's own Options.FormatError. Only a cancellation of the
// caller's context is returned as an error.
//
// [Tools] returns the tools of the moment. The manager's tool set changes
// (list_changed, reconnects, reloads), so call it at each turn and hand the
// result to the run, e.g. with react.WithTools or compose.WithToolList;
// see the package example.
//
// A string holds no image: [EnhancedTools] gives the same tools as Eino
// enhanced tools, whose results carry images and audio as multimodal
// parts (see [Result]).
package einotools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/schema"
	"github.com/eino-contrib/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard"
)

// Tool is one of the manager's tools as an Eino [tool.InvokableTool]. It
// is safe for concurrent use: the ToolsNode runs calls in parallel.
type Tool struct {
	m    *switchboard.Manager
	q    *switchboard.Query
	info *schema.ToolInfo
}

var _ tool.InvokableTool = (*Tool)(nil)

// NewTool returns t, a tool of m, as an Eino tool whose calls go through m
// for q (which may be nil). It fails only if t's input schema cannot be
// read as JSON.
func NewTool(m *switchboard.Manager, q *switchboard.Query, t switchboard.Tool) (*Tool, error) {
	params, err := convertSchema(t.InputSchema())
	if err != nil {
		return nil, fmt.Errorf("tool %s: %w", t.Name, err)
	}
	return newTool(m, q, t, params), nil
}

func newTool(m *switchboard.Manager, q *switchboard.Query, t switchboard.Tool, params *jsonschema.Schema) *Tool {
	return &Tool{m: m, q: q, info: &schema.ToolInfo{
		Name:        t.Name,
		Desc:        t.Description,
		ParamsOneOf: schema.NewParamsOneOfByJSONSchema(params),
	}}
}

// Tools returns the tools that m exposes to q (which may be nil) now, as
// Eino tools, in the manager's order (by public name). Call it again to see
// changes: the tools it returned keep calling through m, and a call of a
// tool that has gone reaches the model as the manager's "no tool named"
// text.
//
// A tool's input schema is converted once, and reused while
// [switchboard.Tool.Same] reports the tool unchanged, so that calling
// Tools at each turn costs little more than the manager's list.
func Tools(ctx context.Context, m *switchboard.Manager, q *switchboard.Query) ([]tool.BaseTool, error) {
	return convert(m, q, m.Tools(ctx, q))
}

// Search returns the tools that [switchboard.Manager.SearchTools] finds for
// query, best first, as Eino tools: a set to offer the model for one
// turn, for a host with more tools than a model takes at once. Eino
// v0.7.36 has no dynamic tool selection middleware to plug it into; hand
// the set to the turn as [Tools]' is handed.
func Search(ctx context.Context, m *switchboard.Manager, query string, opts *switchboard.SearchOptions) ([]tool.BaseTool, error) {
	matches, err := m.SearchTools(ctx, query, opts)
	if err != nil {
		return nil, err
	}
	var q *switchboard.Query
	if opts != nil {
		q = opts.Query
	}
	found := make([]switchboard.Tool, len(matches))
	for i, mt := range matches {
		found[i] = mt.Tool
	}
	return convert(m, q, found)
}

// convert returns ts, tools of m, as Eino tools, reusing the schemas that
// m's cache holds for them, and drops from the cache the tools m no
// longer has.
func convert(m *switchboard.Manager, q *switchboard.Query, ts []switchboard.Tool) ([]tool.BaseTool, error) {
	c := cacheOf(m)
	c.keep(m, ts)
	out := make([]tool.BaseTool, 0, len(ts))
	var errs []error
	for _, t := range ts {
		params, err := c.params(t)
		if err != nil {
			errs = append(errs, fmt.Errorf("tool %s: %w", t.Name, err))
			continue
		}
		out = append(out, newTool(m, q, t, params))
	}
	return out, errors.Join(errs...)
}

// Info returns the tool's name, description and parameters, as the model
// is to see them. The caller may change the result, but not the
// parameters' schema, which the tools of later turns share.
func (t *Tool) Info(context.Context) (*schema.ToolInfo, error) {
	info := *t.info
	return &info, nil
}

// InvokableRun calls the tool through the manager with argumentsInJSON, a
// JSON object ("" means {}), and returns the result's text. An error
// result, and an error of the manager, return text for the model and a nil
// error (see the package documentation); a cancelled ctx returns its
// error.
func (t *Tool) InvokableRun(ctx context.Context, argumentsInJSON string, _ ...tool.Option) (string, error) {
	res, err := call(ctx, t.m, t.q, t.info.Name, argumentsInJSON)
	if err != nil {
		return "", err
	}
	return switchboard.ResultText(res), nil
}

// call calls the tool name through m with argumentsInJSON, as they are,
// and returns an error of the manager as a result for the model (see
// [switchboard.Manager.CallToolForModel]); it returns an error only once
// ctx is done.
func call(ctx context.Context, m *switchboard.Manager, q *switchboard.Query, name, argumentsInJSON string) (*mcp.CallToolResult, error) {
	var args json.RawMessage
	if strings.TrimSpace(argumentsInJSON) != "" {
		args = json.RawMessage(argumentsInJSON)
	}
	return m.CallToolForModel(ctx, q, &mcp.CallToolParams{Name: name, Arguments: args})
}

// UnknownTool returns a handler for Eino's
// compose.ToolsNodeConfig.UnknownToolsHandler. A tool that the model made up,
// or that the node's tool list does not have, is called through the
// manager all the same: one its servers list now runs, and any other gets
// the manager's answer as its output (there is no tool of that name, and
// the names the model may have meant), so that the run goes on where Eino's
// own answer would end it.
func UnknownTool(m *switchboard.Manager, q *switchboard.Query) func(ctx context.Context, name, input string) (string, error) {
	return func(ctx context.Context, name, input string) (string, error) {
		res, err := call(ctx, m, q, name, input)
		if err != nil {
			return "", err
		}
		return switchboard.ResultText(res), nil
	}
}
