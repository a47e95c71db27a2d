package toolsearch

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestListBytes(t *testing.T) {
	tools := []*mcp.Tool{{Name: "a", InputSchema: map[string]any{"type": "object"}}}
	want, err := json.Marshal(&mcp.ListToolsResult{Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	got, err := ListBytes(tools)
	if err != nil || got != len(want) {
		t.Errorf("ListBytes = %d, %v; want %d (%s)", got, err, len(want), want)
	}
	if _, err := ListBytes([]*mcp.Tool{{Name: "bad", InputSchema: func() {}}}); err == nil {
		t.Error("ListBytes of an unmarshalable schema: no error")
	}
}

func TestRepeat(t *testing.T) {
	d := load(t)
	for _, n := range []int{1, 7, 1000, 5000} {
		servers := Repeat(d.Servers, n)
		names := map[string]bool{}
		for _, p := range PublicTools(servers) {
			if names[p.Name] {
				t.Errorf("Repeat(%d): public name %s twice", n, p.Name)
			}
			names[p.Name] = true
		}
		if len(names) != n {
			t.Errorf("Repeat(%d) gave %d tools", n, len(names))
		}
	}
	if got := Repeat([]Server{{Name: "empty"}}, 10); len(got) != 0 {
		t.Errorf("Repeat of servers with no tools = %v, want none", got)
	}
}
