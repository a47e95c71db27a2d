//lint:file-ignore SA1019 The test exercises sampling, which the gateway forwards.

package gateway

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// TestStatelessForwardsWhatItPromises: serve --stateless, as the README
// says, forwards tools, prompts, resources and completions, progress, and
// multi round-trip input requests to modern clients, with no session, and
// does not offer resource subscriptions, which need one.
func TestStatelessForwardsWhatItPromises(t *testing.T) {
	script := mcptest.Script{
		Tools:     []mcptest.ToolSpec{{Name: "ask", Behavior: mcptest.AskInput}, {Name: "work", Behavior: mcptest.Progress}},
		Prompts:   []mcptest.PromptSpec{{Name: "greet"}},
		Resources: []mcptest.ResourceSpec{{URI: "mem://a", Name: "a", Text: "hello"}},
	}
	_, g := serveAt(t, "http", "2026-07-28", script, &Options{Stateless: true})
	srv := httptest.NewServer(g.Handler())
	defer srv.Close()
	transport := &http.Transport{}
	defer transport.CloseIdleConnections()
	progress := make(chan *mcp.ProgressNotificationParams, 10)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "v"}, &mcp.ClientOptions{
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Content: &mcp.TextContent{Text: "mine"}, Model: "m", Role: "assistant"}, nil
		},
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) { progress <- req.Params },
	}).Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp", HTTPClient: &http.Client{Transport: transport}}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer cs.Close()
	if cs.ID() != "" {
		t.Errorf("session ID %q, want none", cs.ID())
	}
	caps := cs.InitializeResult().Capabilities
	if caps.Resources == nil || caps.Resources.Subscribe || caps.Prompts == nil {
		t.Errorf("capabilities: resources %+v, prompts %+v; want both, without subscribe", caps.Resources, caps.Prompts)
	}

	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "s__ask", Arguments: map[string]any{"text": "hi"}})
	if err != nil || mcptest.Text(res) != "mine" {
		t.Errorf("input requests: %v, %v; want the client's own answer", res, err)
	}
	params := &mcp.CallToolParams{Name: "s__work"}
	params.SetProgressToken("p")
	if res, err := cs.CallTool(t.Context(), params); err != nil || res.IsError {
		t.Fatalf("progress tool: %v %v", res, err)
	}
	for range 2 {
		select {
		case p := <-progress:
			if p.ProgressToken != "p" {
				t.Errorf("progress token %v, want p", p.ProgressToken)
			}
		case <-t.Context().Done():
			t.Fatal("no progress")
		}
	}
	if _, err := cs.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: "s__greet"}); err != nil {
		t.Errorf("prompts/get: %v", err)
	}
	if r, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "mem://a"}); err != nil || len(r.Contents) != 1 || r.Contents[0].Text != "hello" {
		t.Errorf("resources/read: %v %v", r, err)
	}
}

// TestIdleSessionIsLetGo: a Streamable HTTP session that sends nothing for
// SessionTimeout is closed, and what it held with it (see
// TestProcessPerSessionLifetime); its client is told its session is gone.
func TestIdleSessionIsLetGo(t *testing.T) {
	_, g := setup(t, upstreams{"s": mcptest.NewServer(mcptest.Script{})}, []config.Server{entry("s", false)}, &Options{SessionTimeout: 50 * time.Millisecond})
	srv := httptest.NewServer(g.Handler())
	defer srv.Close()
	transport := &http.Transport{}
	defer transport.CloseIdleConnections()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "v"}, nil).Connect(t.Context(),
		&mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp", HTTPClient: &http.Client{Transport: transport}},
		&mcp.ClientSessionOptions{ProtocolVersion: legacy})
	if err != nil {
		t.Fatal(err)
	}
	// The client's session ends when its standalone stream finds the
	// session gone.
	if err := cs.Wait(); err == nil || !strings.Contains(err.Error(), "session not found") {
		t.Errorf("the idle session ended with %v, want session not found", err)
	}
}

func TestStatelessHTTP(t *testing.T) {
	ups := upstreams{"m": mcptest.NewServer(mcptest.Script{})}
	_, g := setup(t, ups, []config.Server{entry("m", false)}, &Options{Stateless: true})
	srv := httptest.NewServer(g.Handler())
	defer srv.Close()
	transport := &http.Transport{}
	defer transport.CloseIdleConnections()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "v"}, nil).Connect(t.Context(),
		&mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp", HTTPClient: &http.Client{Transport: transport}}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer cs.Close()
	if cs.ID() != "" {
		t.Errorf("stateless gateway gave session ID %q", cs.ID())
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "m__add", Arguments: map[string]any{"a": 1, "b": 2}})
	if err != nil || mcptest.Text(res) != "3" {
		t.Errorf("m__add over stateless HTTP = %v, %v", res, err)
	}
}
