package einotools

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// connect returns a connected manager over scripts, one in-memory server
// per name, and the servers. Both are closed when the test ends.
func connect(t testing.TB, opts *switchboard.Options, scripts map[string]mcptest.Script) (*switchboard.Manager, map[string]*mcptest.Server) {
	t.Helper()
	servers := make(map[string]*mcptest.Server)
	var cfg config.Config
	for name, script := range scripts {
		srv := mcptest.NewServer(script)
		t.Cleanup(func() { srv.Close() })
		servers[name] = srv
		cfg.Servers = append(cfg.Servers, config.Server{Name: name, Type: config.Stdio, Command: "in-memory"})
	}
	var o switchboard.Options
	if opts != nil {
		o = *opts
	}
	o.Dial = func(ctx context.Context, s config.Server) (mcp.Transport, error) {
		return servers[s.Name].ConnectInMemory(ctx)
	}
	o.StartupGate = -1
	o.Cache = switchboard.CacheOff
	m := switchboard.New(&cfg, &o)
	t.Cleanup(func() { m.Close() })
	if err := m.Connect(t.Context()); err != nil {
		t.Fatal(err)
	}
	return m, servers
}

// run invokes a ToolsNode over tools with one assistant message that calls
// each of calls (name, JSON arguments), and returns each tool message's
// content by call ID.
func run(t *testing.T, ctx context.Context, tools []tool.BaseTool, calls ...[2]string) (map[string]string, error) {
	t.Helper()
	msgs, err := runParts(t, ctx, tools, calls...)
	if err != nil {
		return nil, err
	}
	got := make(map[string]string, len(msgs))
	for id, m := range msgs {
		got[id] = m.Content
	}
	return got, nil
}

func infoNames(t *testing.T, tools []tool.BaseTool) []string {
	t.Helper()
	var names []string
	for _, tl := range tools {
		info, err := tl.Info(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, info.Name)
	}
	return names
}

// A schema with what Eino's own decoding loses: extension keywords,
// draft-07 keywords, empty subschemas, zero values, a type list, values
// of types its fields do not take.
var richSchema = map[string]any{
	"type":                 "object",
	"description":          "all of it",
	"x-order":              []any{"q", "n"},
	"definitions":          map[string]any{"word": map[string]any{"type": "string", "minLength": 1}},
	"additionalProperties": false,
	"required":             []any{"q"},
	"properties": map[string]any{
		"q":    map[string]any{"type": "string", "description": "the query", "enum": []any{"a", "b"}, "x-ui": map[string]any{"widget": "text"}},
		"n":    map[string]any{"type": []any{"integer", "null"}, "minimum": 0, "maximum": 10.5, "default": nil},
		"any":  map[string]any{},
		"list": map[string]any{"type": "array", "items": map[string]any{}, "minItems": 0, "uniqueItems": false},
		"ref":  map[string]any{"$ref": "#/definitions/word"},
		"old":  map[string]any{"type": "number", "exclusiveMinimum": true, "minimum": 0},
		"tup":  map[string]any{"type": "array", "items": []any{map[string]any{"type": "string"}, true}},
		"obj": map[string]any{
			"type":       "object",
			"properties": map[string]any{},
			"required":   []any{},
			"anyOf":      []any{map[string]any{"required": []any{"a"}}, map[string]any{"not": map[string]any{"const": nil}}},
		},
	},
}

func TestInfoCarriesTheToolExactly(t *testing.T) {
	m, _ := connect(t, nil, map[string]mcptest.Script{"s": {Tools: []mcptest.ToolSpec{
		{Name: "rich", Description: "Takes every keyword.", InputSchema: richSchema},
		{Name: "bare", Description: "Takes nothing."},
	}}})
	tools, err := Tools(t.Context(), m, nil)
	if err != nil {
		t.Fatal(err)
	}
	byName := make(map[string]switchboard.Tool)
	for _, st := range m.Tools(t.Context(), nil) {
		byName[st.Name] = st
	}
	if diff := cmp.Diff([]string{"s__bare", "s__rich"}, infoNames(t, tools)); diff != "" {
		t.Fatalf("names (-want +got):\n%s", diff)
	}
	for _, tl := range tools {
		info, _ := tl.Info(t.Context())
		st := byName[info.Name]
		if info.Desc != st.Description {
			t.Errorf("%s: description %q, want %q", info.Name, info.Desc, st.Description)
		}
		js, err := info.ToJSONSchema()
		if err != nil {
			t.Fatal(err)
		}
		if info.Name == "s__rich" && (js.Properties == nil || js.Properties.Len() != 8 || js.Properties.Value("q").Enum == nil) {
			t.Errorf("%s: properties not kept as structure: %+v", info.Name, js.Properties)
		}
		got, err := json.Marshal(js)
		if err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(st.InputSchema())
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(decode(t, want), decode(t, got)); diff != "" {
			t.Errorf("%s: schema (-want +got):\n%s", info.Name, diff)
		}
	}
}

func decode(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	d := json.NewDecoder(strings.NewReader(string(b)))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestToolsNodeCallsThroughTheManager(t *testing.T) {
	m, srv := connect(t, nil, map[string]mcptest.Script{"s": {Tools: []mcptest.ToolSpec{
		{Name: "echo"},
		{Name: "add", Behavior: mcptest.Add},
		{Name: "fail", Behavior: mcptest.Fail},
	}}})
	tools, err := Tools(t.Context(), m, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := run(t, t.Context(), tools,
		[2]string{"s__echo", `{"b":2,"a":"x"}`},
		[2]string{"s__add", `{"a":2,"b":3}`},
		[2]string{"s__fail", ``},
		[2]string{"s__add", `{"a":"two"}`},
		[2]string{"s__echo", `{"a":`},
	)
	if err != nil {
		t.Fatalf("ToolsNode.Invoke: %v, want the error result as text", err)
	}
	want := map[string]string{
		"a": `{"a":"x","b":2}`,
		"b": "5",
		"c": "tool fail failed",
	}
	for id, text := range want {
		if got[id] != text {
			t.Errorf("call %s: %q, want %q", id, got[id], text)
		}
	}
	if got["d"] != "tool add: arguments a and b must be numbers" {
		t.Errorf("bad arguments: %q, want the server's error result", got["d"])
	}
	if !strings.HasPrefix(got["e"], "The arguments of tool s__echo were invalid: ") || !strings.Contains(got["e"], "arguments must be a JSON object") {
		t.Errorf("arguments that are not JSON: %q, want DefaultErrorFormatter's invalid-arguments text", got["e"])
	}
	if calls := srv["s"].Counts().Calls; calls != 4 {
		t.Errorf("the server saw %d calls, want the node's 4", calls)
	}
}

func TestManagerErrorsReachTheModelAsText(t *testing.T) {
	m, _ := connect(t, nil, map[string]mcptest.Script{"s": {Tools: []mcptest.ToolSpec{{Name: "echo"}}}})
	tools, err := Tools(t.Context(), m, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Disconnect(t.Context(), "s"); err != nil {
		t.Fatal(err)
	}
	got, err := run(t, t.Context(), tools, [2]string{"s__echo", `{}`})
	if err != nil {
		t.Fatalf("ToolsNode.Invoke: %v, want the manager's text", err)
	}
	if !strings.Contains(got["a"], "unavailable") || !strings.Contains(got["a"], "Do not retry") {
		t.Errorf("a call to a disconnected server: %q, want DefaultErrorFormatter's unavailable text", got["a"])
	}
}

func TestCancellationIsAnError(t *testing.T) {
	m, _ := connect(t, nil, map[string]mcptest.Script{"s": {Tools: []mcptest.ToolSpec{{Name: "hang", Behavior: mcptest.Hang}}}})
	tools, err := Tools(t.Context(), m, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := tools[0].(tool.InvokableTool).InvokableRun(ctx, `{}`); !errors.Is(err, context.Canceled) {
		t.Errorf("InvokableRun with a cancelled context: %v, want context.Canceled", err)
	}
}

func TestCrashMidSession(t *testing.T) {
	for _, tc := range []struct {
		name     string
		readOnly bool
		want     string
	}{
		{"read-only call replayed", true, "2"},
		{"other call reported", false, "may or may not have run"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				m, srv := connect(t, nil, map[string]mcptest.Script{"s": {
					Tools:          []mcptest.ToolSpec{{Name: "count", Behavior: mcptest.Increment, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: tc.readOnly}}},
					CrashAfterCall: 1,
				}})
				tools, err := Tools(t.Context(), m, nil)
				if err != nil {
					t.Fatal(err)
				}
				got, err := run(t, t.Context(), tools, [2]string{"s__count", `{}`})
				if err != nil {
					t.Fatalf("ToolsNode.Invoke: %v, want text", err)
				}
				if !strings.Contains(got["a"], tc.want) {
					t.Errorf("call across the crash: %q, want %q", got["a"], tc.want)
				}
				if calls := srv["s"].Counts().Calls; tc.readOnly && calls != 2 || !tc.readOnly && calls != 1 {
					t.Errorf("the server ran %d calls", calls)
				}
				// The next turn's call goes to the new session.
				mcptest.PassTime(time.Minute)
				got, err = run(t, t.Context(), tools, [2]string{"s__count", `{}`})
				if err != nil || got["a"] == "" || strings.Contains(got["a"], "error") {
					t.Errorf("call after the crash: %q, %v, want a count", got["a"], err)
				}
			})
		})
	}
}

func TestToolSetFollowsTheServer(t *testing.T) {
	m, srv := connect(t, nil, map[string]mcptest.Script{"s": {Tools: []mcptest.ToolSpec{{Name: "old"}}}})
	ctx := t.Context()
	changed := mcptest.Await(m.Subscribe, func(ev switchboard.Event) bool {
		return ev.Kind == switchboard.EventChanged && slices.Contains(ev.Tools.Added, "s__new")
	})
	before, err := Tools(ctx, m, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv["s"].SetTools([]mcptest.ToolSpec{{Name: "new", Description: "New."}})
	select {
	case <-changed:
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	}
	after, err := Tools(ctx, m, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"s__new"}, infoNames(t, after)); diff != "" {
		t.Errorf("tools after the change (-want +got):\n%s", diff)
	}
	// One ToolsNode for the agent; each turn hands it the tools of the
	// moment, as react.WithTools does.
	node, err := compose.NewToolNode(ctx, &compose.ToolsNodeConfig{Tools: before})
	if err != nil {
		t.Fatal(err)
	}
	out, err := node.Invoke(ctx, &schema.Message{Role: schema.Assistant, ToolCalls: []schema.ToolCall{
		{ID: "1", Function: schema.FunctionCall{Name: "s__new", Arguments: `{"x":1}`}},
	}}, compose.WithToolList(after...))
	if err != nil || len(out) != 1 || out[0].Content != `{"x":1}` {
		t.Errorf("the new tool through the turn's list: %v, %v", out, err)
	}
	// A tool of an old list that has gone reads as the manager's text.
	got, err := run(t, ctx, before, [2]string{"s__old", `{}`})
	if err != nil || !strings.Contains(got["a"], "There is no tool named s__old") {
		t.Errorf("a tool that went: %q, %v, want the manager's unknown-tool text", got["a"], err)
	}
}

func TestSearch(t *testing.T) {
	m, _ := connect(t, nil, map[string]mcptest.Script{"s": {Tools: []mcptest.ToolSpec{
		{Name: "screenshot", Description: "Takes a screenshot of a web page."},
		{Name: "weather", Description: "Tells the weather of a city."},
	}}})
	found, err := Search(t.Context(), m, "take a screenshot", &switchboard.SearchOptions{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"s__screenshot"}, infoNames(t, found)); diff != "" {
		t.Errorf("found (-want +got):\n%s", diff)
	}
	got, err := run(t, t.Context(), found, [2]string{"s__screenshot", `{"url":"x"}`})
	if err != nil || got["a"] != `{"url":"x"}` {
		t.Errorf("calling what was found: %q, %v", got["a"], err)
	}
}

// TestUnknownTool: with UnknownTool as the node's handler, a tool the model
// made up gets the manager's answer, and one that is not in the node's list
// but that the server lists now runs; without it, Eino ends the run.
func TestUnknownTool(t *testing.T) {
	m, _ := connect(t, nil, map[string]mcptest.Script{"s": {Tools: []mcptest.ToolSpec{{Name: "echo"}}}})
	msg := &schema.Message{Role: schema.Assistant, ToolCalls: []schema.ToolCall{
		{ID: "a", Type: "function", Function: schema.FunctionCall{Name: "s__ecko", Arguments: `{}`}},
		{ID: "b", Type: "function", Function: schema.FunctionCall{Name: "s__echo", Arguments: `{"x":1}`}},
	}}
	bare, err := compose.NewToolNode(t.Context(), &compose.ToolsNodeConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bare.Invoke(t.Context(), msg); err == nil {
		t.Fatal("Eino's own answer to an unknown tool did not end the run: the test proves nothing")
	}
	node, err := compose.NewToolNode(t.Context(), &compose.ToolsNodeConfig{UnknownToolsHandler: UnknownTool(m, nil)})
	if err != nil {
		t.Fatal(err)
	}
	out, err := node.Invoke(t.Context(), msg)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, o := range out {
		got[o.ToolCallID] = o.Content
	}
	if !strings.Contains(got["a"], `There is no tool named s__ecko; did you mean "s__echo"?`) || got["b"] != `{"x":1}` {
		t.Errorf("answers %q", got)
	}
}
