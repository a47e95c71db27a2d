// Package toolsearch is the retrieval benchmark of tool search: the tool
// definitions of real MCP servers (testdata/tools.json, dumped from the
// servers by ./dump), requests written as a user would ask them, each with
// the tools that serve it (testdata/requests.*.json), and the figures that
// say how well a ranking finds them (recall@1, @5, @10 and MRR).
//
// The held-out split (requests.heldout.json) must never be used while
// tuning a ranking: tune on requests.tuning.json, report both.
package toolsearch

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"runtime"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Separator joins a server's config key and a tool's name into the public
// name, as Switchboard's gateway does by default.
const Separator = "__"

// Server is one real MCP server and the tools it listed.
type Server struct {
	// Name is the server's config key, the prefix of its public names.
	Name string `json:"name"`
	// Package is the npm package it was started from, as name@version.
	Package string `json:"package"`
	// Info is the serverInfo it answered initialize with (nil in a dump
	// made before it was kept), and Instructions its instructions.
	Info         *mcp.Implementation `json:"serverInfo,omitempty"`
	Instructions string              `json:"instructions,omitempty"`
	// Tools are the tools it listed, sorted by name, as go-sdk decoded them.
	Tools []*mcp.Tool `json:"tools"`
}

// Request is one thing a user asks an agent, and the tools that serve it.
type Request struct {
	Query string `json:"query"`
	// Gold holds the public names (server__tool) of the tools that serve
	// the request; a ranking finds it if it ranks any of them.
	Gold []string `json:"gold"`
}

// PublicTool is a tool under its public name.
type PublicTool struct {
	Name   string // server__tool
	Server string
	// Package is the server's npm package, as name@version.
	Package string
	// Info and Instructions are the server's (Server.Info and
	// Server.Instructions).
	Info         *mcp.Implementation
	Instructions string
	Tool         *mcp.Tool
}

// PublicName is the public name of tool on server.
func PublicName(server, tool string) string { return server + Separator + tool }

// Public returns every tool of servers under its public name, in the order
// of servers and of their tools.
func Public(servers []Server) []PublicTool {
	var out []PublicTool
	for _, s := range servers {
		for _, t := range s.Tools {
			out = append(out, PublicTool{Name: PublicName(s.Name, t.Name), Server: s.Name, Package: s.Package, Info: s.Info, Instructions: s.Instructions, Tool: t})
		}
	}
	return out
}

// LoadServers reads a tools.json.
func LoadServers(path string) ([]Server, error) {
	var servers []Server
	if err := readJSON(path, &servers); err != nil {
		return nil, err
	}
	return servers, nil
}

// LoadRequests reads a requests.*.json.
func LoadRequests(path string) ([]Request, error) {
	var reqs []Request
	if err := readJSON(path, &reqs); err != nil {
		return nil, err
	}
	return reqs, nil
}

// readJSON decodes the JSON file at path into v.
func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("load %s: %w", filepath.Base(path), err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("load %s: %w", path, err)
	}
	return nil
}

// Data is the whole benchmark.
type Data struct {
	Servers []Server
	Tools   []PublicTool
	// Tuning is the split to tune a ranking on; Heldout is only ever
	// reported, never looked at while tuning.
	Tuning, Heldout []Request
}

// Load reads the benchmark from dir (its testdata folder, see
// [TestdataDir]).
func Load(dir string) (*Data, error) {
	servers, err := LoadServers(filepath.Join(dir, "tools.json"))
	if err != nil {
		return nil, err
	}
	d := &Data{Servers: servers, Tools: Public(servers)}
	if d.Tuning, err = LoadRequests(filepath.Join(dir, "requests.tuning.json")); err != nil {
		return nil, err
	}
	if d.Heldout, err = LoadRequests(filepath.Join(dir, "requests.heldout.json")); err != nil {
		return nil, err
	}
	return d, nil
}

// TestdataDir returns the path of this package's testdata folder in the
// source tree it was built from, for tests in other packages.
func TestdataDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "testdata")
}

// split names the split a request belongs in, from a hash of its query, so
// that the split is deterministic and a new request does not move others:
// about 40% tuning, 60% held out.
func split(query string) string {
	h := fnv.New32a()
	h.Write([]byte(query))
	if h.Sum32()%100 < 40 {
		return "tuning"
	}
	return "heldout"
}
