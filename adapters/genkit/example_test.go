package genkittools_test

import (
	"context"
	"fmt"
	"log"

	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/genkit"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard"
	genkittools "github.com/switchboard-mcp/switchboard/adapters/genkit"
	"github.com/switchboard-mcp/switchboard/config"
)

func Example() {
	cfg, err := config.Parse("mcp.json", []byte(`{"mcpServers": {"hello": {"command": "greeter-server"}}}`))
	if err != nil {
		log.Fatal(err)
	}
	// genkit.Init watches for signals until its context is done.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	g := genkit.Init(ctx)
	model := callsGreet(g) // stands for a real model plugin

	// The five lines:
	m := switchboard.New(cfg, &switchboard.Options{Dial: inProcess(greeter()), StartupGate: -1})
	defer m.Close()
	if err := m.Connect(ctx); err != nil {
		log.Fatal(err)
	}
	resp, err := genkit.Generate(ctx, g, ai.WithModel(model), ai.WithPrompt("Greet Ada."),
		ai.WithTools(genkittools.Tools(ctx, m, nil)...))

	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(resp.Text())
	// Output:
	// hello__greet said: Hello, Ada!
}

// callsGreet defines a model that asks for hello__greet for Ada, then says
// what the tool answered.
func callsGreet(g *genkit.Genkit) ai.Model {
	opts := &ai.ModelOptions{Supports: &ai.ModelSupports{Multiturn: true, Tools: true}}
	return genkit.DefineModel(g, "example/greeter", opts, func(_ context.Context, req *ai.ModelRequest, _ ai.ModelStreamCallback) (*ai.ModelResponse, error) {
		last := req.Messages[len(req.Messages)-1]
		if last.Role == ai.RoleTool {
			r := last.Content[0].ToolResponse
			return &ai.ModelResponse{Message: ai.NewModelTextMessage(fmt.Sprintf("%s said: %v", r.Name, r.Output))}, nil
		}
		call := ai.NewToolRequestPart(&ai.ToolRequest{Name: req.Tools[0].Name, Input: map[string]any{"name": "Ada"}})
		return &ai.ModelResponse{Message: &ai.Message{Role: ai.RoleModel, Content: []*ai.Part{call}}}, nil
	})
}

// greeter returns an MCP server with one tool, to stand for a real server.
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

// inProcess dials server, in this process, for every config entry.
func inProcess(server *mcp.Server) func(context.Context, config.Server) (mcp.Transport, error) {
	return func(ctx context.Context, _ config.Server) (mcp.Transport, error) {
		serverSide, clientSide := mcp.NewInMemoryTransports()
		if _, err := server.Connect(ctx, serverSide, nil); err != nil {
			return nil, err
		}
		return clientSide, nil
	}
}
