package genkittools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/genkit"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard"
	genkittools "github.com/switchboard-mcp/switchboard/adapters/genkit"
	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// managerOver returns a connected manager over servers, keyed by name:
// each an *mcptest.Server or an *mcp.Server. It is closed when the test
// ends.
func managerOver(t *testing.T, servers map[string]any) *switchboard.Manager {
	t.Helper()
	cfg := &config.Config{}
	for name := range servers {
		cfg.Servers = append(cfg.Servers, config.Server{Name: name, Type: config.Stdio, Command: "in-memory"})
	}
	m := switchboard.New(cfg, &switchboard.Options{
		CacheDir:    t.TempDir(),
		StartupGate: -1,
		Dial: func(ctx context.Context, srv config.Server) (mcp.Transport, error) {
			switch s := servers[srv.Name].(type) {
			case *mcptest.Server:
				return s.ConnectInMemory(ctx)
			case *mcp.Server:
				serverSide, clientSide := mcp.NewInMemoryTransports()
				if _, err := s.Connect(ctx, serverSide, nil); err != nil {
					return nil, err
				}
				return clientSide, nil
			}
			return nil, fmt.Errorf("no test server %q", srv.Name)
		},
	})
	t.Cleanup(func() { m.Close() })
	if err := m.Connect(t.Context()); err != nil {
		t.Fatal(err)
	}
	return m
}

// testServer runs script as an in-memory server, closed when the test ends.
func testServer(t *testing.T, script mcptest.Script) *mcptest.Server {
	s := mcptest.NewServer(script)
	t.Cleanup(func() { s.Close() })
	return s
}

// scriptedModel is a model with no intelligence: its first answer asks for
// the calls; every later one is the JSON of the last tool message, so that
// the generation ends. It records the requests it gets.
type scriptedModel struct {
	calls    []*ai.ToolRequest
	requests []*ai.ModelRequest
}

func (s *scriptedModel) define(g *genkit.Genkit) ai.Model {
	opts := &ai.ModelOptions{Supports: &ai.ModelSupports{Multiturn: true, Tools: true, Media: true}}
	return genkit.DefineModel(g, "test/scripted", opts, func(_ context.Context, req *ai.ModelRequest, _ ai.ModelStreamCallback) (*ai.ModelResponse, error) {
		s.requests = append(s.requests, req)
		last := req.Messages[len(req.Messages)-1]
		if last.Role != ai.RoleTool {
			msg := &ai.Message{Role: ai.RoleModel}
			for _, c := range s.calls {
				msg.Content = append(msg.Content, ai.NewToolRequestPart(c))
			}
			return &ai.ModelResponse{Message: msg, FinishReason: ai.FinishReasonStop}, nil
		}
		b, err := json.Marshal(last.Content)
		if err != nil {
			return nil, err
		}
		return &ai.ModelResponse{Message: ai.NewModelTextMessage(string(b)), FinishReason: ai.FinishReasonStop}, nil
	})
}

// toolResponses returns the tool responses the model got, by tool name.
func (s *scriptedModel) toolResponses() map[string]*ai.ToolResponse {
	out := make(map[string]*ai.ToolResponse)
	for _, req := range s.requests {
		for _, msg := range req.Messages {
			for _, p := range msg.Content {
				if p.IsToolResponse() {
					out[p.ToolResponse.Name] = p.ToolResponse
				}
			}
		}
	}
	return out
}

// generate runs one Genkit generation with a scripted model that asks for
// calls, with the manager's current tools.
func generate(t *testing.T, m *switchboard.Manager, calls ...*ai.ToolRequest) (*scriptedModel, error) {
	return generateWith(t, genkittools.Tools(t.Context(), m, nil), calls...)
}

// generateWith is generate with the given tools.
func generateWith(t *testing.T, tools []ai.ToolRef, calls ...*ai.ToolRequest) (*scriptedModel, error) {
	g := genkit.Init(t.Context())
	model := &scriptedModel{calls: calls}
	_, err := genkit.Generate(t.Context(), g,
		ai.WithModel(model.define(g)),
		ai.WithPrompt("go"),
		ai.WithTools(tools...))
	return model, err
}
