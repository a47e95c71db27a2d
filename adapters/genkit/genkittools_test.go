package genkittools_test

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/firebase/genkit/go/ai"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard"
	genkittools "github.com/switchboard-mcp/switchboard/adapters/genkit"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// TestToolsCarryDefinitions: each Genkit tool has the public name,
// description and input schema of the manager's tool, exactly.
func TestToolsCarryDefinitions(t *testing.T) {
	m := managerOver(t, map[string]any{"s": testServer(t, mcptest.Script{})})
	want := m.Tools(t.Context(), nil)
	got := genkittools.Tools(t.Context(), m, nil)
	if len(got) != len(want) || len(want) == 0 {
		t.Fatalf("got %d tools, want %d (and some)", len(got), len(want))
	}
	for i, ref := range got {
		def := ref.(ai.Tool).Definition()
		if def.Name != want[i].Name || def.Description != want[i].Description {
			t.Errorf("tool %d: %q, %q; want %q, %q", i, def.Name, def.Description, want[i].Name, want[i].Description)
		}
		if diff := cmp.Diff(want[i].InputSchema(), def.InputSchema); diff != "" {
			t.Errorf("%s: input schema (-want +got):\n%s", def.Name, diff)
		}
	}
}

// TestGenerateCallsThroughManager: Genkit's generate loop runs the calls
// the model asks for through the manager, and hands the results, error
// results included, back to the model without ending the generation.
func TestGenerateCallsThroughManager(t *testing.T) {
	srv := testServer(t, mcptest.Script{})
	m := managerOver(t, map[string]any{"s": srv})
	model, err := generate(t, m,
		&ai.ToolRequest{Name: "s__add", Ref: "1", Input: map[string]any{"a": 1, "b": 2}},
		&ai.ToolRequest{Name: "s__fail", Ref: "2", Input: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	got := make(map[string]any)
	for name, r := range model.toolResponses() {
		got[name] = r.Output
	}
	want := map[string]any{"s__add": "3", "s__fail": map[string]any{"error": "tool fail failed"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("outputs (-want +got):\n%s", diff)
	}
	if c := srv.Counts().Calls; c != 2 {
		t.Errorf("server got %d calls, want 2", c)
	}
}

// TestUnavailableServer: a call to a server that went down after the tools
// were taken reaches the model as the manager's model-readable text, and
// the generation goes on.
func TestUnavailableServer(t *testing.T) {
	m := managerOver(t, map[string]any{"s": testServer(t, mcptest.Script{})})
	tools := genkittools.Tools(t.Context(), m, nil)
	if err := m.Disconnect(t.Context(), "s"); err != nil {
		t.Fatal(err)
	}
	model, err := generateWith(t, tools, &ai.ToolRequest{Name: "s__echo", Input: map[string]any{}})
	if err != nil {
		t.Fatalf("generation ended: %v", err)
	}
	out, _ := model.toolResponses()["s__echo"].Output.(map[string]any)
	if text, _ := out["error"].(string); !strings.Contains(text, "unavailable") || !strings.Contains(text, "Do not retry") {
		t.Errorf("output %v, want the manager's text for an unavailable server", out)
	}
}

// TestServerCrashes: a server that crashes mid-call is reconnected; a
// read-only call is replayed and succeeds, and one that may have run
// fails with the manager's text, for the model.
func TestServerCrashes(t *testing.T) {
	for _, tc := range []struct {
		tool, want string
	}{
		{"echo", `{"x":1}`},
		{"increment", "may or may not have run"},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := testServer(t, mcptest.Script{CrashAfterCall: 1})
				m := managerOver(t, map[string]any{"s": srv})
				var tool ai.Tool
				for _, ref := range genkittools.Tools(t.Context(), m, nil) {
					if ref.Name() == "s__"+tc.tool {
						tool = ref.(ai.Tool)
					}
				}
				out, err := tool.RunRaw(t.Context(), map[string]any{"x": 1})
				if err != nil {
					t.Fatal(err)
				}
				text, ok := out.(string)
				if !ok {
					text, _ = out.(map[string]any)["error"].(string)
				}
				if !strings.Contains(text, tc.want) {
					t.Errorf("output %v, want it to hold %q", out, tc.want)
				}
			})
		})
	}
}

// TestToolsChange: after a server's tools change, the next Tools, and so
// the next generation, has the new set.
func TestToolsChange(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := testServer(t, mcptest.Script{Tools: []mcptest.ToolSpec{{Name: "old"}}})
		m := managerOver(t, map[string]any{"s": srv})
		changed := mcptest.Await(m.Subscribe, func(ev switchboard.Event) bool { return ev.Kind == switchboard.EventChanged })
		srv.SetTools([]mcptest.ToolSpec{{Name: "new", Description: "The new one."}})
		mcptest.PassTime(time.Second)
		<-changed
		model, err := generate(t, m, &ai.ToolRequest{Name: "s__new", Input: map[string]any{"y": 2}})
		if err != nil {
			t.Fatal(err)
		}
		var offered []string
		for _, d := range model.requests[0].Tools {
			offered = append(offered, d.Name+": "+d.Description)
		}
		if diff := cmp.Diff([]string{"s__new: The new one."}, offered); diff != "" {
			t.Errorf("tools offered (-want +got):\n%s", diff)
		}
		if out := model.toolResponses()["s__new"].Output; out != `{"y":2}` {
			t.Errorf("output %v, want the echo", out)
		}
	})
}

// TestImagesAndStructuredContent: a result's images become media parts of
// the tool response, and its structured content the output.
func TestImagesAndStructuredContent(t *testing.T) {
	server := mcp.NewServer(&mcp.Implementation{Name: "pics", Version: "v1"}, nil)
	server.AddTool(&mcp.Tool{Name: "draw", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{
				Content: []mcp.Content{
					&mcp.TextContent{Text: `{"w":1}`},
					&mcp.ImageContent{MIMEType: "image/png", Data: []byte("PNG")},
				},
				StructuredContent: map[string]any{"w": 1},
			}, nil
		})
	m := managerOver(t, map[string]any{"p": server})
	model, err := generate(t, m, &ai.ToolRequest{Name: "p__draw", Ref: "1", Input: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	got := model.toolResponses()["p__draw"]
	want := &ai.ToolResponse{
		Name:    "p__draw",
		Ref:     "1",
		Output:  map[string]any{"w": float64(1)},
		Content: []*ai.Part{ai.NewMediaPart("image/png", "data:image/png;base64,UE5H")},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tool response (-want +got):\n%s", diff)
	}
}

// TestCancellation: a call whose context ends returns the context's error,
// which ends the generation, instead of text for the model.
func TestCancellation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := managerOver(t, map[string]any{"s": testServer(t, mcptest.Script{Tools: []mcptest.ToolSpec{{Name: "hang", Behavior: mcptest.Hang}}})})
		tool := genkittools.Tools(t.Context(), m, nil)[0].(ai.Tool)
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		if out, err := tool.RunRaw(ctx, map[string]any{}); err == nil {
			t.Errorf("RunRaw = %v, want the context's error", out)
		}
	})
}
