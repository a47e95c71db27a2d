//lint:file-ignore SA1019 The tests exercise sampling and logging, which the gateway forwards.

package gateway

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// legacy is the protocol of the upstreams here: from revision 2026-07-28,
// a server asks for sampling in its result (multi round-trip requests),
// which the gateway does not forward yet.
const legacy = "2025-11-25"

// legacyEntry is entry, on the legacy protocol.
func legacyEntry(name string) config.Server {
	e := entry(name, false)
	e.ProtocolVersion = legacy
	return e
}

var passthroughScript = mcptest.Script{
	Tools: []mcptest.ToolSpec{{Name: "ask", Behavior: mcptest.Sample}, {Name: "work", Behavior: mcptest.Progress}},
}

// httpSetup is setup with one server, s, behind a real HTTP listener.
func httpSetup(t *testing.T, script mcptest.Script) (*switchboard.Manager, *Gateway) {
	t.Helper()
	srv := mcptest.NewServer(script)
	hs, err := mcptest.StartHTTP(srv)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		srv.Close()
		hs.Close()
	})
	m := switchboard.New(&config.Config{Servers: []config.Server{{Name: "s", URL: hs.URL, ProtocolVersion: legacy}}}, &switchboard.Options{StartupGate: -1, NoCache: true})
	t.Cleanup(func() { m.Close() })
	if err := m.Connect(t.Context()); err != nil {
		t.Fatal(err)
	}
	g := New(m, nil)
	t.Cleanup(func() { g.Close() })
	return m, g
}

// legacyClient is client, on the legacy protocol: from revision
// 2026-07-28 a server cannot send a client requests while it serves one.
func legacyClient(t *testing.T, g *Gateway, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	return clientWith(t, g, opts, &mcp.ClientSessionOptions{ProtocolVersion: legacy})
}

// answering connects a client to g that answers every sampling request
// with its own name.
func answering(t *testing.T, g *Gateway, name string) *mcp.ClientSession {
	return legacyClient(t, g, &mcp.ClientOptions{CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
		return &mcp.CreateMessageResult{Content: &mcp.TextContent{Text: name}, Model: "m", Role: "assistant"}, nil
	}})
}

// askAll has n clients call s__ask at once and returns, per client, the
// text of its result and whether it is an error.
func askAll(t *testing.T, g *Gateway, n int) (texts []string, isErr []bool) {
	t.Helper()
	texts, isErr = make([]string, n), make([]bool, n)
	var wg sync.WaitGroup
	for i := range n {
		cs := answering(t, g, fmt.Sprintf("client %d", i))
		wg.Go(func() {
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "s__ask", Arguments: map[string]any{"text": "hi"}})
			if err != nil {
				t.Errorf("client %d: %v", i, err)
				return
			}
			texts[i], isErr[i] = res.Content[0].(*mcp.TextContent).Text, res.IsError
		})
	}
	wg.Wait()
	return texts, isErr
}

// TestSamplingReachesTheCallingClientOverHTTP: over Streamable HTTP, a
// sampling request goes to the client whose call caused it, however many
// clients call the same server at once.
func TestSamplingReachesTheCallingClientOverHTTP(t *testing.T) {
	_, g := httpSetup(t, passthroughScript)
	for round := range 3 {
		texts, isErr := askAll(t, g, 4)
		for i, text := range texts {
			if want := fmt.Sprintf("client %d", i); text != want || isErr[i] {
				t.Errorf("round %d: client %d got %q (error: %v), want its own answer %q", round, i, text, isErr[i], want)
			}
		}
	}
}

// TestSamplingWithoutALinkIsNeverMisattributed: where nothing on the wire
// ties a request to a call (stdio; here in memory), concurrent clients get
// their own answer or a clear error, never another client's.
func TestSamplingWithoutALinkIsNeverMisattributed(t *testing.T) {
	_, g := setup(t, upstreams{"s": mcptest.NewServer(passthroughScript)}, []config.Server{legacyEntry("s")}, nil)
	for round := range 3 {
		texts, isErr := askAll(t, g, 4)
		for i, text := range texts {
			own := text == fmt.Sprintf("client %d", i) && !isErr[i]
			refused := isErr[i] && strings.Contains(text, "nothing tells which one")
			if !own && !refused {
				t.Errorf("round %d: client %d got %q (error: %v): neither its own answer nor a refusal", round, i, text, isErr[i])
			}
		}
	}
	// Alone, a client is always answered.
	if texts, isErr := askAll(t, g, 1); texts[0] != "client 0" || isErr[0] {
		t.Errorf("a lone client got %q (error: %v)", texts[0], isErr[0])
	}
}

// TestSamplingWithoutTheCapabilityIsRefused: a client that did not declare
// sampling gets an error result, never a hang.
func TestSamplingWithoutTheCapabilityIsRefused(t *testing.T) {
	_, g := httpSetup(t, passthroughScript)
	cs := legacyClient(t, g, nil)
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "s__ask", Arguments: map[string]any{"text": "hi"}})
	if err != nil {
		t.Fatal(err)
	}
	if text := res.Content[0].(*mcp.TextContent).Text; !res.IsError || !strings.Contains(text, "does not support") {
		t.Errorf("result %q (error: %v), want a refusal", text, res.IsError)
	}
}
