package gateway

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// TestHandshakeAndListsNeverWaitPastTheGate: with a server that hangs on
// initialize, a healthy one and a slow one, a client that connects while
// they start has its handshake and first list by the startup gate, with
// the servers connected by then; the slow one reaches it later with
// list_changed, and the hanging one is never waited for again.
func TestHandshakeAndListsNeverWaitPastTheGate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ups := upstreams{
			"hang":    mcptest.NewServer(mcptest.Script{HangOnInitialize: true}),
			"healthy": mcptest.NewServer(mcptest.Script{Tools: []mcptest.ToolSpec{{Name: "t"}}}),
			"slow":    mcptest.NewServer(mcptest.Script{Tools: []mcptest.ToolSpec{{Name: "u"}}, StartDelay: time.Second}),
		}
		for _, s := range ups {
			t.Cleanup(func() { s.Close() })
		}
		servers := []config.Server{entry("hang", false), entry("healthy", false), entry("slow", false)}
		m := switchboard.New(&config.Config{Servers: servers}, &switchboard.Options{Dial: ups.dial, Cache: switchboard.CacheOff})
		t.Cleanup(func() { m.Close() })
		connected := make(chan error, 1)
		go func() { connected <- m.Connect(context.Background()) }()
		synctest.Wait() // the servers are started; Connect waits at its gate
		g := New(m, nil)
		t.Cleanup(func() { g.Close() })

		changed := make(chan struct{}, 1)
		start := time.Now()
		cs := client(t, g, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		}})
		names := listNames(t, cs)
		if took := time.Since(start); took > switchboard.DefaultStartupGate {
			t.Errorf("the handshake and first list took %v, want at most the %v gate", took, switchboard.DefaultStartupGate)
		}
		if diff := cmp.Diff([]string{"healthy__t"}, names); diff != "" {
			t.Errorf("first list (-want +got):\n%s", diff)
		}
		if err := <-connected; err != nil {
			t.Fatal(err)
		}

		deadline := time.NewTimer(5 * time.Second)
		defer deadline.Stop()
		for !slices.Contains(names, "slow__u") {
			select {
			case <-changed:
			case <-deadline.C:
				t.Fatalf("tools %v after 5 s: the slow server's never arrived with list_changed", names)
			}
			start = time.Now()
			names = listNames(t, cs)
			if took := time.Since(start); took != 0 {
				t.Errorf("a list after the gate took %v, want no wait", took)
			}
		}
		if diff := cmp.Diff([]string{"healthy__t", "slow__u"}, names); diff != "" {
			t.Errorf("tools after list_changed (-want +got):\n%s", diff)
		}
	})
}
