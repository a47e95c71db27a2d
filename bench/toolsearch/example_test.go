package toolsearch_test

import (
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/bench/toolsearch"
)

// Scoring a ranking: here the baseline, over two tools and two requests.
func ExampleEvaluate() {
	servers := []toolsearch.Server{{Name: "mail", Tools: []*mcp.Tool{
		{Name: "send", Description: "Send an email"},
		{Name: "search", Description: "Search your inbox"},
	}}}
	reqs := []toolsearch.Request{
		{Query: "email Bob the report", Gold: []string{"mail__send"}},
		{Query: "did Bob write back?", Gold: []string{"mail__search"}},
	}
	scores, outcomes := toolsearch.Evaluate(reqs, toolsearch.Baseline(toolsearch.Public(servers)))
	fmt.Println(scores)
	for _, o := range outcomes {
		fmt.Printf("%q: rank %d\n", o.Request.Query, o.Rank)
	}
	// Output:
	// requests=2 recall@1=0.500 recall@5=0.500 recall@10=0.500 mrr=0.500
	// "email Bob the report": rank 1
	// "did Bob write back?": rank 0
}

// The bytes a client carries for every tool of a config, with search off.
func ExampleListBytes() {
	tools := toolsearch.PublicTools([]toolsearch.Server{{Name: "clock", Tools: []*mcp.Tool{
		{Name: "now", Description: "The time", InputSchema: map[string]any{"type": "object"}},
	}}})
	n, err := toolsearch.ListBytes(tools)
	fmt.Println(n, err)
	// Output: 116 <nil>
}
