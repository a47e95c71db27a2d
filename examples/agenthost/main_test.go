package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

func TestMain(m *testing.M) {
	mcptest.RunIfChild()
	cleanup := mcptest.IsolateUserDirs()
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) { cleanup() }))
}

func TestSession(t *testing.T) {
	command, args, env := mcptest.StdioCommand(mcptest.Script{Tools: []mcptest.ToolSpec{
		{Name: "echo", Description: "Repeats its arguments.", Behavior: mcptest.Echo},
		{Name: "note_delete", Description: "Deletes a note.", Behavior: mcptest.Echo},
	}})
	cfg := map[string]any{"mcpServers": map[string]any{"demo": map[string]any{"command": command, "args": args, "env": env}}}
	file := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(file, mustJSON(t, cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	// The first call waits for the server, if it is still connecting: after
	// it, the tools are listed, whatever the machine's load.
	in := strings.NewReader(strings.Join([]string{
		`call demo__echo {"text": "hi"}`,
		"tools",
		`call demo__note_delete {"id": 1}`,
		"n",
		`call demo__note_delete {"id": 2}`,
		"y",
		"call demo__nope",
		"call demo__echo [1]",
		"status",
		"quit",
	}, "\n"))
	var out bytes.Buffer
	if err := run(t.Context(), []string{"-config", file}, in, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"event: demo is connected",
		"demo__echo: Repeats its arguments.",
		`{"text":"hi"}`,
		"demo__note_delete needs your approval",
		"not run",
		`{"id":2}`,
		"There is no tool named demo__nope",
		"arguments must be a JSON object",
		"demo: connected, 2 tools",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), `{"id":1}`) {
		t.Errorf("a call that was not approved ran:\n%s", out.String())
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
