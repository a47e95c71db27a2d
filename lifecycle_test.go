package switchboard

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// Reconnect and Disconnect, and the order of lifecycle commands; with
// connect_test.go, the manager scenarios of OpenAI's agents SDK
// (seed-behaviours §1.1 to §1.5).

func TestReconnectFailedOnly(t *testing.T) {
	f := newFleet(t)
	a := f.add("a", mcptest.Script{})
	b := f.add("b", mcptest.Script{})
	f.fail("b", errors.New("refused"))
	m := f.manager(server("a"), server("b"))
	if err := m.Connect(t.Context()); err != nil {
		t.Fatal(err)
	}
	f.fail("b", nil)
	if err := m.ReconnectFailed(t.Context()); err != nil {
		t.Fatalf("Reconnect(failedOnly) = %v", err)
	}
	if diff := cmp.Diff([]string{"a", "b"}, m.Status().Connected()); diff != "" {
		t.Errorf("connected (-want +got):\n%s", diff)
	}
	if a.Counts().Starts != 1 || b.Counts().Starts != 1 {
		t.Errorf("handshakes a=%d b=%d, want 1 each: the healthy server is untouched", a.Counts().Starts, b.Counts().Starts)
	}
}

// TestStrictReconnectRefreshesActiveServers ports OA's
// test_manager_strict_reconnect_refreshes_active_servers: a fails once and
// b fails twice; the strict reconnect raises b's failure, and afterwards a
// is active and b failed.
func TestStrictReconnectRefreshesActiveServers(t *testing.T) {
	f := newFleet(t)
	f.add("a", mcptest.Script{})
	f.add("b", mcptest.Script{})
	f.fail("a", errors.New("a refused"))
	f.fail("b", errors.New("b refused"))
	m := f.managerWith(&Options{Strict: true}, server("a"), server("b"))
	if err := m.Connect(t.Context()); err == nil {
		t.Fatal("strict Connect with failing servers succeeded")
	}
	f.fail("a", nil)
	err := m.ReconnectFailed(t.Context())
	if err == nil || !strings.Contains(err.Error(), "b refused") || strings.Contains(err.Error(), "a refused") {
		t.Errorf("strict ReconnectFailed = %v, want b's failure only", err)
	}
	if diff := cmp.Diff([]string{"a"}, m.Status().Active()); diff != "" {
		t.Errorf("active (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"b"}, m.Status().Failed()); diff != "" {
		t.Errorf("failed (-want +got):\n%s", diff)
	}
}

// TestReconnectLeavesDisconnectedServersAlone: a server the host
// disconnected after it failed stays disconnected through ReconnectFailed
// and Reconnect of every server; naming it reconnects it.
func TestReconnectLeavesDisconnectedServersAlone(t *testing.T) {
	f := newFleet(t)
	f.add("a", mcptest.Script{})
	off := f.add("off", mcptest.Script{})
	f.fail("off", errors.New("refused"))
	m := f.manager(server("a"), server("off"))
	if err := m.Connect(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := m.Disconnect(t.Context(), "off"); err != nil {
		t.Fatal(err)
	}
	f.fail("off", nil)
	if err := m.ReconnectFailed(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := m.Reconnect(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := m.Status()[1].State; got != StateDisconnected || off.Counts().Starts != 0 {
		t.Errorf("disconnected server: state %v, %d handshakes; want disconnected, none", got, off.Counts().Starts)
	}
	if err := m.Reconnect(t.Context(), "off"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a", "off"}, m.Status().Connected()); diff != "" {
		t.Errorf("connected after naming it (-want +got):\n%s", diff)
	}
}

func TestReconnectAll(t *testing.T) {
	f := newFleet(t)
	a := f.add("a", mcptest.Script{})
	b := f.add("b", mcptest.Script{})
	m := f.manager(server("a"), server("b"))
	if err := m.Connect(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := m.Reconnect(t.Context()); err != nil {
		t.Fatal(err)
	}
	if a.Counts().Starts != 2 || b.Counts().Starts != 2 {
		t.Errorf("handshakes a=%d b=%d, want 2 each", a.Counts().Starts, b.Counts().Starts)
	}
	if diff := cmp.Diff([]string{"a", "b"}, m.Status().Connected()); diff != "" {
		t.Errorf("connected (-want +got):\n%s", diff)
	}
}

func TestLifecycleIsSerialized(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t)
		f.add("slow", mcptest.Script{})
		f.delay("slow", time.Minute)
		m := New(&config.Config{Servers: []config.Server{server("slow")}}, &Options{Dial: f.dial, StartupGate: -1, Cache: CacheOff})
		defer m.Close()
		first := make(chan error, 1)
		go func() { first <- m.Connect(context.Background()) }()
		synctest.Wait()
		// A caller that cannot wait for the lock gets its error; nothing is
		// done.
		for _, op := range []func(context.Context) error{
			m.Connect,
			func(ctx context.Context) error { return m.Reconnect(ctx) },
			func(ctx context.Context) error { return m.Disconnect(ctx, "slow") },
		} {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			err := op(ctx)
			cancel()
			if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "waiting for another lifecycle operation") {
				t.Errorf("a lifecycle call while Connect runs = %v, want its deadline", err)
			}
		}
		if err := <-first; err != nil {
			t.Errorf("the first Connect = %v", err)
		}
		if got := f.dialed("slow"); got != 1 {
			t.Errorf("%d dials, want 1", got)
		}
	})
}

func TestDisconnect(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t)
		f.add("a", mcptest.Script{Tools: tools("x")})
		f.add("b", mcptest.Script{
			Tools:     tools("y"),
			Prompts:   []mcptest.PromptSpec{{Name: "p"}},
			Resources: []mcptest.ResourceSpec{{URI: "mem://b", Name: "b"}},
		})
		m := f.managerWith(&Options{Cache: CacheOff}, server("a"), server("b"))
		if err := m.Connect(t.Context()); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		var mu sync.Mutex
		var changes []Event
		m.Subscribe(func(ev Event) {
			if ev.Kind == EventChanged {
				mu.Lock()
				changes = append(changes, ev)
				mu.Unlock()
			}
		})
		synctest.Wait()
		mu.Lock()
		changes = nil // what came before
		mu.Unlock()
		if err := m.Disconnect(t.Context(), "b"); err != nil {
			t.Fatal(err)
		}
		// Disconnect returns after the subscribers heard of it.
		mu.Lock()
		want := []Event{{Kind: EventChanged, Server: "b", Tools: Diff{Removed: []string{"b__y"}}, Prompts: Diff{Removed: []string{"b__p"}}, Resources: Diff{Removed: []string{"mem://b"}}}}
		if diff := cmp.Diff(want, changes, cmpEvents); diff != "" {
			t.Errorf("change events (-want +got):\n%s", diff)
		}
		mu.Unlock()
		if diff := cmp.Diff([]string{"a__x"}, names(m.Tools(t.Context(), nil))); diff != "" {
			t.Errorf("tools (-want +got):\n%s", diff)
		}
		if st := m.Status()[1]; st.State != StateDisconnected {
			t.Errorf("b is %v, want disconnected", st.State)
		}
		if err := m.Disconnect(t.Context(), "nope"); !errors.Is(err, ErrUnknownServer) {
			t.Errorf("Disconnect(nope) = %v", err)
		}
		// Connect brings it back.
		if err := m.Connect(t.Context()); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"a__x", "b__y"}, names(m.Tools(t.Context(), nil))); diff != "" {
			t.Errorf("tools after Connect (-want +got):\n%s", diff)
		}
	})
}

// cmpEvents compares events without their times.
var cmpEvents = cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".At" }, cmp.Ignore())

// TestRejectedEntryIsNotUnknown: a lifecycle command that names an entry
// the config rejected says why it was rejected, not that it is unknown.
func TestRejectedEntryIsNotUnknown(t *testing.T) {
	f := newFleet(t)
	f.add("a", mcptest.Script{})
	bad := errors.New(`mcp.json: server "bad": url: required for http servers`)
	m := New(&config.Config{Servers: []config.Server{server("a")}, Rejected: []config.Rejected{{Name: "bad", Err: bad}}},
		&Options{Dial: f.dial, Cache: CacheOff, StartupGate: -1})
	defer m.Close()
	if err := m.Reconnect(t.Context(), "bad"); !errors.Is(err, bad) || errors.Is(err, ErrUnknownServer) || !strings.Contains(err.Error(), "rejected by the config") {
		t.Errorf("Reconnect of a rejected entry = %v, want its rejection", err)
	}
	if err := m.Disconnect(t.Context(), "bad"); !errors.Is(err, bad) || errors.Is(err, ErrUnknownServer) {
		t.Errorf("Disconnect of a rejected entry = %v, want its rejection", err)
	}
	if err := m.Reconnect(t.Context(), "nope"); !errors.Is(err, ErrUnknownServer) {
		t.Errorf("Reconnect of an unknown name = %v, want ErrUnknownServer", err)
	}
}
