package catalog_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/switchboard-mcp/switchboard/internal/catalog"
)

func ExampleFilter() {
	v := catalog.Build([]catalog.Source{{
		Server: "issues",
		Prefix: "gh",
		Tools:  []*mcp.Tool{{Name: "list_issues"}, {Name: "delete_issue"}},
	}})
	// Only the tools whose original name starts with "list_".
	readOnly := func(_ context.Context, t catalog.Tool) (bool, error) {
		return strings.HasPrefix(t.Original, "list_"), nil
	}
	describe := func(t catalog.Tool) (string, string) { return t.Server, t.Original }
	for _, t := range catalog.Filter(context.Background(), v.Tools(), "tool", describe, readOnly, nil) {
		fmt.Println(t.Name)
	}
	// Output:
	// gh__list_issues
}

func ExampleParseApproval() {
	// As decoded from a config file.
	rules, err := catalog.ParseApproval(map[string]any{
		"always": map[string]any{"tool_names": []any{"delete_issue"}},
		"never":  map[string]any{"tool_names": []any{"list_issues"}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, name := range []string{"delete_issue", "list_issues", "create_issue"} {
		fmt.Println(name, rules.Requires(name))
	}

	_, err = catalog.ParseApproval(map[string]any{"delete_issue": "alwyas"})
	fmt.Println(err)
	// Output:
	// delete_issue true
	// list_issues false
	// create_issue false
	// approval policy: tool "delete_issue": "alwyas" is not "always" or "never"
}
