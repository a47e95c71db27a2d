package mcptest_test

import (
	"context"
	"fmt"
	"log"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

func ExampleServer_ConnectInMemory() {
	ctx := context.Background()
	s := mcptest.NewServer(mcptest.Script{Tools: []mcptest.ToolSpec{
		{Name: "greet", Description: "Echoes its arguments."},
		{Name: "broken", Behavior: mcptest.Fail},
	}})
	defer s.Close()

	t, err := s.ConnectInMemory(ctx)
	if err != nil {
		log.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "example", Version: "v1"}, nil).Connect(ctx, t, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()

	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(tool.Name)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "greet", Arguments: map[string]any{"who": "world"}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	fmt.Println(s.Counts().Calls)
	// Output:
	// broken
	// greet
	// {"who":"world"}
	// 1
}
