package lcgtools_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tmc/langchaingo/agents"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/tools"

	"github.com/switchboard-mcp/switchboard"
	lcgtools "github.com/switchboard-mcp/switchboard/adapters/langchaingo"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// lookup is the schema of a tool with more than flat properties, to show
// that schemas carry over whole.
var lookup = mcptest.ToolSpec{
	Name:        "lookup",
	Description: "Looks a word up.",
	InputSchema: map[string]any{
		"type": "object",
		"properties": map[string]any{
			"word": map[string]any{"type": "string", "minLength": float64(1)},
			"lang": map[string]any{"type": "string", "enum": []any{"en", "fr"}, "default": "en"},
			"opts": map[string]any{"type": "object", "properties": map[string]any{"max": map[string]any{"type": "integer"}}},
		},
		"required": []any{"word"},
	},
}

// TestToolsCarryOver: names, descriptions and input schemas are the
// manager's, exactly, in tools.Tool and llms.Tool alike.
func TestToolsCarryOver(t *testing.T) {
	f := newFleet(t)
	f.add("s", mcptest.Script{Tools: append(mcptest.DefaultTools(), lookup)})
	m := f.manager(nil)
	ctx := t.Context()

	want := m.Tools(ctx, nil)
	ts := lcgtools.Tools(ctx, m, nil)
	defs := lcgtools.Definitions(ctx, m, nil)
	if len(ts) != len(want) || len(defs) != len(want) || len(want) < 2 {
		t.Fatalf("%d tools and %d definitions for the manager's %d", len(ts), len(defs), len(want))
	}
	for i, w := range want {
		if ts[i].Name() != w.Name || ts[i].Description() != w.Description {
			t.Errorf("tool %d = %q: %q, want %q: %q", i, ts[i].Name(), ts[i].Description(), w.Name, w.Description)
		}
		d := defs[i]
		if d.Type != "function" || d.Function == nil || d.Function.Name != w.Name || d.Function.Description != w.Description {
			t.Errorf("definition %d = %+v, want function %q: %q", i, d, w.Name, w.Description)
			continue
		}
		if diff := cmp.Diff(w.InputSchema(), d.Function.Parameters); diff != "" {
			t.Errorf("parameters of %s (-want +got):\n%s", w.Name, diff)
		}
	}
	// The manager's schema is the server's: lookup's comes through whole.
	for _, d := range defs {
		if d.Function.Name == "s__lookup" {
			if diff := cmp.Diff(lookup.InputSchema, d.Function.Parameters); diff != "" {
				t.Errorf("s__lookup's parameters against the server's schema (-want +got):\n%s", diff)
			}
			d.Function.Parameters.(map[string]any)["required"] = nil // the caller's copy
		}
	}
	for _, d := range lcgtools.Definitions(ctx, m, nil) {
		if d.Function.Name == "s__lookup" && !strings.Contains(mustJSON(t, d.Function.Parameters), `"required":["word"]`) {
			t.Error("changing a definition's parameters changed the manager's schema")
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestExecutorRunsTools drives LangChainGo's one-shot agent and its
// executor: each action goes through the manager, and what goes wrong
// reaches the model as an observation instead of ending the run.
func TestExecutorRunsTools(t *testing.T) {
	f := newFleet(t)
	srv := f.add("s", mcptest.Script{})
	m := f.manager(nil)
	ctx := t.Context()
	model := newModel(
		act("s__add", `{"a": 2, "b": 3}`),
		act("s__fail", `{}`),
		act("s__add", `{"a": 1}`),
		act("s__add", `2 + 3`),
		act("s__echo", `{"x": 1}`),
		final("5"),
	)
	steps := run(ctx, t, agents.NewOneShotAgent(model, lcgtools.Tools(ctx, m, nil)))

	got := observations(steps)
	want := []string{
		"5",
		"tool fail failed",
		"The arguments of tool s__add were invalid: ",
		"The arguments of tool s__add were invalid: server \"s\": call tool \"add\": invalid arguments: arguments must be a JSON object.",
		`{"x":1}`,
	}
	if len(got) != len(want) {
		t.Fatalf("observations %q, want %d", got, len(want))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("observation %d = %q, want it to start with %q", i, got[i], want[i])
		}
	}
	if !strings.Contains(got[2], `"b"`) || !strings.Contains(got[2], "Fix them and try again.") {
		t.Errorf("observation of add without b = %q, want the manager's text naming b", got[2])
	}
	if c := srv.Counts(); c.ByTool["add"] != 1 || c.ByTool["fail"] != 1 || c.ByTool["echo"] != 1 {
		t.Errorf("the server ran %v, want add, fail and echo once each: invalid arguments are refused before sending", c.ByTool)
	}
	if out, err := lcgtools.Tools(ctx, m, nil)[2].Call(ctx, " "); err != nil || out != "{}" {
		t.Errorf("s__echo with no input = %q, %v; want {}", out, err)
	}
	first := model.prompt(0)
	for _, line := range []string{"- s__add: Returns the sum of a and b.", "- s__echo: Returns the JSON of its arguments."} {
		if !strings.Contains(first, line) {
			t.Errorf("the model's first prompt lacks %q:\n%s", line, first)
		}
	}
	if last := model.prompt(5); !strings.Contains(last, "Observation: tool fail failed") {
		t.Errorf("the model's last prompt lacks the failed call's observation:\n%s", last)
	}
}

// TestFunctionsAgent drives LangChainGo's OpenAI functions agent with a
// model that answers with a tool call: the call goes through the manager
// and its answer goes back to the model as the tool call's response.
func TestFunctionsAgent(t *testing.T) {
	f := newFleet(t)
	f.add("s", mcptest.Script{})
	m := f.manager(nil)
	ctx := t.Context()
	model := newModel(
		&llms.ContentChoice{ToolCalls: []llms.ToolCall{{ID: "call_1", Type: "function",
			FunctionCall: &llms.FunctionCall{Name: "s__add", Arguments: `{"a":2,"b":3}`}}}},
		final("5"),
	)
	steps := run(ctx, t, agents.NewOpenAIFunctionsAgent(model, lcgtools.Tools(ctx, m, nil)))
	if diff := cmp.Diff([]string{"5"}, observations(steps)); diff != "" {
		t.Errorf("observations (-want +got):\n%s", diff)
	}
	if p := model.prompt(1); !strings.Contains(p, "[call_1 : 5]") {
		t.Errorf("the model's second request lacks the tool call's response:\n%s", p)
	}
}

// TestNativeToolCalls: Definitions go to a model with llms.WithTools, and
// ToolMessages answers the calls of its answer, one tool message each.
func TestNativeToolCalls(t *testing.T) {
	f := newFleet(t)
	f.add("s", mcptest.Script{})
	m := f.manager(nil)
	ctx := t.Context()
	model := newModel(&llms.ContentChoice{ToolCalls: []llms.ToolCall{
		{ID: "c1", Type: "function", FunctionCall: &llms.FunctionCall{Name: "s__add", Arguments: `{"a":2,"b":3}`}},
		{ID: "c2", Type: "function", FunctionCall: &llms.FunctionCall{Name: "s__ad", Arguments: `{}`}},
	}})
	defs := lcgtools.Definitions(ctx, m, nil)
	resp, err := model.GenerateContent(ctx, nil, llms.WithTools(defs))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(defs, model.options[0].Tools); diff != "" {
		t.Errorf("tools the model was given (-want +got):\n%s", diff)
	}
	msgs, err := lcgtools.ToolMessages(ctx, m, nil, resp.Choices[0].ToolCalls)
	if err != nil {
		t.Fatal(err)
	}
	want := []llms.MessageContent{
		{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.ToolCallResponse{ToolCallID: "c1", Name: "s__add", Content: "5"}}},
		{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.ToolCallResponse{ToolCallID: "c2", Name: "s__ad",
			Content: `There is no tool named s__ad; did you mean "s__add"?`}}},
	}
	if diff := cmp.Diff(want, msgs); diff != "" {
		t.Errorf("tool messages (-want +got):\n%s", diff)
	}
	if _, err := lcgtools.Execute(ctx, m, nil, llms.ToolCall{ID: "c3"}); err == nil {
		t.Error("a tool call without a function was executed")
	}
}

// TestManagerFormatErrorWins: the manager's own Options.FormatError gives
// the model its text; the default is only the fallback.
func TestManagerFormatErrorWins(t *testing.T) {
	f := newFleet(t)
	f.add("s", mcptest.Script{})
	m := f.manager(&switchboard.Options{FormatError: func(_ context.Context, tool string, err error) *mcp.CallToolResult {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "house text for " + tool}}}
	}})
	out, err := lcgtools.Tools(t.Context(), m, nil)[0].Call(t.Context(), `{"a": 1}`)
	if err != nil || out != "house text for s__add" {
		t.Errorf("Call = %q, %v; want the manager's formatter's text", out, err)
	}
}

// TestCancelledCallEndsTheRun: a cancelled context is the one error that
// Call returns, so that the executor stops instead of telling the model.
func TestCancelledCallEndsTheRun(t *testing.T) {
	f := newFleet(t)
	f.add("s", mcptest.Script{})
	m := f.manager(nil)
	ts := lcgtools.Tools(t.Context(), m, nil)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	out, err := ts[0].Call(ctx, `{"a": 1, "b": 2}`)
	if !errors.Is(err, context.Canceled) || out != "" {
		t.Errorf("Call on a cancelled context = %q, %v; want context.Canceled", out, err)
	}
	model := newModel(act("s__add", `{"a": 1, "b": 2}`), final("3"))
	_, err = agents.NewExecutor(agents.NewOneShotAgent(model, ts)).Call(ctx, map[string]any{"input": "Do it."})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("executor on a cancelled context = %v, want context.Canceled", err)
	}
}

// TestDescribeInputs: the opt-in description that shows a text agent the
// input schema.
func TestDescribeInputs(t *testing.T) {
	f := newFleet(t)
	f.add("s", mcptest.Script{Tools: []mcptest.ToolSpec{lookup}})
	m := f.manager(nil)
	ctx := t.Context()
	var other tools.Tool = otherTool{}
	ts := lcgtools.DescribeInputs(append(lcgtools.Tools(ctx, m, nil), other))
	want := `Looks a word up. Input: a JSON object with this schema: ` + mustJSON(t, m.Tools(ctx, nil)[0].InputSchema())
	if ts[0].Name() != "s__lookup" || ts[0].Description() != want {
		t.Errorf("described tool = %q: %q, want s__lookup: %q", ts[0].Name(), ts[0].Description(), want)
	}
	if ts[1] != other {
		t.Error("a tool of another kind was changed")
	}
	if d := lcgtools.Tools(ctx, m, nil)[0].Description(); d != "Looks a word up." {
		t.Errorf("the undescribed tool's description = %q", d)
	}
	if out, err := ts[0].Call(ctx, `{"word": "go"}`); err != nil || out != `{"word":"go"}` {
		t.Errorf("described tool's Call = %q, %v", out, err)
	}
}

// otherTool is a tools.Tool of another kind.
type otherTool struct{}

func (otherTool) Name() string                                 { return "other" }
func (otherTool) Description() string                          { return "Another tool." }
func (otherTool) Call(context.Context, string) (string, error) { return "", nil }
