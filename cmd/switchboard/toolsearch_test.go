package main

import (
	"context"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// withToolSearch returns the config file at path with a top-level
// "toolSearch" of mode.
func withToolSearch(t *testing.T, path, mode string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["toolSearch"] = mode
	if data, err = json.Marshal(cfg); err != nil {
		t.Fatal(err)
	}
	return data
}

// TestServeToolSearch: a reload that turns the config's toolSearch on
// applies it, and --tool-search overrides the config's.
func TestServeToolSearch(t *testing.T) {
	isolate(t)
	path := writeConfig(t, map[string]mcptest.Script{"alpha": {Tools: []mcptest.ToolSpec{{Name: "echo"}}}}, nil)
	g := startServe(t, "--config", path)
	g.waitLog(t, settledRE)
	changed := make(chan struct{}, 10)
	cs := connectHTTPWith(t, g.url, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
		changed <- struct{}{}
	}})
	defer cs.Close()
	if diff := cmp.Diff([]string{"alpha__echo"}, toolNames(t, cs)); diff != "" {
		t.Errorf("tools with search off (-want +got):\n%s", diff)
	}
	on := withToolSearch(t, path, "on")
	replaceFile(t, path, on)
	g.waitLogs(t, regexp.MustCompile(`msg="tool search on: tools are behind search_tools" setting=on$`),
		regexp.MustCompile(`msg="config reloaded"`))
	<-changed
	if diff := cmp.Diff([]string{"search_tools", "call_tool"}, toolNames(t, cs)); diff != "" {
		t.Errorf("tools after a reload turned search on (-want +got):\n%s", diff)
	}
	if out, _, _ := cli(t, "status", "--gateway", g.url); !strings.Contains(out, "\ntool search on: 1 tool behind search_tools (setting on)\n") {
		t.Errorf("status --gateway does not say that tool search is on:\n%s", out)
	}

	// The flag overrides the config, at the start and on a reload.
	g2 := startServe(t, "--config", path, "--tool-search", "off")
	g2.waitLog(t, settledRE)
	cs2 := connectHTTPWith(t, g2.url, nil)
	defer cs2.Close()
	if diff := cmp.Diff([]string{"alpha__echo"}, toolNames(t, cs2)); diff != "" {
		t.Errorf("tools with --tool-search off over the config's on (-want +got):\n%s", diff)
	}
	replaceFile(t, path, withToolSearch(t, path, "auto:0"))
	g2.waitLog(t, regexp.MustCompile(`msg="config reloaded"`))
	if diff := cmp.Diff([]string{"alpha__echo"}, toolNames(t, cs2)); diff != "" {
		t.Errorf("tools with --tool-search off after a reload (-want +got):\n%s", diff)
	}
}
