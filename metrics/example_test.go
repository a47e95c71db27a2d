package metrics_test

import (
	"context"
	"fmt"
	"log"
	"net/http/httptest"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
	"github.com/switchboard-mcp/switchboard/metrics"
)

// The metrics hear of the manager through its observer and follow its
// servers; their handler serves them to Prometheus.
func Example() {
	server := mcptest.NewServer(mcptest.Script{Tools: []mcptest.ToolSpec{{Name: "echo", Behavior: mcptest.Echo}}})
	defer server.Close()
	stats := metrics.New()
	m := switchboard.New(&config.Config{Servers: []config.Server{{Name: "s", Command: "in-memory"}}}, &switchboard.Options{
		Observer:    stats.Observer(),
		StartupGate: -1,
		Cache:       switchboard.CacheOff,
		Dial: func(ctx context.Context, _ config.Server) (mcp.Transport, error) {
			return server.ConnectInMemory(ctx)
		},
	})
	defer m.Close()
	defer stats.Follow(m)()

	ctx := context.Background()
	if err := m.Connect(ctx); err != nil {
		log.Fatal(err)
	}
	if _, err := m.CallTool(ctx, nil, &mcp.CallToolParams{Name: "s__echo", Arguments: map[string]any{"text": "hi"}}); err != nil {
		log.Fatal(err)
	}
	stats.ConfigReloaded("ok")

	scrape := httptest.NewRecorder()
	stats.Handler().ServeHTTP(scrape, httptest.NewRequest("GET", "/metrics", nil))
	for line := range strings.Lines(scrape.Body.String()) {
		line = strings.TrimSuffix(line, "\n")
		if strings.HasPrefix(line, "switchboard_tool_calls_total") || strings.HasPrefix(line, "switchboard_config_reloads_total") {
			fmt.Println(line)
		}
	}
	p50, _, calls := stats.Latency("s")
	fmt.Println("calls timed:", calls, "median above zero:", p50 > 0)
	// Output:
	// switchboard_config_reloads_total{outcome="ok"} 1
	// switchboard_tool_calls_total{outcome="ok",server="s",tool="s__echo"} 1
	// calls timed: 1 median above zero: true
}
