package genkittools_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/firebase/genkit/go/ai"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	genkittools "github.com/switchboard-mcp/switchboard/adapters/genkit"
)

// echoArgs answers with the JSON of its arguments.
func echoArgs(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(req.Params.Arguments)}}}, nil
}

// stringProp is a schema of an object with one property x.
func stringProp(x map[string]any) map[string]any {
	return map[string]any{"type": "object", "properties": map[string]any{"x": x}}
}

// TestUntrustedSchemas: a server's schemas with a remote "$ref", a file://
// "$ref" or a pattern Go cannot compile neither make Genkit fetch or read
// anything nor end the generation: each tool runs, and a tool with a sound
// schema keeps it exactly.
func TestUntrustedSchemas(t *testing.T) {
	var fetches atomic.Int64
	remote := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fetches.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"type": "integer"}`))
	}))
	defer remote.Close()
	file := filepath.Join(t.TempDir(), "schema.json")
	if err := os.WriteFile(file, []byte(`{"type": "integer"}`), 0o600); err != nil {
		t.Fatal(err)
	}

	schemas := map[string]map[string]any{
		"remote": stringProp(map[string]any{"$ref": remote.URL + "/schema.json"}),
		"scoped": { // a local pointer under an $id that names the remote server
			"$id":         remote.URL + "/base.json",
			"type":        "object",
			"properties":  map[string]any{"x": map[string]any{"$ref": "#/definitions/s"}},
			"definitions": map[string]any{"s": map[string]any{"type": "string"}},
		},
		"file":      stringProp(map[string]any{"$ref": "file://" + file}),
		"lookahead": stringProp(map[string]any{"type": "string", "pattern": "^(?=.*h).*$"}),
		"lookaheadKey": {
			"type":              "object",
			"patternProperties": map[string]any{"^(?!y).*$": map[string]any{"type": "integer"}, "^z$": map[string]any{"type": "string"}},
		},
		"plain": {
			"type":       "object",
			"properties": map[string]any{"x": map[string]any{"type": "string", "pattern": "^[a-z]+$"}, "pattern": map[string]any{"type": "string"}},
			"required":   []any{"x"},
			"$defs":      map[string]any{"d": map[string]any{"default": map[string]any{"$ref": "http://example.invalid/"}}},
		},
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "u", Version: "v1"}, nil)
	for name, schema := range schemas {
		server.AddTool(&mcp.Tool{Name: name, InputSchema: schema}, echoArgs)
	}
	m := managerOver(t, map[string]any{"u": server})

	tools := genkittools.Tools(t.Context(), m, nil)
	var calls []*ai.ToolRequest
	for _, tool := range tools {
		calls = append(calls, &ai.ToolRequest{Name: tool.Name(), Ref: tool.Name(), Input: map[string]any{"x": "hello"}})
	}
	if len(calls) != len(schemas) {
		t.Fatalf("%d tools, want %d", len(calls), len(schemas))
	}
	model, err := generateWith(t, tools, calls...)
	if err != nil {
		t.Fatal(err)
	}
	for _, call := range calls {
		if out := model.toolResponses()[call.Name].Output; out != `{"x":"hello"}` {
			t.Errorf("%s: output %v, want the echo", call.Name, out)
		}
	}
	if n := fetches.Load(); n != 0 {
		t.Errorf("the remote schema was fetched %d times, want never", n)
	}

	defs := make(map[string]map[string]any)
	for _, tool := range tools {
		defs[tool.Name()] = tool.(ai.Tool).Definition().InputSchema
	}
	// JSON round trips, as the manager's schemas are JSON.
	want := roundTrip(t, map[string]any{
		"u__plain":     schemas["plain"],
		"u__scoped":    schemas["scoped"],
		"u__remote":    stringProp(map[string]any{}),
		"u__file":      stringProp(map[string]any{}),
		"u__lookahead": stringProp(map[string]any{"type": "string"}),
		"u__lookaheadKey": map[string]any{
			"type":              "object",
			"properties":        map[string]any{}, // the manager's
			"patternProperties": map[string]any{"^z$": map[string]any{"type": "string"}},
		},
	})
	if diff := cmp.Diff(want, roundTrip(t, defs)); diff != "" {
		t.Errorf("schemas Genkit got (-want +got):\n%s", diff)
	}
	for _, tool := range m.Tools(t.Context(), nil) {
		if tool.Name != "u__remote" {
			continue
		}
		if diff := cmp.Diff(roundTrip(t, schemas["remote"]), roundTrip(t, tool.InputSchema())); diff != "" {
			t.Errorf("the manager's schema changed (-want +got):\n%s", diff)
		}
	}
}

// TestSchemaThatDoesNotCompile: a tool whose schema still does not compile
// once sanitized is left out of Tools, and the others still run.
func TestSchemaThatDoesNotCompile(t *testing.T) {
	server := mcp.NewServer(&mcp.Implementation{Name: "b", Version: "v1"}, nil)
	server.AddTool(&mcp.Tool{Name: "broken", InputSchema: stringProp(map[string]any{"$ref": "#/definitions/missing"})}, echoArgs)
	server.AddTool(&mcp.Tool{Name: "fine", InputSchema: stringProp(map[string]any{"type": "string"})}, echoArgs)
	m := managerOver(t, map[string]any{"b": server})
	if n := len(m.Tools(t.Context(), nil)); n != 2 {
		t.Fatalf("the manager lists %d tools, want 2", n)
	}
	tools := genkittools.Tools(t.Context(), m, nil)
	if len(tools) != 1 || tools[0].Name() != "b__fine" {
		t.Fatalf("tools %v, want only b__fine", tools)
	}
	model, err := generateWith(t, tools, &ai.ToolRequest{Name: "b__fine", Input: map[string]any{"x": "hi"}})
	if err != nil {
		t.Fatal(err)
	}
	if out := model.toolResponses()["b__fine"].Output; out != `{"x":"hi"}` {
		t.Errorf("output %v, want the echo", out)
	}
}

// roundTrip returns v through JSON.
func roundTrip(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}
