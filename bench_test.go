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
// through Manager.CallTool on the same server. BENCHMARKS.md reports
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
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "v"}, nil).Connect(b.Context(), transport, nil)
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
