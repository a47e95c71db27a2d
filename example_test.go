package switchboard_test

import (
	"context"
	"fmt"
	"log"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/config"
)

// greeter returns an MCP server with one tool, to stand for a real server in
// these examples.
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

// inProcess dials servers that run in this process instead of the command
// or URL of their config entry.
func inProcess(servers map[string]*mcp.Server) func(context.Context, config.Server) (mcp.Transport, error) {
	return func(ctx context.Context, srv config.Server) (mcp.Transport, error) {
		serverSide, clientSide := mcp.NewInMemoryTransports()
		if _, err := servers[srv.Name].Connect(ctx, serverSide, nil); err != nil {
			return nil, err
		}
		return clientSide, nil
	}
}

func Example() {
	cfg, err := config.Parse("mcp.json", []byte(`{
		"mcpServers": {
			"hello": {"command": "greeter-server"}, // run in process below
		}
	}`))
	if err != nil {
		log.Fatal(err)
	}
	m := switchboard.New(cfg, &switchboard.Options{
		Dial: inProcess(map[string]*mcp.Server{"hello": greeter()}),
	})
	defer m.Close()

	ctx := context.Background()
	if err := m.Connect(ctx); err != nil {
		log.Fatal(err)
	}
	for _, t := range m.Tools(ctx, nil) {
		fmt.Printf("%s (%s on %s): %s\n", t.Name, t.Original, t.Server, t.Tool.Description)
	}
	res, err := m.CallTool(ctx, "hello__greet", map[string]any{"name": "Ada"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	// Output:
	// hello__greet (greet on hello): Says hello.
	// Hello, Ada!
}

func ExampleManager_Status() {
	cfg, err := config.Parse("mcp.json", []byte(`{"mcpServers": {
		"hello":  {"command": "greeter-server"},
		"broken": {"command": "switchboard-example-no-such-command"},
		"off":    {"command": "x", "enabled": false}
	}}`))
	if err != nil {
		log.Fatal(err)
	}
	servers := map[string]*mcp.Server{"hello": greeter()}
	m := switchboard.New(cfg, &switchboard.Options{
		Dial: func(ctx context.Context, srv config.Server) (mcp.Transport, error) {
			if servers[srv.Name] == nil {
				return nil, fmt.Errorf("command %q not found", srv.Command)
			}
			return inProcess(servers)(ctx, srv)
		},
	})
	defer m.Close()
	if err := m.Connect(context.Background()); err != nil {
		log.Fatal(err)
	}
	for _, s := range m.Status() {
		fmt.Printf("%s: %s, %d tools, error: %v\n", s.Name, s.State, s.Tools, s.Err)
	}
	fmt.Println("ready:", m.Ready())
	// Output:
	// hello: connected, 1 tools, error: <nil>
	// broken: failed, 0 tools, error: server "broken": connect: command "switchboard-example-no-such-command" not found
	// off: disabled, 0 tools, error: <nil>
	// ready: true
}

func ExampleManager_Subscribe() {
	cfg, err := config.Parse("mcp.json", []byte(`{"mcpServers": {"hello": {"command": "greeter-server"}}}`))
	if err != nil {
		log.Fatal(err)
	}
	m := switchboard.New(cfg, &switchboard.Options{Dial: inProcess(map[string]*mcp.Server{"hello": greeter()})})
	changed := make(chan []string, 1)
	unsubscribe := m.Subscribe(func(ev switchboard.Event) {
		if ev.Kind == switchboard.EventChanged {
			changed <- ev.Tools.Added
		}
	})
	defer unsubscribe()
	defer m.Close()
	if err := m.Connect(context.Background()); err != nil {
		log.Fatal(err)
	}
	fmt.Println("added:", <-changed)
	// Output:
	// added: [hello__greet]
}
