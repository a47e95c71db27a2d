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

// serve serves servers' tools through a gateway with tool search as search
// says, each server in process, and returns a client session connected to
// it in memory. The test's cleanup closes it all.
func serve(t *testing.T, servers []Server, search config.ToolSearch) *mcp.ClientSession {
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
	t.Cleanup(func() { m.Close() })
	if err := m.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	g := gateway.New(m, &gateway.Options{ToolSearch: &search})
	t.Cleanup(func() { g.Close() })
	serverSide, clientSide := mcp.NewInMemoryTransports()
	ss, err := g.Server().Connect(ctx, serverSide, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "v1"}, nil).Connect(ctx, clientSide, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// listedBytes serves servers' tools through a gateway with tool search as
// search says, and returns the bytes of the tools/list result a client
// gets, as go-sdk marshals it, and how many tools it holds.
func listedBytes(t *testing.T, servers []Server, search config.ToolSearch) (bytes, tools int) {
	t.Helper()
	res, err := serve(t, servers, search).ListTools(context.Background(), nil)
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

// MaxAverageResultBytes is the bar on the average size of a search_tools
// result at the default limit over the benchmark's requests (issue 32).
const MaxAverageResultBytes = 4096

// TestResultBytes runs every request of both splits through search_tools
// of a gateway with search on over all of tools.json, at the default
// limit, and reports (with -v) the average and largest size of the result,
// the whole CallToolResult as a client gets it: it fails if the average is
// over MaxAverageResultBytes. Size is no matter of ranking, so the
// held-out split counts as well: nothing here tunes on it.
func TestResultBytes(t *testing.T) {
	d := load(t)
	cs := serve(t, d.Servers, config.ToolSearch{Mode: config.ToolSearchOn})
	requests := append(append([]Request(nil), d.Tuning...), d.Heldout...)
	total, largest, largestQuery := 0, 0, ""
	for _, r := range requests {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": r.Query}})
		if err != nil || res.IsError {
			t.Fatalf("search_tools %q: %v %+v", r.Query, err, res)
		}
		b, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		total += len(b)
		if len(b) > largest {
			largest, largestQuery = len(b), r.Query
		}
	}
	average := float64(total) / float64(len(requests))
	t.Logf("search_tools result at the default limit, %d requests: %.0f bytes on average, %d at most (%q)", len(requests), average, largest, largestQuery)
	if average > MaxAverageResultBytes {
		t.Errorf("search_tools results average %.0f bytes, over %d", average, MaxAverageResultBytes)
	}
}
