package main

import (
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// TestServeLimits: serve applies the config's gateway.limits (without
// gateway.auth, every client is one identity), and a reload of them to the
// requests that follow.
func TestServeLimits(t *testing.T) {
	isolate(t)
	path := writeConfig(t, map[string]mcptest.Script{"m": {}}, nil)
	limited := func(cfg map[string]any) {
		cfg["gateway"] = map[string]any{"limits": map[string]any{"perIdentity": map[string]any{"rate": 0.001, "burst": 1}}}
	}
	editConfig(t, path, limited)
	g := startServe(t, "--config", path)
	g.waitLog(t, settledRE)
	transport := &http.Transport{}
	t.Cleanup(transport.CloseIdleConnections)
	connect := func() *mcp.ClientSession {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "v"}, nil).Connect(t.Context(),
			&mcp.StreamableClientTransport{Endpoint: g.url + "/mcp", HTTPClient: &http.Client{Transport: transport}}, nil)
		if err != nil {
			t.Fatalf("connect: %v\n%s", err, g.log)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	a, b := connect(), connect()
	call := func(cs *mcp.ClientSession) error {
		_, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "m__echo", Arguments: map[string]any{}})
		return err
	}
	if err := call(a); err != nil {
		t.Fatal(err)
	}
	if err := call(b); err == nil || !strings.Contains(err.Error(), "switchboard: rate limited: identity limit of 0.001 requests/s; retry after 1000.0 s") {
		t.Fatalf("second call, from another client: %v; want rate limited (one shared identity)", err)
	}

	// The config without limits, made in a copy, then written whole at
	// once.
	limitedConfig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	scratch := filepath.Join(t.TempDir(), "unlimited.json")
	if err := os.WriteFile(scratch, limitedConfig, 0o600); err != nil {
		t.Fatal(err)
	}
	editConfig(t, scratch, func(cfg map[string]any) { delete(cfg, "gateway") })
	unlimited, err := os.ReadFile(scratch)
	if err != nil {
		t.Fatal(err)
	}
	replaceFile(t, path, unlimited)
	g.waitLog(t, regexp.MustCompile(`msg="config reloaded"`))
	for range 3 {
		if err := call(b); err != nil {
			t.Fatalf("after a reload without limits: %v", err)
		}
	}
}
