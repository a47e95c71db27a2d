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

// TestContextBytes prints, with -v, the bytes of tools/list with search off
// for the interop config and a 1,000-tool one (synthetic: real tools
// repeated under several prefixes, see Repeat).
func TestContextBytes(t *testing.T) {
	d := load(t)
	interop, err := InteropConfig(d.Servers)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		servers []Server
	}{{"interop", interop}, {"1000 tools", Repeat(d.Servers, 1000)}, {"tools.json", d.Servers}} {
		tools := PublicTools(c.servers)
		n, err := ListBytes(tools)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d tools, tools/list %d bytes with search off", c.name, len(tools), n)
	}
	if _, err := InteropConfig(d.Servers[:1]); err == nil {
		t.Error("InteropConfig without its servers: no error")
	}
}
