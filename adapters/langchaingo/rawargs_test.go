package lcgtools_test

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard"
	lcgtools "github.com/switchboard-mcp/switchboard/adapters/langchaingo"
	"github.com/switchboard-mcp/switchboard/config"
)

// TestArgumentsGoAsTheModelWroteThem: the model's JSON reaches the server
// byte for byte: a number past 2^53 is not rounded on the way.
func TestArgumentsGoAsTheModelWroteThem(t *testing.T) {
	server := mcp.NewServer(&mcp.Implementation{Name: "raw"}, nil)
	server.AddTool(&mcp.Tool{Name: "raw", InputSchema: map[string]any{"type": "object"}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(req.Params.Arguments)}}}, nil
		})
	dial := func(ctx context.Context, _ config.Server) (mcp.Transport, error) {
		serverSide, clientSide := mcp.NewInMemoryTransports()
		if _, err := server.Connect(ctx, serverSide, nil); err != nil {
			return nil, err
		}
		return clientSide, nil
	}
	cfg := &config.Config{Servers: []config.Server{{Name: "s", Type: config.Stdio, Command: "in-memory"}}}
	m := switchboard.New(cfg, &switchboard.Options{Dial: dial, StartupGate: -1, Cache: switchboard.CacheOff})
	defer m.Close()
	if err := m.Connect(t.Context()); err != nil {
		t.Fatal(err)
	}
	tools := lcgtools.Tools(t.Context(), m, nil)
	if len(tools) != 1 {
		t.Fatalf("tools %v", tools)
	}
	const input = `{"id":9007199254740993}`
	if out, err := tools[0].Call(t.Context(), input); err != nil || out != input {
		t.Errorf("Call = %q, %v; want the arguments as written, %s", out, err, input)
	}
}
