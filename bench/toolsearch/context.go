package toolsearch

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/internal/catalog"
)

// ListBytes returns the size of the tools/list result that holds tools, as
// go-sdk marshals it (the result only, without the JSON-RPC envelope): what
// a client puts into a model's context for them.
func ListBytes(tools []*mcp.Tool) (int, error) {
	b, err := json.Marshal(&mcp.ListToolsResult{Tools: tools})
	if err != nil {
		return 0, fmt.Errorf("list bytes: %w", err)
	}
	return len(b), nil
}

// PublicTools returns the tools of servers as a gateway with search off
// lists them: named, cloned and sorted by Switchboard's own catalog, each
// server's key its prefix.
func PublicTools(servers []Server) []*mcp.Tool {
	view := catalog.Build(sources(servers))
	out := make([]*mcp.Tool, 0, view.Len())
	for _, t := range view.Tools() {
		out = append(out, t.Tool)
	}
	return out
}

// sources are servers as the catalog takes them.
func sources(servers []Server) []catalog.Source {
	out := make([]catalog.Source, len(servers))
	for i, s := range servers {
		out[i] = catalog.Source{Server: s.Name, Prefix: s.Name, Tools: s.Tools}
	}
	return out
}

// interopConfig maps the keys of the interop tests' config
// (interop/servers_test.go) to the servers of tools.json they run.
var interopConfig = []struct{ key, server string }{
	{"everything", "everything"},
	{"files", "filesystem"},
	{"memory", "memory"},
	{"remote", "everything"}, // server-everything again, over HTTP
	{"thinking", "sequential-thinking"},
}

// InteropConfig returns the servers of the interop tests' config, under
// that config's keys, from the servers of tools.json.
func InteropConfig(servers []Server) ([]Server, error) {
	byName := make(map[string]Server, len(servers))
	for _, s := range servers {
		byName[s.Name] = s
	}
	out := make([]Server, 0, len(interopConfig))
	for _, c := range interopConfig {
		s, ok := byName[c.server]
		if !ok {
			return nil, fmt.Errorf("interop config: server %q is not in tools.json", c.server)
		}
		s.Name = c.key
		out = append(out, s)
	}
	return out, nil
}

// Repeat synthesises a config of exactly n tools from real ones: servers
// in order, then again under the keys "NAME-2", "NAME-3" and so on, the
// last one cut short. Real gateways do run several instances of a server
// (one per account or cluster), so the repeats are not far-fetched, but the
// result is synthetic: say so when reporting figures from it.
func Repeat(servers []Server, n int) []Server {
	var out []Server
	total := 0
	for round := 1; total < n; round++ {
		added := false
		for _, s := range servers {
			if total == n {
				break
			}
			if len(s.Tools) == 0 {
				continue
			}
			if round > 1 {
				s.Name += "-" + strconv.Itoa(round)
			}
			s.Tools = s.Tools[:min(len(s.Tools), n-total)]
			total += len(s.Tools)
			out = append(out, s)
			added = true
		}
		if !added {
			break // no tools to repeat
		}
	}
	return out
}
