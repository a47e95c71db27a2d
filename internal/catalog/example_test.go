package catalog_test

import (
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/switchboard-mcp/switchboard/internal/catalog"
)

func ExampleBuild() {
	search := &mcp.Tool{Name: "search", InputSchema: map[string]any{"type": "object"}}
	v := catalog.Build([]catalog.Source{
		{Server: "docs", Prefix: "docs", Tools: []*mcp.Tool{search}},
		{Server: "calendar", Prefix: "calendar", Tools: []*mcp.Tool{search}, Deny: []string{"delete_*"}},
		{Server: "raw", Prefix: "", Tools: []*mcp.Tool{{Name: "test_simple_text"}}},
	})
	for _, t := range v.Tools() {
		fmt.Printf("%s -> %s/%s\n", t.Name, t.Server, t.Original)
	}
	if t, ok := v.Lookup("docs__search"); ok {
		fmt.Println("call", t.Original, "on", t.Server)
	}
	// Output:
	// calendar__search -> calendar/search
	// docs__search -> docs/search
	// test_simple_text -> raw/test_simple_text
	// call search on docs
}
