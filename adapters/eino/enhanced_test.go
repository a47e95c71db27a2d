package einotools

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

var (
	png = []byte("\x89PNG\r\n\x1a\nfake")
	wav = []byte("RIFF....WAVE")
)

// media serves "shot", which returns a text, an image and an audio clip,
// and "broken", which returns an error result.
func mediaServer() *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "media", Version: "v1"}, nil)
	obj := map[string]any{"type": "object"}
	srv.AddTool(&mcp.Tool{Name: "shot", Description: "Takes a screenshot.", InputSchema: obj},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.TextContent{Text: "the page:"},
				&mcp.ImageContent{MIMEType: "image/png", Data: png},
				&mcp.AudioContent{MIMEType: "audio/wav", Data: wav},
			}}, nil
		})
	srv.AddTool(&mcp.Tool{Name: "broken", InputSchema: obj},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no browser"}}}, nil
		})
	return srv
}

// connectMedia returns a manager connected to mediaServer, as server "m".
func connectMedia(t *testing.T) *switchboard.Manager {
	t.Helper()
	cfg := &config.Config{Servers: []config.Server{{Name: "m", Type: config.Stdio, Command: "in-memory"}}}
	m := switchboard.New(cfg, &switchboard.Options{
		Dial: func(ctx context.Context, _ config.Server) (mcp.Transport, error) {
			serverSide, clientSide := mcp.NewInMemoryTransports()
			ss, err := mediaServer().Connect(ctx, serverSide, nil)
			if err != nil {
				return nil, err
			}
			t.Cleanup(func() { ss.Close() })
			return clientSide, nil
		},
		StartupGate: -1,
		Cache:       switchboard.CacheOff,
	})
	t.Cleanup(func() { m.Close() })
	if err := m.Connect(t.Context()); err != nil {
		t.Fatal(err)
	}
	return m
}

// runParts invokes a ToolsNode over tools with one assistant message that
// calls each of calls (name, JSON arguments), and returns each tool message by
// call ID.
func runParts(t *testing.T, ctx context.Context, tools []tool.BaseTool, calls ...[2]string) (map[string]*schema.Message, error) {
	t.Helper()
	node, err := compose.NewToolNode(ctx, &compose.ToolsNodeConfig{Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	msg := &schema.Message{Role: schema.Assistant}
	for i, c := range calls {
		msg.ToolCalls = append(msg.ToolCalls, schema.ToolCall{
			ID:       string(rune('a' + i)),
			Type:     "function",
			Function: schema.FunctionCall{Name: c[0], Arguments: c[1]},
		})
	}
	out, err := node.Invoke(ctx, msg)
	if err != nil {
		return nil, err
	}
	got := make(map[string]*schema.Message)
	for _, m := range out {
		got[m.ToolCallID] = m
	}
	return got, nil
}

func b64(b []byte) *string {
	s := base64.StdEncoding.EncodeToString(b)
	return &s
}

func textParts(texts ...string) []schema.MessageInputPart {
	var parts []schema.MessageInputPart
	for _, s := range texts {
		parts = append(parts, schema.MessageInputPart{Type: schema.ChatMessagePartTypeText, Text: s})
	}
	return parts
}

func TestEnhancedToolsCarryImagesAndAudio(t *testing.T) {
	m := connectMedia(t)
	tools, err := EnhancedTools(t.Context(), m, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"m__broken", "m__shot"}, infoNames(t, tools)); diff != "" {
		t.Fatalf("names (-want +got):\n%s", diff)
	}
	got, err := runParts(t, t.Context(), tools,
		[2]string{"m__shot", `{}`},
		[2]string{"m__broken", ``},
	)
	if err != nil {
		t.Fatalf("ToolsNode.Invoke: %v", err)
	}
	want := []schema.MessageInputPart{
		{Type: schema.ChatMessagePartTypeText, Text: "the page:"},
		{Type: schema.ChatMessagePartTypeImageURL, Image: &schema.MessageInputImage{MessagePartCommon: schema.MessagePartCommon{Base64Data: b64(png), MIMEType: "image/png"}}},
		{Type: schema.ChatMessagePartTypeAudioURL, Audio: &schema.MessageInputAudio{MessagePartCommon: schema.MessagePartCommon{Base64Data: b64(wav), MIMEType: "audio/wav"}}},
	}
	if diff := cmp.Diff(want, got["a"].UserInputMultiContent); diff != "" {
		t.Errorf("shot's tool message parts (-want +got):\n%s", diff)
	}
	if got["a"].Role != schema.Tool || got["a"].ToolName != "m__shot" {
		t.Errorf("shot's message: role %q, tool %q", got["a"].Role, got["a"].ToolName)
	}
	if diff := cmp.Diff(textParts("no browser"), got["b"].UserInputMultiContent); diff != "" {
		t.Errorf("an error result (-want +got):\n%s", diff)
	}
}

func TestEnhancedToolsErrorsReachTheModelAsText(t *testing.T) {
	m, srv := connect(t, nil, map[string]mcptest.Script{
		"s":    {Tools: []mcptest.ToolSpec{{Name: "fail", Behavior: mcptest.Fail}, {Name: "echo"}}},
		"down": {Tools: []mcptest.ToolSpec{{Name: "echo"}}},
	})
	tools, err := EnhancedTools(t.Context(), m, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Disconnect(t.Context(), "down"); err != nil {
		t.Fatal(err)
	}
	got, err := runParts(t, t.Context(), tools,
		[2]string{"s__fail", `{}`},
		[2]string{"s__echo", `{"a":`},
		[2]string{"down__echo", `{}`},
		[2]string{"s__echo", `{"a":1}`},
	)
	if err != nil {
		t.Fatalf("ToolsNode.Invoke: %v, want text", err)
	}
	one := func(id string) string {
		parts := got[id].UserInputMultiContent
		if len(parts) != 1 || parts[0].Type != schema.ChatMessagePartTypeText {
			t.Errorf("call %s: parts %+v, want one text part", id, parts)
			return ""
		}
		return parts[0].Text
	}
	if s := one("a"); s != "tool fail failed" {
		t.Errorf("an error result: %q", s)
	}
	if s := one("b"); !strings.HasPrefix(s, "The arguments of tool s__echo were invalid: ") || !strings.Contains(s, "arguments must be a JSON object") {
		t.Errorf("arguments that are not JSON: %q", s)
	}
	if s := one("c"); !strings.Contains(s, "unavailable") || !strings.Contains(s, "Do not retry") {
		t.Errorf("a disconnected server: %q, want DefaultErrorFormatter's text", s)
	}
	if s := one("d"); s != `{"a":1}` {
		t.Errorf("echo: %q", s)
	}
	if calls := srv["s"].Counts().Calls; calls != 2 {
		t.Errorf("the server saw %d calls, want 2", calls)
	}

	if info, _ := tools[1].Info(t.Context()); info.Name != "s__echo" {
		t.Fatalf("tools[1] is %s", info.Name)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := tools[1].(*EnhancedTool).InvokableRun(ctx, &schema.ToolArgument{Text: `{}`}); !errors.Is(err, context.Canceled) {
		t.Errorf("InvokableRun with a cancelled context: %v, want context.Canceled", err)
	}
}

func TestResult(t *testing.T) {
	for _, tc := range []struct {
		name string
		res  *mcp.CallToolResult
		want []schema.ToolOutputPart
	}{
		{"image", &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{MIMEType: "image/png", Data: png}}},
			[]schema.ToolOutputPart{{Type: schema.ToolPartTypeImage, Image: &schema.ToolOutputImage{MessagePartCommon: schema.MessagePartCommon{Base64Data: b64(png), MIMEType: "image/png"}}}}},
		{"resources", &mcp.CallToolResult{Content: []mcp.Content{
			&mcp.ResourceLink{URI: "file:///l"},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///t", Text: "body"}},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///b", MIMEType: "application/pdf", Blob: []byte("pdf")}},
		}}, []schema.ToolOutputPart{
			{Type: schema.ToolPartTypeText, Text: "[resource: file:///l]"},
			{Type: schema.ToolPartTypeText, Text: "body"},
			{Type: schema.ToolPartTypeText, Text: "[resource: file:///b, application/pdf, 3 bytes]"},
		}},
		{"structured only", &mcp.CallToolResult{StructuredContent: map[string]any{"n": 1}},
			[]schema.ToolOutputPart{{Type: schema.ToolPartTypeText, Text: `{"n":1}`}}},
		{"empty", &mcp.CallToolResult{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Result(tc.res).Parts); diff != "" {
				t.Errorf("Result (-want +got):\n%s", diff)
			}
		})
	}
}
