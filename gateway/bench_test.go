package gateway

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// BenchmarkMethodNotFound: what methodNotFound costs a tools/call over
// Streamable HTTP (stateless, in process): "wrapped" against "direct", the
// go-sdk's handler alone, in the same run.
func BenchmarkMethodNotFound(b *testing.B) {
	ups := upstreams{"m": mcptest.NewServer(mcptest.Script{})}
	defer ups["m"].Close()
	m := switchboard.New(&config.Config{Servers: []config.Server{entry("m", false)}}, &switchboard.Options{Dial: ups.dial, StartupGate: -1, NoCache: true})
	defer m.Close()
	if err := m.Connect(b.Context()); err != nil {
		b.Fatal(err)
	}
	g := New(m, &Options{Stateless: true})
	defer g.Close()
	direct := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return g.server }, &mcp.StreamableHTTPOptions{Stateless: true})
	b.Run("direct", func(b *testing.B) { benchmarkCall(b, direct) })
	b.Run("wrapped", func(b *testing.B) { benchmarkCall(b, methodNotFound(direct)) })
}

// benchmarkCall posts tools/call to h, in process.
func benchmarkCall(b *testing.B, h http.Handler) {
	const body = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"m__echo","arguments":{"text":"hello"}}}`
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequestWithContext(b.Context(), http.MethodPost, "/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "hello") {
			b.Fatalf("tools/call: %d %s", rec.Code, rec.Body)
		}
	}
}
