package gateway_test

import (
	"context"
	"fmt"
	"log"
	"net/http/httptest"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/gateway"
)

func Example() {
	// One upstream server, in process for the example.
	upstream := mcp.NewServer(&mcp.Implementation{Name: "upstream", Version: "v1"}, nil)
	mcp.AddTool(upstream, &mcp.Tool{Name: "ping", Description: "Answers pong."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "pong"}}}, nil, nil
		})
	cfg := &config.Config{Servers: []config.Server{{Name: "net", Command: "upstream"}}}
	m := switchboard.New(cfg, &switchboard.Options{
		Dial: func(ctx context.Context, _ config.Server) (mcp.Transport, error) {
			serverSide, clientSide := mcp.NewInMemoryTransports()
			_, err := upstream.Connect(ctx, serverSide, nil)
			return clientSide, err
		},
		StartupGate: -1, // wait for the server, however busy the machine
	})
	defer m.Close()
	ctx := context.Background()
	if err := m.Connect(ctx); err != nil {
		log.Fatal(err)
	}

	// The gateway serves the manager's tools at /mcp, with /healthz and
	// /readyz beside it.
	g := gateway.New(m, nil)
	defer g.Close()
	httpServer := httptest.NewServer(g.Handler())
	defer httpServer.Close()

	// Any MCP client can now use every upstream through one endpoint.
	client := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "v1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: httpServer.URL + "/mcp"}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "net__ping", Arguments: map[string]any{}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	// Output:
	// pong
}
