package toolsearch

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/gateway"
)

// listedBytes serves servers' tools through a gateway with tool search as
// search says, and returns the bytes of the tools/list result a client
// gets, as go-sdk marshals it, and how many tools it holds.
func listedBytes(t *testing.T, servers []Server, search config.ToolSearch) (bytes, tools int) {
	t.Helper()
	ctx := context.Background()
	inProcess := make(map[string]*mcp.Server, len(servers))
	cfg := &config.Config{}
	for _, s := range servers {
		srv := mcp.NewServer(&mcp.Implementation{Name: s.Name, Version: "v1"}, nil)
		for _, tool := range s.Tools {
			srv.AddTool(tool, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
		}
		inProcess[s.Name] = srv
		cfg.Servers = append(cfg.Servers, config.Server{Name: s.Name, Command: "in-process"})
	}
	m := switchboard.New(cfg, &switchboard.Options{
		Cache:       switchboard.CacheOff,
		StartupGate: -1,
		Dial: func(ctx context.Context, srv config.Server) (mcp.Transport, error) {
			serverSide, clientSide := mcp.NewInMemoryTransports()
			if _, err := inProcess[srv.Name].Connect(ctx, serverSide, nil); err != nil {
				return nil, err
			}
			return clientSide, nil
		},
	})
	defer m.Close()
	if err := m.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	g := gateway.New(m, &gateway.Options{ToolSearch: &search})
	defer g.Close()
	serverSide, clientSide := mcp.NewInMemoryTransports()
	ss, err := g.Server().Connect(ctx, serverSide, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "v1"}, nil).Connect(ctx, clientSide, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	return len(b), len(res.Tools)
}

// TestContextSaved prints, with -v, the bytes of tools/list that a client
// gets from a gateway with tool search off and on, for the interop config
// and a 1,000-tool one (synthetic: see Repeat), and asserts only that on
// lists the two tools.
func TestContextSaved(t *testing.T) {
	d := load(t)
	interop, err := InteropConfig(d.Servers)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		servers []Server
	}{{"interop", interop}, {"1000 tools", Repeat(d.Servers, 1000)}} {
		off, offTools := listedBytes(t, c.servers, config.ToolSearch{})
		on, onTools := listedBytes(t, c.servers, config.ToolSearch{Mode: config.ToolSearchOn})
		if onTools != 2 {
			t.Errorf("%s: search on lists %d tools, want search_tools and call_tool", c.name, onTools)
		}
		t.Logf("%s: tools/list %d bytes (%d tools) with search off, %d bytes (%d tools) on: %.1f%%", c.name, off, offTools, on, onTools, 100*float64(on)/float64(off))
	}
	if _, err := InteropConfig(d.Servers[:1]); err == nil {
		t.Error("InteropConfig without its servers: no error")
	}
}
