package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// clientBudget is the patience of a client that gives up on a gateway
// that keeps it waiting: the 3 s. A hanging server's own timeout
// is 30 s, and the gateway once made every handshake and list wait 5 s for
// it.
const clientBudget = 3 * time.Second

// TestServeNeverWaitsOnAHangingServer: beside a server that hangs on
// initialize, a client that connects as soon as the gateway answers, over
// Streamable HTTP or over --stdio, has its handshake and the healthy
// server's tools within its budget; once the hanging server's tools are in
// the persistent cache (a run where it answered), they are listed too.
func TestServeNeverWaitsOnAHangingServer(t *testing.T) {
	isolate(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir()) // one cache for the runs below
	command, args, env := mcptest.StdioCommand(mcptest.Script{})
	// The flaky server's script comes from the gateway's environment, so
	// that the config, and the cache entry's fingerprint, stay the same
	// whether it answers or hangs.
	env[mcptest.ScriptEnv] = "${SWITCHBOARD_TEST_FLAKY}"
	cfg := writeConfig(t, map[string]mcptest.Script{"healthy": {}},
		map[string]any{"flaky": map[string]any{"command": command, "args": args, "env": env}})
	script := func(s mcptest.Script) {
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		t.Setenv("SWITCHBOARD_TEST_FLAKY", string(b))
	}
	hang := mcptest.Script{HangOnInitialize: true}

	check := func(t *testing.T, want []string) {
		t.Run("http", func(t *testing.T) {
			g := startServe(t, "--config", cfg)
			ctx, cancel := context.WithTimeout(t.Context(), clientBudget)
			defer cancel()
			if code := getJSON(t, g.url+"/healthz", nil); code != http.StatusOK {
				t.Fatalf("/healthz = %d", code)
			}
			transport := &http.Transport{}
			defer transport.CloseIdleConnections()
			listWithin(ctx, t, want, func(opts *mcp.ClientOptions) (*mcp.ClientSession, error) {
				return mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "v"}, opts).Connect(ctx,
					&mcp.StreamableClientTransport{Endpoint: g.url + "/mcp", HTTPClient: &http.Client{Transport: transport}}, nil)
			})
			if err := g.stop(t, syscall.SIGTERM); err != nil {
				t.Errorf("exit after SIGTERM: %v\n%s", err, g.log)
			}
		})
		t.Run("stdio", func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), clientBudget)
			defer cancel()
			listWithin(ctx, t, want, func(opts *mcp.ClientOptions) (*mcp.ClientSession, error) {
				cmd := exec.Command(binary, "serve", "--stdio", "--config", cfg)
				return mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "v"}, opts).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
			})
		})
	}

	script(hang)
	t.Run("cold cache", func(t *testing.T) { check(t, []string{"healthy__echo"}) })

	script(mcptest.Script{Tools: []mcptest.ToolSpec{{Name: "remembered"}}})
	g := startServe(t, "--config", cfg)
	g.waitLog(t, settledRE) // both connected: the flaky server's tools are cached
	if err := g.stop(t, syscall.SIGTERM); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, g.log)
	}

	script(hang)
	t.Run("warm cache", func(t *testing.T) { check(t, []string{"flaky__remembered", "healthy__echo"}) })
}

// listWithin connects a client with connect and lists its tools until they
// hold every name of want, listing again on each list_changed, within ctx:
// a server that connects after the gate reaches the client that way.
func listWithin(ctx context.Context, t *testing.T, want []string, connect func(*mcp.ClientOptions) (*mcp.ClientSession, error)) {
	t.Helper()
	changed := make(chan struct{}, 1)
	cs, err := connect(&mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
		select {
		case changed <- struct{}{}:
		default:
		}
	}})
	if err != nil {
		t.Fatalf("handshake within %v: %v", clientBudget, err)
	}
	defer cs.Close()
	for {
		names, err := mcptest.ToolNames(ctx, cs)
		if err != nil {
			t.Fatalf("tools/list within %v: %v", clientBudget, err)
		}
		if !slices.ContainsFunc(want, func(name string) bool { return !slices.Contains(names, name) }) {
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("tools %v within %v, want %v", names, clientBudget, strings.Join(want, ", "))
		}
	}
}

// TestServeStdioCachesWhatConnectsAfterItsClientLeft: a client that starts
// `serve --stdio`, lists once and leaves, as the Inspector's CLI does, is
// gone before a server slower than the startup gate connects; the gateway
// stays until it has (or for at most 2 s), so that its tools are in the
// persistent cache, and the next run lists them at once.
func TestServeStdioCachesWhatConnectsAfterItsClientLeft(t *testing.T) {
	isolate(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	cfg := writeConfig(t, map[string]mcptest.Script{
		"slow": {StartDelay: 400 * time.Millisecond, Tools: []mcptest.ToolSpec{{Name: "late"}}},
	}, nil)
	listOnce := func() []string {
		t.Helper()
		cmd := exec.Command(binary, "serve", "--stdio", "--config", cfg)
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "one-shot", Version: "v"}, nil).Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		return toolNames(t, cs)
	}
	if first := listOnce(); slices.Contains(first, "slow__late") {
		t.Logf("the first run listed the slow server already (a slow start of the gateway): %v", first)
	}
	if second := listOnce(); !slices.Contains(second, "slow__late") {
		t.Errorf("the second run lists %v, want slow__late from the cache", second)
	}
}

// TestServeHealthAnswersDuringTheGate: while the servers connect behind
// the startup gate, /healthz and /readyz answer at once; only /mcp waits
// for the gate.
func TestServeHealthAnswersDuringTheGate(t *testing.T) {
	isolate(t)
	cfg := writeConfig(t, map[string]mcptest.Script{"hang": {HangOnInitialize: true}}, nil)
	g := startServe(t, "--config", cfg, "--startup-gate", "1h")
	// A client that gives up long before the gate: the probes answer.
	client := &http.Client{Timeout: clientBudget}
	for _, path := range []string{"/healthz", "/readyz"} {
		resp, err := client.Get(g.url + path)
		if err != nil {
			t.Fatalf("GET %s during the gate: %v", path, err)
		}
		resp.Body.Close()
		if want := map[string]int{"/healthz": http.StatusOK, "/readyz": http.StatusOK}[path]; resp.StatusCode != want {
			t.Errorf("GET %s during the gate = %d, want %d", path, resp.StatusCode, want)
		}
	}
	if err := g.stop(t, syscall.SIGTERM); err != nil {
		t.Errorf("exit after SIGTERM during the gate: %v\n%s", err, g.log)
	}
}
