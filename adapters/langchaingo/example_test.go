package lcgtools_test

import (
	"context"
	"fmt"
	"log"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tmc/langchaingo/agents"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/fake"
	"github.com/tmc/langchaingo/schema"

	"github.com/switchboard-mcp/switchboard"
	lcgtools "github.com/switchboard-mcp/switchboard/adapters/langchaingo"
	"github.com/switchboard-mcp/switchboard/config"
)

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

// inProcess dials the greeter in this process instead of running the
// command of its config entry.
func inProcess(ctx context.Context, _ config.Server) (mcp.Transport, error) {
	serverSide, clientSide := mcp.NewInMemoryTransports()
	if _, err := greeter().Connect(ctx, serverSide, nil); err != nil {
		return nil, err
	}
	return clientSide, nil
}

// A LangChainGo agent gets every tool of the manager's servers. A fake
// model stands for a real one here: it asks for the tool, then answers.
func Example() {
	cfg, err := config.Parse("mcp.json", []byte(`{"mcpServers": {"hello": {"command": "greeter-server"}}}`))
	if err != nil {
		log.Fatal(err)
	}
	llm := fake.NewFakeLLM([]string{"Action: hello__greet\nAction Input: {\"name\": \"Ada\"}", "Final Answer: I greeted Ada."})
	ctx := context.Background()

	m := switchboard.New(cfg, &switchboard.Options{Dial: inProcess, StartupGate: -1})
	defer m.Close()
	if err := m.Connect(ctx); err != nil {
		log.Fatal(err)
	}
	agent := agents.NewOneShotAgent(llm, lcgtools.Tools(ctx, m, nil))
	out, err := agents.NewExecutor(agent, agents.WithReturnIntermediateSteps()).Call(ctx, map[string]any{"input": "Greet Ada."})
	if err != nil {
		log.Fatal(err)
	}

	for _, step := range out["intermediateSteps"].([]schema.AgentStep) {
		fmt.Printf("%s %s: %s\n", step.Action.Tool, step.Action.ToolInput, step.Observation)
	}
	fmt.Println(out["output"])
	// Output:
	// hello__greet {"name": "Ada"}: Hello, Ada!
	// I greeted Ada.
}

// Definitions are for a model that calls functions natively: pass them
// with llms.WithTools, and answer the ToolCalls of its reply with
// ToolMessages (or Execute, one call at a time).
func ExampleDefinitions() {
	cfg, err := config.Parse("mcp.json", []byte(`{"mcpServers": {"hello": {"command": "greeter-server"}}}`))
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	m := switchboard.New(cfg, &switchboard.Options{Dial: inProcess, StartupGate: -1})
	defer m.Close()
	if err := m.Connect(ctx); err != nil {
		log.Fatal(err)
	}

	for _, d := range lcgtools.Definitions(ctx, m, nil) {
		fmt.Printf("%s: %s %v\n", d.Function.Name, d.Function.Description, d.Function.Parameters.(map[string]any)["required"])
	}
	// The model's reply: resp.Choices[0].ToolCalls.
	reply := []llms.ToolCall{{ID: "call_1", Type: "function", FunctionCall: &llms.FunctionCall{Name: "hello__greet", Arguments: `{"name": "Ada"}`}}}
	msgs, err := lcgtools.ToolMessages(ctx, m, nil, reply)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%+v\n", msgs[0].Parts[0])
	// Output:
	// hello__greet: Says hello. [name]
	// {ToolCallID:call_1 Name:hello__greet Content:Hello, Ada!}
}
