package lcgtools_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tmc/langchaingo/agents"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/schema"

	"github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// fleet runs mcptest servers in memory, by configured name, and dials
// them for a manager; a server marked down refuses to be dialed.
type fleet struct {
	t       *testing.T
	mu      sync.Mutex
	servers map[string]*mcptest.Server
	down    map[string]bool
}

func newFleet(t *testing.T) *fleet {
	return &fleet{t: t, servers: make(map[string]*mcptest.Server), down: make(map[string]bool)}
}

// add runs script as the server called name.
func (f *fleet) add(name string, script mcptest.Script) *mcptest.Server {
	s := mcptest.NewServer(script)
	f.t.Cleanup(func() { s.Close() })
	f.mu.Lock()
	defer f.mu.Unlock()
	f.servers[name] = s
	return s
}

// setDown makes dials of name fail (true) or succeed again (false).
func (f *fleet) setDown(name string, down bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down[name] = down
}

func (f *fleet) dial(ctx context.Context, srv config.Server) (mcp.Transport, error) {
	f.mu.Lock()
	s, down := f.servers[srv.Name], f.down[srv.Name]
	f.mu.Unlock()
	if down {
		return nil, errors.New("connection refused")
	}
	return s.ConnectInMemory(ctx)
}

// manager returns a connected manager over every server of the fleet,
// closed when the test ends. Connect waits for every server.
func (f *fleet) manager(opts *switchboard.Options) *switchboard.Manager {
	var o switchboard.Options
	if opts != nil {
		o = *opts
	}
	o.StartupGate = -1
	o.Dial = f.dial
	o.CacheDir = f.t.TempDir()
	var servers []config.Server
	for name := range f.servers {
		servers = append(servers, config.Server{Name: name, Type: config.Stdio, Command: "in-memory"})
	}
	slices.SortFunc(servers, func(a, b config.Server) int { return strings.Compare(a.Name, b.Name) })
	m := switchboard.New(&config.Config{Servers: servers}, &o)
	f.t.Cleanup(func() { m.Close() })
	if err := m.Connect(f.t.Context()); err != nil {
		f.t.Fatal(err)
	}
	return m
}

// scriptedModel is an llms.Model that gives its answers in order and
// records what it was asked: the text of every request and its options.
type scriptedModel struct {
	mu       sync.Mutex
	answers  []*llms.ContentChoice
	requests [][]llms.MessageContent
	options  []llms.CallOptions
}

func newModel(answers ...*llms.ContentChoice) *scriptedModel {
	return &scriptedModel{answers: answers}
}

func (s *scriptedModel) GenerateContent(_ context.Context, msgs []llms.MessageContent, opts ...llms.CallOption) (*llms.ContentResponse, error) {
	var o llms.CallOptions
	for _, opt := range opts {
		opt(&o)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, msgs)
	s.options = append(s.options, o)
	if len(s.answers) == 0 {
		return nil, errors.New("scripted model: no answer left")
	}
	a := s.answers[0]
	s.answers = s.answers[1:]
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{a}}, nil
}

func (s *scriptedModel) Call(ctx context.Context, prompt string, opts ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, s, prompt, opts...)
}

// prompt returns the text of the model's request i.
func (s *scriptedModel) prompt(i int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	for _, m := range s.requests[i] {
		for _, p := range m.Parts {
			switch p := p.(type) {
			case llms.TextContent:
				b.WriteString(p.Text)
			case llms.ToolCallResponse:
				fmt.Fprintf(&b, "[%s %s: %s]", p.ToolCallID, p.Name, p.Content)
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}

// act is a one-shot agent's answer that calls tool with input.
func act(tool, input string) *llms.ContentChoice {
	return &llms.ContentChoice{Content: fmt.Sprintf("Thought: I should use %s.\nAction: %s\nAction Input: %s", tool, tool, input)}
}

// final is an agent's final answer.
func final(answer string) *llms.ContentChoice {
	return &llms.ContentChoice{Content: "Final Answer: " + answer}
}

// run runs agent to its end with agents.Executor and returns its steps.
func run(ctx context.Context, t *testing.T, agent agents.Agent) []schema.AgentStep {
	t.Helper()
	out, err := agents.NewExecutor(agent, agents.WithReturnIntermediateSteps(), agents.WithMaxIterations(10)).
		Call(ctx, map[string]any{"input": "Do it."})
	if err != nil {
		t.Fatalf("the executor ended the run: %v", err)
	}
	steps, _ := out["intermediateSteps"].([]schema.AgentStep)
	return steps
}

// observations returns what each step gave the model.
func observations(steps []schema.AgentStep) []string {
	var out []string
	for _, s := range steps {
		out = append(out, s.Observation)
	}
	return out
}
