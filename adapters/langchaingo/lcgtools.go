// Package lcgtools gives a LangChainGo agent every tool of a Switchboard
// [switchboard.Manager], as native tools of github.com/tmc/langchaingo:
//
//	m := switchboard.New(cfg, &switchboard.Options{StartupGate: -1}) // Connect waits for every server
//	defer m.Close()
//	if err := m.Connect(ctx); err != nil { ... }
//	agent := agents.NewOneShotAgent(llm, lcgtools.DescribeInputs(lcgtools.Tools(ctx, m, nil))) // its prompt shows no schemas: the descriptions carry them
//	out, err := chains.Run(ctx, agents.NewExecutor(agent), "What is 2 + 3?")
//
// [Tools] returns each tool as a [tools.Tool]: its Name is the public name,
// its Description the tool's own, and Call sends the model's JSON arguments
// through [switchboard.Manager.CallTool], with its routing, validation,
// reconnects, safe replay and the caller's context. [Definitions] returns
// the same tools as [llms.Tool] function definitions whose Parameters is
// the input schema exactly, for [llms.WithTools]; [Execute] and
// [ToolMessages] run the [llms.ToolCall]s of a model's answer.
//
// # Errors
//
// The agents.Executor of LangChainGo ends the whole run when a tool's Call
// returns an error; what a model should read goes back as the tool's
// output. So Call returns an error only when ctx is done. An error result
// of the tool (IsError) is returned as its text, and an error of the call
// (an unavailable server, invalid arguments, an unknown tool, a call that
// may or may not have run) as the text of the manager's Options.FormatError
// or, where that is unset or gives nil, of
// [switchboard.DefaultErrorFormatter]: the words a model can act on, such
// as "Do not retry this tool". Input that is not a JSON object is answered
// the same way, as invalid arguments.
//
// # The current tools
//
// A [tools.Tool] of this package holds its public name and reads nothing
// else at call time: [Tools] and [Definitions] read the manager's current
// tools, one atomic load each, and are cheap to call on every turn.
// LangChainGo agents fix their tools when they are made (the prompt of a
// one-shot or conversational agent lists them, and agents.Executor looks
// them up once per run), so make the agent, or set its Tools, from [Tools]
// at each turn: a server's list_changed, a reconnect or a reload then shows
// at the next turn. A tool kept from an older set that its server no longer
// lists answers, as the manager does, that there is no such tool.
//
// # Content
//
// A tool's output in LangChainGo is a string. Text content is given as it
// is, one part a line; structured content, when there is no text, as its
// JSON; a text resource as its text. Images, audio and binary resources
// cannot be held by a string: each is named in a line such as
// "[image: image/png, 1234 bytes]" (see [switchboard.ResultText]).
package lcgtools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/tools"

	"github.com/switchboard-mcp/switchboard"
)

// Tool is one tool of a manager, as a LangChainGo [tools.Tool]. It is safe
// for concurrent use.
type Tool struct {
	m        *switchboard.Manager
	q        *switchboard.Query
	tool     switchboard.Tool
	describe bool // Description shows the input schema; see DescribeInputs
}

var _ tools.Tool = (*Tool)(nil)

// Tools returns the manager's current tools for q (which may be nil), in
// the manager's order (by public name), each a [*Tool]. See the package
// documentation for how an agent's next turn sees a change.
func Tools(ctx context.Context, m *switchboard.Manager, q *switchboard.Query) []tools.Tool {
	ts := m.Tools(ctx, q)
	out := make([]tools.Tool, len(ts))
	for i, t := range ts {
		out[i] = &Tool{m: m, q: q, tool: t}
	}
	return out
}

// Definitions returns the manager's current tools for q (which may be nil)
// as function definitions for models that call functions natively, in the
// order of [Tools]: pass them with [llms.WithTools], and run the calls of
// the answer with [Execute] or [ToolMessages].
func Definitions(ctx context.Context, m *switchboard.Manager, q *switchboard.Query) []llms.Tool {
	ts := m.Tools(ctx, q)
	out := make([]llms.Tool, len(ts))
	for i, t := range ts {
		out[i] = Definition(t)
	}
	return out
}

// Definition returns t as a function definition: its public name, its
// description, and a copy of its input schema as the parameters.
func Definition(t switchboard.Tool) llms.Tool {
	return llms.Tool{Type: "function", Function: &llms.FunctionDefinition{
		Name:        t.Name,
		Description: t.Description,
		Parameters:  t.InputSchema(),
	}}
}

// Name returns the tool's public name.
func (t *Tool) Name() string { return t.tool.Name }

// Description returns the tool's description, as its server gives it, or,
// for a tool of [DescribeInputs], that description and its input schema.
func (t *Tool) Description() string {
	if !t.describe {
		return t.tool.Description
	}
	schema, err := json.Marshal(t.tool.InputSchema())
	if err != nil { // cannot happen: the manager's schemas are JSON
		return t.tool.Description
	}
	return fmt.Sprintf("%s Input: a JSON object with this schema: %s", t.tool.Description, schema)
}

// DescribeInputs returns ts with each [*Tool] replaced by one whose
// Description ends with its input schema; other tools are kept as they
// are. Agents that show a model only the names and descriptions of their
// tools (the one-shot and conversational agents, and, in v0.1.14, the
// OpenAI functions agent, which declares every tool's parameters as one
// string) need it for the model to know what arguments to write.
func DescribeInputs(ts []tools.Tool) []tools.Tool {
	out := make([]tools.Tool, len(ts))
	for i, t := range ts {
		if lt, ok := t.(*Tool); ok {
			described := *lt
			described.describe = true
			t = &described
		}
		out[i] = t
	}
	return out
}

// Definition returns the tool as a function definition (see [Definition]).
func (t *Tool) Definition() llms.Tool { return Definition(t.tool) }

// Switchboard returns the manager's view of the tool: its server, original
// name, annotations and full definition.
func (t *Tool) Switchboard() switchboard.Tool { return t.tool }

// Call calls the tool with input, the model's arguments as a JSON object
// ("" for none), through the manager, and returns the result as text. An
// error result, or an error of the call, is returned as text for the model
// (see the package documentation); Call returns an error only when ctx is
// done.
func (t *Tool) Call(ctx context.Context, input string) (string, error) {
	return call(ctx, t.m, t.q, t.tool.Name, input)
}

// Execute runs a tool call of a model's answer ([llms.ContentChoice]
// ToolCalls) through the manager, for q (which may be nil), and returns the
// part that answers it, with the call's ID and name. Errors are handled as
// [Tool.Call] handles them: the only error returned is the context's, or
// one for a call without a function.
func Execute(ctx context.Context, m *switchboard.Manager, q *switchboard.Query, tc llms.ToolCall) (llms.ToolCallResponse, error) {
	if tc.FunctionCall == nil {
		return llms.ToolCallResponse{}, fmt.Errorf("lcgtools: tool call %q has no function", tc.ID)
	}
	text, err := call(ctx, m, q, tc.FunctionCall.Name, tc.FunctionCall.Arguments)
	if err != nil {
		return llms.ToolCallResponse{}, err
	}
	return llms.ToolCallResponse{ToolCallID: tc.ID, Name: tc.FunctionCall.Name, Content: text}, nil
}

// ToolMessages runs the tool calls of a model's answer one after another,
// with [Execute], and returns one message with the role tool for each, in
// their order, as the providers of LangChainGo want them: append the
// model's message with the calls and then these to the conversation.
func ToolMessages(ctx context.Context, m *switchboard.Manager, q *switchboard.Query, calls []llms.ToolCall) ([]llms.MessageContent, error) {
	msgs := make([]llms.MessageContent, 0, len(calls))
	for _, tc := range calls {
		part, err := Execute(ctx, m, q, tc)
		if err != nil {
			return msgs, err
		}
		msgs = append(msgs, llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{part}})
	}
	return msgs, nil
}

// call is the one way a tool runs: it calls name through m with the
// model's input as it is (the manager refuses one that is not a JSON
// object, before anything is sent; decoding it here would round its large
// numbers), and turns what comes back into the text for the model.
func call(ctx context.Context, m *switchboard.Manager, q *switchboard.Query, name, input string) (string, error) {
	var args json.RawMessage
	if input = strings.TrimSpace(input); input != "" {
		args = json.RawMessage(input)
	}
	res, err := m.CallToolForModel(ctx, q, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return "", fmt.Errorf("lcgtools: call tool %q: %w", name, err) // the context is done
	}
	return switchboard.ResultText(res), nil
}
