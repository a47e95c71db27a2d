package switchboard

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// BenchmarkCallTool measures one tools/call of an echo tool on an in-memory
// server: "raw" through a go-sdk ClientSession, the baseline, and "manager"
// through Manager.CallTool on the same kind of server, with the same
// protocol version and client capabilities. BENCHMARKS.md reports
// manager/raw.
func BenchmarkCallTool(b *testing.B) {
	args := map[string]any{"text": "hello"}

	b.Run("raw", func(b *testing.B) {
		srv := mcptest.NewServer(mcptest.Script{})
		defer srv.Close()
		transport, err := srv.ConnectInMemory(b.Context())
		if err != nil {
			b.Fatal(err)
		}
		client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "v"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
		// An in-memory server is configured as stdio, which gets the legacy
		// handshake: the baseline must speak the same era.
		cs, err := client.Connect(b.Context(), transport, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			b.Fatal(err)
		}
		defer cs.Close()
		for b.Loop() {
			if _, err := cs.CallTool(b.Context(), &mcp.CallToolParams{Name: "echo", Arguments: args}); err != nil {
				b.Fatal(err)
			}
		}
	})

	b.Run("manager", func(b *testing.B) {
		srv := mcptest.NewServer(mcptest.Script{})
		defer srv.Close()
		m := New(&config.Config{Servers: []config.Server{{Name: "m", Command: "in-memory"}}}, &Options{
			Dial: func(ctx context.Context, _ config.Server) (mcp.Transport, error) { return srv.ConnectInMemory(ctx) },
		})
		defer m.Close()
		if err := m.Connect(b.Context()); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, err := m.CallTool(b.Context(), "m__echo", args); err != nil {
				b.Fatal(err)
			}
		}
	})
}
