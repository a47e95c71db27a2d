package einotools_test

import (
	"context"
	"fmt"
	"log"

	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard"
	einotools "github.com/switchboard-mcp/switchboard/adapters/eino"
	"github.com/switchboard-mcp/switchboard/config"
)

// greeter stands for a real MCP server.
func greeter() *mcp.Server {
	server := mcp.NewServer(&mcp.Implementation{Name: "greeter", Version: "v1"}, nil)
	type args struct {
		Name string `json:"name" jsonschema:"who to greet"`
	}
	mcp.AddTool(server, &mcp.Tool{Name: "greet", Description: "Says hello."},
		func(_ context.Context, _ *mcp.CallToolRequest, in args) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Hello, " + in.Name + "!"}}}, nil, nil
		})
	return server
}

// The manager's tools in an Eino ToolsNode. An agent asks Tools again at
// each turn, so that it sees the tools of the moment: with a react agent,
// opts, _ := react.WithTools(ctx, tools...) and agent.Generate(ctx, msgs,
// opts...).
func Example() {
	cfg, err := config.Parse("mcp.json", []byte(`{"mcpServers": {"hello": {"command": "greeter-server"}}}`))
	if err != nil {
		log.Fatal(err)
	}
	opts := &switchboard.Options{
		// Run the server in process, instead of its command.
		Dial: func(ctx context.Context, _ config.Server) (mcp.Transport, error) {
			serverSide, clientSide := mcp.NewInMemoryTransports()
			if _, err := greeter().Connect(ctx, serverSide, nil); err != nil {
				return nil, err
			}
			return clientSide, nil
		},
		StartupGate: -1, // wait for every server, for a stable output
		Cache:       switchboard.CacheOff,
	}
	ctx := context.Background()

	// The five lines.
	m := switchboard.New(cfg, opts)
	defer m.Close()
	if err := m.Connect(ctx); err != nil {
		log.Fatal(err)
	}
	tools, err := einotools.Tools(ctx, m, nil)
	if err != nil {
		log.Fatal(err)
	}
	node, err := compose.NewToolNode(ctx, &compose.ToolsNodeConfig{Tools: tools})
	if err != nil {
		log.Fatal(err)
	}

	// What a model's tool calls become. A call that fails reads as the
	// error's text, and the run goes on.
	out, err := node.Invoke(ctx, &schema.Message{Role: schema.Assistant, ToolCalls: []schema.ToolCall{
		{ID: "1", Function: schema.FunctionCall{Name: "hello__greet", Arguments: `{"name":"Ada"}`}},
		{ID: "2", Function: schema.FunctionCall{Name: "hello__greet", Arguments: `{"name":42}`}},
	}})
	if err != nil {
		log.Fatal(err)
	}
	info, _ := tools[0].Info(ctx)
	fmt.Println(info.Name+":", info.Desc)
	fmt.Println(out[0].Content)
	fmt.Println(out[1].Content)
	// Output:
	// hello__greet: Says hello.
	// Hello, Ada!
	// validating "arguments": validating root: validating /properties/name: type: 42 has type "integer", want "string"
}

// camera stands for a real MCP server whose tool returns an image.
func camera() *mcp.Server {
	server := mcp.NewServer(&mcp.Implementation{Name: "camera", Version: "v1"}, nil)
	server.AddTool(&mcp.Tool{Name: "snap", Description: "Takes a picture.", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.TextContent{Text: "A picture:"},
				&mcp.ImageContent{MIMEType: "image/png", Data: []byte("\x89PNG")},
			}}, nil
		})
	return server
}

// Enhanced tools in a ToolsNode: an image reaches the model as an image
// part of the tool message.
func ExampleEnhancedTools() {
	cfg, err := config.Parse("mcp.json", []byte(`{"mcpServers": {"cam": {"command": "camera-server"}}}`))
	if err != nil {
		log.Fatal(err)
	}
	opts := &switchboard.Options{
		Dial: func(ctx context.Context, _ config.Server) (mcp.Transport, error) {
			serverSide, clientSide := mcp.NewInMemoryTransports()
			if _, err := camera().Connect(ctx, serverSide, nil); err != nil {
				return nil, err
			}
			return clientSide, nil
		},
		StartupGate: -1,
		Cache:       switchboard.CacheOff,
	}
	ctx := context.Background()

	m := switchboard.New(cfg, opts)
	defer m.Close()
	if err := m.Connect(ctx); err != nil {
		log.Fatal(err)
	}
	tools, err := einotools.EnhancedTools(ctx, m, nil)
	if err != nil {
		log.Fatal(err)
	}
	node, err := compose.NewToolNode(ctx, &compose.ToolsNodeConfig{Tools: tools})
	if err != nil {
		log.Fatal(err)
	}

	out, err := node.Invoke(ctx, &schema.Message{Role: schema.Assistant, ToolCalls: []schema.ToolCall{
		{ID: "1", Function: schema.FunctionCall{Name: "cam__snap", Arguments: `{}`}},
	}})
	if err != nil {
		log.Fatal(err)
	}
	for _, part := range out[0].UserInputMultiContent {
		switch part.Type {
		case schema.ChatMessagePartTypeText:
			fmt.Println(part.Type, part.Text)
		case schema.ChatMessagePartTypeImageURL:
			fmt.Println(part.Type, part.Image.MIMEType, *part.Image.Base64Data)
		}
	}
	// Output:
	// text A picture:
	// image_url image/png iVBORw==
}
