package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

// env returns a getenv that knows only vars.
func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

// formSchema is what the suite's elicitation mock asks for: a default of
// each type a form allows.
var formSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"name":     map[string]any{"type": "string", "default": "John Doe"},
		"age":      map[string]any{"type": "integer", "default": 30},
		"score":    map[string]any{"type": "number", "default": 95.5},
		"status":   map[string]any{"type": "string", "enum": []any{"active", "inactive"}, "default": "active"},
		"verified": map[string]any{"type": "boolean", "default": true},
		"nickname": map[string]any{"type": "string"},
	},
}

// newServer returns a Streamable HTTP server with the tools of the
// scenarios, each of which checks what the client did, as the suite's
// mocks do, and answers with an error result if it is wrong.
func newServer(t *testing.T) *httptest.Server {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "mock", Version: "1"}, nil)
	var initialized atomic.Pointer[mcp.InitializeParams]
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if p, ok := req.GetParams().(*mcp.InitializeParams); ok && method == "initialize" {
				initialized.Store(p)
			}
			return next(ctx, method, req)
		}
	})
	fail := func(format string, args ...any) *mcp.CallToolResult {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(format, args...)}}}
	}
	ok := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}
	object := map[string]any{"type": "object"}
	s.AddTool(&mcp.Tool{Name: "add_numbers", InputSchema: object}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if got := string(req.Params.Arguments); got != `{"a":5,"b":3}` {
			return fail("arguments %s, want a=5, b=3", got), nil
		}
		if p := initialized.Load(); p == nil || p.ClientInfo == nil || p.ClientInfo.Name != clientInfo.Name {
			return fail("initialized with %+v, want our clientInfo", p), nil
		}
		return ok, nil
	})
	s.AddTool(&mcp.Tool{Name: "test_client_elicitation_defaults", InputSchema: object}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "accept with defaults", RequestedSchema: formSchema})
		if err != nil {
			return fail("elicit: %v", err), nil
		}
		want := map[string]any{"name": "John Doe", "age": 30.0, "score": 95.5, "status": "active", "verified": true}
		if res.Action != "accept" {
			return fail("action %q, want accept", res.Action), nil
		}
		if diff := cmp.Diff(want, res.Content); diff != "" {
			return fail("content (-want +got):\n%s", diff), nil
		}
		return ok, nil
	})
	s.AddTool(&mcp.Tool{Name: "test_reconnection", InputSchema: object}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return ok, nil
	})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(srv.Close)
	return srv
}

// TestScenarios runs each scenario against a server that checks, as the
// suite's mock does, what the client sent.
func TestScenarios(t *testing.T) {
	srv := newServer(t)
	for name := range scenarios {
		t.Run(name, func(t *testing.T) {
			getenv := env(map[string]string{"MCP_CONFORMANCE_SCENARIO": name})
			if err := run(t.Context(), []string{srv.URL}, getenv, discard); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestRunRefuses(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"no URL", nil, map[string]string{"MCP_CONFORMANCE_SCENARIO": "initialize"}, "usage"},
		{"no scenario", []string{"http://127.0.0.1:1/mcp"}, nil, "MCP_CONFORMANCE_SCENARIO is not set"},
		{"unknown scenario", []string{"http://127.0.0.1:1/mcp"}, map[string]string{"MCP_CONFORMANCE_SCENARIO": "no-such-scenario"}, `scenario "no-such-scenario" is not supported`},
		{"bad context", []string{"http://127.0.0.1:1/mcp"}, map[string]string{"MCP_CONFORMANCE_SCENARIO": "initialize", "MCP_CONFORMANCE_CONTEXT": "{"}, "MCP_CONFORMANCE_CONTEXT"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := run(t.Context(), tt.args, env(tt.env), discard)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("run() = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// TestScenarioFails: a scenario that cannot do its part makes run fail,
// and the program exit non-zero.
func TestScenarioFails(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "empty", Version: "1"}, nil)
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	defer srv.Close()
	err := run(t.Context(), []string{srv.URL}, env(map[string]string{"MCP_CONFORMANCE_SCENARIO": "tools_call"}), discard)
	if err == nil || !strings.Contains(err.Error(), `does not list tool "add_numbers"`) {
		t.Errorf("run() = %v, want an error saying add_numbers is not listed", err)
	}
}

func TestDefaults(t *testing.T) {
	tests := []struct {
		name   string
		schema any
		want   map[string]any
	}{
		{"nil", nil, map[string]any{}},
		{"no properties", map[string]any{"type": "object"}, map[string]any{}},
		{"every type", formSchema, map[string]any{"name": "John Doe", "age": 30.0, "score": 95.5, "status": "active", "verified": true}},
		{"raw JSON", json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer","default":7},"s":{"type":"string"}}}`), map[string]any{"n": 7.0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := defaults(tt.schema)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("defaults (-want +got):\n%s", diff)
			}
		})
	}
}

// TestAuthScenario: an auth scenario logs in to a server behind an
// authorization server, by dynamic registration or as the pre-registered
// client of the context, and calls test-tool.
func TestAuthScenario(t *testing.T) {
	for _, tc := range []struct {
		name    string
		context string
	}{
		{"registered", ""},
		{"pre-registered", `{"client_id": "pre-client", "client_secret": "pre-secret"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mcp.NewServer(&mcp.Implementation{Name: "protected", Version: "1"}, nil)
			var calls atomic.Int32
			s.AddTool(&mcp.Tool{Name: "test-tool", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				calls.Add(1)
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
			})
			a := mcptest.NewAuthServer(map[string]http.Handler{"/mcp": mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)})
			defer a.Close()
			vars := map[string]string{"MCP_CONFORMANCE_SCENARIO": "auth/metadata-default", "MCP_CONFORMANCE_CONTEXT": tc.context}
			if err := run(t.Context(), []string{a.URL + "/mcp"}, env(vars), discard); err != nil {
				t.Fatalf("run() = %v", err)
			}
			if logins, _ := a.Counts(); logins != 1 || calls.Load() != 1 {
				t.Errorf("logins, calls = %d, %d; want 1, 1", logins, calls.Load())
			}
		})
	}
}
