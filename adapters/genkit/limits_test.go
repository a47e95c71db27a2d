package genkittools_test

import (
	"testing"

	"github.com/firebase/genkit/go/ai"

	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// TestGenkitChecksArguments pins a limit of Genkit's that the README
// states: Genkit checks the model's arguments against the input schema
// itself, and arguments that do not match, or none at all, end the
// generation before the manager sees the call.
func TestGenkitChecksArguments(t *testing.T) {
	for _, tc := range []struct {
		name string
		call *ai.ToolRequest
	}{
		{"missing required", &ai.ToolRequest{Name: "s__add", Input: map[string]any{"a": 1}}},
		{"no arguments", &ai.ToolRequest{Name: "s__echo"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := testServer(t, mcptest.Script{})
			m := managerOver(t, map[string]any{"s": srv})
			if _, err := generate(t, m, tc.call); err == nil {
				t.Error("Generate succeeded; if Genkit now lets the call through, change the README")
			}
			if c := srv.Counts().Calls; c != 0 {
				t.Errorf("server got %d calls, want none", c)
			}
		})
	}
}
