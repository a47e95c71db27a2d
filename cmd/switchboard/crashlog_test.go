package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// TestCrashLogShowsTheLastStderrLines: the log line of a stdio server that
// crashed carries the last few lines of its stderr, not all it kept.
func TestCrashLogShowsTheLastStderrLines(t *testing.T) {
	isolate(t)
	cfg := writeConfig(t, map[string]mcptest.Script{"noisy": {StderrLines: 30, ExitOnCall: 1}}, nil)
	g := startServe(t, "--config", cfg)
	g.waitLog(t, settledRE)
	cs := connectHTTP(t, g.url)
	defer cs.Close()
	if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "noisy__echo", Arguments: map[string]any{}}); err != nil {
		t.Fatalf("the call that crashes the server: %v", err)
	}
	line := g.waitLog(t, regexp.MustCompile(`msg="server down; reconnecting" server=noisy .*`))[0]
	want := `stderr: … | mcptest: stderr line 26 | mcptest: stderr line 27 | mcptest: stderr line 28 | mcptest: stderr line 29 | mcptest: stderr line 30"`
	if !strings.HasSuffix(line, want) || strings.Contains(line, "line 25") {
		t.Errorf("the crash's log line:\n%s\nwant it to end with the last 5 lines of stderr:\n%s", line, want)
	}
}
