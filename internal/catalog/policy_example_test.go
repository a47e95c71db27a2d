package catalog_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/switchboard-mcp/switchboard/internal/catalog"
)

func ExampleFilterTools() {
	v := catalog.Build([]catalog.Source{{
		Server: "issues",
		Prefix: "gh",
		Tools:  []*mcp.Tool{{Name: "list_issues"}, {Name: "delete_issue"}},
	}})
	// Readers see only the tools whose original name starts with "list_".
	readOnly := func(_ context.Context, fc catalog.FilterContext, tool *mcp.Tool) (bool, error) {
		return fc.Query.Agent != "reader" || strings.HasPrefix(tool.Name, "list_"), nil
	}
	for _, agent := range []string{"admin", "reader"} {
		tools := catalog.FilterTools(context.Background(), v.Tools(), catalog.Query{Agent: agent}, readOnly, nil)
		fmt.Print(agent, ":")
		for _, t := range tools {
			fmt.Print(" ", t.Name)
		}
		fmt.Println()
	}
	// Output:
	// admin: gh__delete_issue gh__list_issues
	// reader: gh__list_issues
}

func ExampleNewApprovalPolicy() {
	// As decoded from a config file.
	policy, err := catalog.NewApprovalPolicy(map[string]any{
		"always": map[string]any{"tool_names": []any{"delete_issue"}},
		"never":  map[string]any{"tool_names": []any{"list_issues"}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fc := catalog.FilterContext{Server: "issues"}
	for _, name := range []string{"delete_issue", "list_issues", "create_issue"} {
		fmt.Println(name, policy.Requires(context.Background(), fc, &mcp.Tool{Name: name}))
	}

	_, err = catalog.NewApprovalPolicy(map[string]any{"delete_issue": "alwyas"})
	fmt.Println(err)
	// Output:
	// delete_issue true
	// list_issues false
	// create_issue false
	// approval policy: tool "delete_issue": "alwyas" is not "always" or "never"
}
