package switchboard

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// TestConnectWaitsForTheServersTheHostNeeds: Connect waits past the
// startup gate for the servers named in Options.WaitFor, until they have
// listed their tools, prompts and resources or failed, and for no other:
// a server that hangs costs the gate, no more.
func TestConnectWaitsForTheServersTheHostNeeds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t)
		f.add("slow", mcptest.Script{Tools: tools("t"), Resources: []mcptest.ResourceSpec{{URI: "mem://slow", Name: "slow"}}})
		f.delay("slow", 2*time.Second)
		f.add("broken", mcptest.Script{})
		f.delay("broken", time.Second)
		f.fail("broken", errors.New("connection refused"))
		f.add("hang", mcptest.Script{HangOnInitialize: true})
		m := f.managerWith(&Options{Cache: CacheOff, StartupGate: DefaultStartupGate, WaitFor: []string{"slow", "broken", "nowhere"}}, server("slow"), server("broken"), server("hang"))
		start := time.Now()
		if err := m.Connect(t.Context()); err != nil {
			t.Fatalf("Connect = %v", err)
		}
		if took := time.Since(start); took != 2*time.Second {
			t.Errorf("Connect returned after %v, want 2s: the slow server, and not the hanging one", took)
		}
		if diff := cmp.Diff([]string{"slow__t"}, names(m.Tools(t.Context(), nil))); diff != "" {
			t.Errorf("tools at return (-want +got):\n%s", diff)
		}
		if rs := m.Resources(t.Context(), nil); len(rs) != 1 || rs[0].Resource.URI != "mem://slow" {
			t.Errorf("resources at return: %v, want mem://slow", rs)
		}
		states := map[string]State{}
		for _, s := range m.Status() {
			states[s.Name] = s.State
		}
		if diff := cmp.Diff(map[string]State{"slow": StateConnected, "broken": StateFailed, "hang": StateConnecting}, states); diff != "" {
			t.Errorf("states at return (-want +got):\n%s", diff)
		}
	})
}

// TestConnectWaitsForNeededServersWithinItsContext: a server the host
// needs that hangs holds Connect until its timeout, or Connect's context.
func TestConnectWaitsForNeededServersWithinItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t)
		f.add("hang", mcptest.Script{HangOnInitialize: true})
		m := f.managerWith(&Options{Cache: CacheOff, StartupGate: DefaultStartupGate, WaitFor: []string{"hang"}}, server("hang"))
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
		defer cancel()
		start := time.Now()
		if err := m.Connect(ctx); err == nil {
			t.Error("Connect = nil, want the context's error")
		}
		if took := time.Since(start); took != 3*time.Second {
			t.Errorf("Connect returned after %v, want 3s", took)
		}
	})
}
