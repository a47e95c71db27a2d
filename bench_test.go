package switchboard

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/catalog"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
	"github.com/switchboard-mcp/switchboard/internal/upstream"
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
			if _, err := callTool(b.Context(), m, "m__echo", args); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkStartup measures Connect over 50 configured stdio servers: 40
// healthy ones with 20 tools each, 5 that never answer initialize and 5
// whose command does not exist. "cold" starts with an empty tool cache, the
// baseline; "warm" with the cache a previous run left. It reports the time
// Connect takes to return and the tools usable when it does (tools/op):
// those of the servers connected by then, and in the warm run the cached,
// deferred tools of those still connecting. BENCHMARKS.md reports
// warm/cold of both.
func BenchmarkStartup(b *testing.B) { benchmarkStartup(b, 0) }

// BenchmarkSlowStartup is BenchmarkStartup with healthy servers that take a
// second to answer initialize, as servers launched through npx or a JVM do.
func BenchmarkSlowStartup(b *testing.B) { benchmarkStartup(b, time.Second) }

func benchmarkStartup(b *testing.B, startDelay time.Duration) {
	var healthy, all []config.Server
	stdio := func(name string, script mcptest.Script) config.Server {
		command, args, env := mcptest.StdioCommand(script)
		return config.Server{Name: name, Type: config.Stdio, Command: command, Args: args, Env: env}
	}
	for i := range 40 {
		healthy = append(healthy, stdio(fmt.Sprintf("ok%02d", i), mcptest.Script{Tools: benchTools(20), StartDelay: startDelay}))
	}
	all = append(all, healthy...)
	for i := range 5 {
		all = append(all, stdio(fmt.Sprintf("hang%d", i), mcptest.Script{HangOnInitialize: true}))
	}
	for i := range 5 {
		all = append(all, config.Server{Name: fmt.Sprintf("bad%d", i), Type: config.Stdio, Command: "switchboard-bench-no-such-command"})
	}
	run := func(b *testing.B, cacheDir func() string) {
		tools := 0
		for b.Loop() {
			b.StopTimer()
			m := New(&config.Config{Servers: all}, &Options{CacheDir: cacheDir(), CloseTimeout: time.Second})
			b.StartTimer()
			if err := m.Connect(b.Context()); err != nil {
				b.Fatal(err)
			}
			tools += len(m.Tools(b.Context(), nil))
			b.StopTimer()
			m.Close()
			b.StartTimer()
		}
		b.ReportMetric(float64(tools)/float64(b.N), "tools/op")
	}

	b.Run("cold", func(b *testing.B) {
		run(b, b.TempDir) // a new, empty directory each time
	})
	b.Run("warm", func(b *testing.B) {
		dir := b.TempDir()
		// What a previous run left: every healthy server's tools.
		m := New(&config.Config{Servers: healthy}, &Options{CacheDir: dir, StartupGate: -1})
		if err := m.Connect(b.Context()); err != nil {
			b.Fatal(err)
		}
		m.Close()
		run(b, func() string { return dir })
	})
}

// BenchmarkTools measures Tools over 5,000 tools on 100 servers when
// nothing changed: "rebuild" builds the view again before every call, as if
// a server's list had changed, the baseline; "cached" is served from the
// current view, one atomic load. Both copy every tool they return.
// BENCHMARKS.md reports cached/rebuild.
func BenchmarkTools(b *testing.B) {
	var servers []config.Server
	scripts := make(map[string]*mcptest.Server)
	for i := range 100 {
		name := fmt.Sprintf("s%03d", i)
		servers = append(servers, config.Server{Name: name, Type: config.Stdio, Command: "in-memory"})
		scripts[name] = mcptest.NewServer(mcptest.Script{Tools: benchTools(50)})
		defer scripts[name].Close()
	}
	m := New(&config.Config{Servers: servers}, &Options{
		Cache:       CacheOff,
		StartupGate: -1,
		Dial: func(ctx context.Context, srv config.Server) (mcp.Transport, error) {
			return scripts[srv.Name].ConnectInMemory(ctx)
		},
	})
	defer m.Close()
	if err := m.Connect(b.Context()); err != nil {
		b.Fatal(err)
	}
	if got := len(m.Tools(b.Context(), nil)); got != 5000 {
		b.Fatalf("%d tools, want 5000", got)
	}
	v := m.view.Load()
	snaps := make(map[string]upstream.Snapshot)
	for _, up := range v.servers {
		snaps[up.Name()] = up.Snapshot()
	}
	b.Run("rebuild", func(b *testing.B) {
		for b.Loop() {
			m.view.Store(m.build(v, snaps, true)) // as if a server's list had changed
			m.Tools(b.Context(), nil)
		}
	})
	b.Run("cached", func(b *testing.B) {
		for b.Loop() {
			m.Tools(b.Context(), nil)
		}
	})
}

// benchTools returns n tools with a small object schema each.
func benchTools(n int) []mcptest.ToolSpec {
	specs := make([]mcptest.ToolSpec, n)
	for i := range specs {
		specs[i] = mcptest.ToolSpec{
			Name:        fmt.Sprintf("tool_%02d", i),
			Description: "Does one thing well.",
			InputSchema: map[string]any{
				"type":       "object",
				"properties": map[string]any{"path": map[string]any{"type": "string"}, "limit": map[string]any{"type": "integer"}},
				"required":   []any{"path"},
			},
		}
	}
	return specs
}

// BenchmarkPinning measures what tool pinning adds to a server's list
// refresh: the manager's new view of one server with 1,000 tools, whose
// refreshed list changed one tool's description, as each refresh of a
// server whose tools change does ("changed": the other definitions are
// the ones it listed before, as the upstream keeps them), or in which every
// definition is new ("fresh": the first list after a restart). "off"
// builds the view without pinning, the baseline; "warn" checks every tool
// against its pins as well (enforce costs the same, and drops the held
// tools). BENCHMARKS.md reports warn/off for each.
func BenchmarkPinning(b *testing.B) {
	srv := config.Server{Name: "s", Type: config.Stdio, Command: "in-memory"}
	var base []*mcp.Tool
	for _, spec := range benchTools(1000) {
		base = append(base, &mcp.Tool{Name: spec.Name, Description: spec.Description, InputSchema: spec.InputSchema})
	}
	// Two lists a refresh alternates between.
	lists := func(fresh bool) [2][]*mcp.Tool {
		var out [2][]*mcp.Tool
		for k := range out {
			out[k] = make([]*mcp.Tool, len(base))
			for i, t := range base {
				if fresh || i == 0 {
					t = catalog.CloneTool(t)
				}
				out[k][i] = t
			}
			out[k][0].Description = fmt.Sprintf("Does one thing well, version %d.", k)
		}
		return out
	}
	for _, refresh := range []string{"changed", "fresh"} {
		for _, mode := range []config.PinningMode{config.PinningOff, config.PinningWarn} {
			b.Run(refresh+"/"+string(mode), func(b *testing.B) {
				m := New(&config.Config{Servers: []config.Server{srv}}, &Options{
					Cache: CacheOff, Pinning: config.Pinning{Mode: mode, File: filepath.Join(b.TempDir(), "pins.json")},
				})
				defer m.Close()
				v := m.view.Load()
				snap := upstream.Snapshot{Name: "s", Config: srv, State: upstream.Connected, Tools: base}
				v = m.build(v, map[string]upstream.Snapshot{"s": snap}, true) // pins on first use
				alternate := lists(refresh == "fresh")
				k := 0
				for b.Loop() {
					snap.Tools = alternate[k%2]
					k++
					if v = m.build(v, map[string]upstream.Snapshot{"s": snap}, true); len(v.exposed) != 1000 {
						b.Fatalf("%d tools exposed", len(v.exposed))
					}
				}
			})
		}
	}
}
