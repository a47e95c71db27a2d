package upstream

import (
	"context"
	"net/http"
	"runtime"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// BenchmarkRestartRecovery measures how long an HTTP server's restart costs
// a caller. "fresh" is the baseline: a go-sdk client opens a new session
// and makes one call. "recovery" is the subject: an upstream whose server
// has just forgotten every session (as a restart behind its address does)
// makes one call, which meets the stale session, opens a new one, and
// replays. BENCHMARKS.md reports recovery/fresh.
func BenchmarkRestartRecovery(b *testing.B) {
	srv := mcptest.NewServer(mcptest.Script{LegacyOnly: true})
	hs, err := mcptest.StartHTTP(srv)
	if err != nil {
		b.Fatal(err)
	}
	defer hs.Close()
	defer srv.Close()
	args := map[string]any{"text": "hello"}

	b.Run("fresh", func(b *testing.B) {
		transport := &http.Transport{}
		defer transport.CloseIdleConnections()
		client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "v"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
		for b.Loop() {
			cs, err := client.Connect(b.Context(), &mcp.StreamableClientTransport{Endpoint: hs.URL, HTTPClient: &http.Client{Transport: transport}}, nil)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := cs.CallTool(b.Context(), &mcp.CallToolParams{Name: "echo", Arguments: args}); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			cs.Close()
			b.StartTimer()
		}
	})

	b.Run("recovery", func(b *testing.B) {
		for b.Loop() {
			// A new upstream each time: restarts this frequent would trip
			// the breaker, as they should.
			b.StopTimer()
			u := New(config.Server{Name: "web", URL: hs.URL}, nil)
			if err := u.Connect(b.Context()); err != nil {
				b.Fatal(err)
			}
			srv.Restart()
			b.StartTimer()
			if _, err := u.CallTool(b.Context(), "echo", args); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			u.Close()
			b.StartTimer()
		}
	})
}

// BenchmarkIdleMemory measures the heap held by each idle, connected
// session: "raw" go-sdk ClientSessions, the baseline, against "upstream"
// Upstreams, on in-memory mcptest servers (whose side both include).
// BENCHMARKS.md reports upstream/raw of the bytes/conn metric.
func BenchmarkIdleMemory(b *testing.B) {
	const n = 100
	measure := func(b *testing.B, open func(*mcptest.Server) func()) {
		for b.Loop() {
			servers := make([]*mcptest.Server, n)
			for i := range servers {
				servers[i] = mcptest.NewServer(mcptest.Script{})
			}
			before := heap()
			closers := make([]func(), n)
			for i, srv := range servers {
				closers[i] = open(srv)
			}
			after := heap()
			b.ReportMetric(float64(after-before)/n, "bytes/conn")
			for i, close := range closers {
				close()
				servers[i].Close()
			}
		}
	}
	b.Run("raw", func(b *testing.B) {
		client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "v"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
		measure(b, func(srv *mcptest.Server) func() {
			transport, err := srv.ConnectInMemory(b.Context())
			if err != nil {
				b.Fatal(err)
			}
			cs, err := client.Connect(b.Context(), transport, &mcp.ClientSessionOptions{ProtocolVersion: legacyProtocolVersion})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := cs.ListTools(b.Context(), nil); err != nil {
				b.Fatal(err)
			}
			return func() { cs.Close() }
		})
	})
	b.Run("upstream", func(b *testing.B) {
		measure(b, func(srv *mcptest.Server) func() {
			u := New(config.Server{Name: "m", Command: "in-memory"}, &Options{
				Dial: func(ctx context.Context, _ config.Server) (mcp.Transport, error) { return srv.ConnectInMemory(ctx) },
			})
			if err := u.Connect(b.Context()); err != nil {
				b.Fatal(err)
			}
			return func() { u.Close() }
		})
	})
}

// heap returns the bytes in use after a full collection.
func heap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
