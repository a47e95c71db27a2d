package switchboard

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// Connect: retries, sequential and strict passes, and their parallelism;
// with lifecycle_test.go, the manager scenarios of OpenAI's agents SDK
// (seed-behaviours §1.1 to §1.5).

// TestConnectRetriesFailedServers ports OA's
// test_manager_connect_all_retries_all_servers: a later Connect retries
// what failed, clears its error, and leaves the connected alone.
func TestConnectRetriesFailedServers(t *testing.T) {
	f := newFleet(t)
	f.add("a", mcptest.Script{})
	f.add("b", mcptest.Script{})
	f.fail("b", errors.New("refused"))
	m := f.managerWith(nil, server("a"), server("b"))
	if err := m.Connect(t.Context()); err != nil {
		t.Fatal(err)
	}
	f.fail("b", nil)
	if err := m.Connect(t.Context()); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a", "b"}, m.Status().Connected()); diff != "" {
		t.Errorf("connected (-want +got):\n%s", diff)
	}
	if errs := m.Status().Errors(); len(errs) != 0 {
		t.Errorf("errors after a successful retry: %v", errs)
	}
	if got := f.dialed("a"); got != 1 {
		t.Errorf("a was dialed %d times, want once", got)
	}
}

// TestKeepFailed: the servers that failed, and the entries the config
// rejected, are active only with Options.KeepFailed.
func TestKeepFailed(t *testing.T) {
	f := newFleet(t)
	f.add("a", mcptest.Script{})
	f.add("b", mcptest.Script{})
	f.fail("b", errors.New("refused"))
	cfg := &config.Config{Servers: []config.Server{server("a"), server("b")}, Rejected: []config.Rejected{{Name: "bad", Err: errors.New("no command")}}}
	for _, keep := range []bool{false, true} {
		m := New(cfg, &Options{KeepFailed: keep, Dial: f.dial, Cache: CacheOff, StartupGate: -1})
		defer m.Close()
		if err := m.Connect(t.Context()); err != nil {
			t.Fatal(err)
		}
		// A rejected entry counts as failed, as b does.
		want := []string{"a"}
		if keep {
			want = []string{"a", "b", "bad"}
		}
		if diff := cmp.Diff(want, m.Status().Active()); diff != "" {
			t.Errorf("Active with KeepFailed %v (-want +got):\n%s", keep, diff)
		}
	}
}

func TestSequentialConnect(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t)
		var order []string
		var mu sync.Mutex
		for _, name := range []string{"c", "a", "b"} {
			f.add(name, mcptest.Script{})
			f.delay(name, time.Second)
		}
		m := New(&config.Config{Servers: []config.Server{server("c"), server("a"), server("b")}}, &Options{
			Sequential: true, Cache: CacheOff,
			Dial: func(ctx context.Context, srv config.Server) (mcp.Transport, error) {
				mu.Lock()
				order = append(order, srv.Name)
				mu.Unlock()
				return f.dial(ctx, srv)
			},
		})
		defer m.Close()
		start := time.Now()
		if err := m.Connect(t.Context()); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took != 3*time.Second {
			t.Errorf("three servers of 1 s each took %v, want 3s: one at a time", took)
		}
		if diff := cmp.Diff([]string{"c", "a", "b"}, order); diff != "" {
			t.Errorf("dial order (-want +got):\n%s", diff)
		}
	})
}

// TestStrictConnectCleansUpThisPassOnly: strict mode closes what the failed
// call connected, and leaves what was connected before.
func TestStrictConnectCleansUpThisPassOnly(t *testing.T) {
	f := newFleet(t)
	a := f.add("a", mcptest.Script{})
	f.add("b", mcptest.Script{})
	m := f.managerWith(&Options{Strict: true}, server("a"), server("b"))
	if err := m.Connect(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := m.Disconnect(t.Context(), "b"); err != nil {
		t.Fatal(err)
	}
	f.fail("b", errors.New("refused"))
	err := m.Connect(t.Context())
	if err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("strict Connect = %v, want b's failure", err)
	}
	if diff := cmp.Diff([]string{"a"}, m.Status().Active()); diff != "" {
		t.Errorf("Active after the failed pass (-want +got):\n%s", diff)
	}
	if got := a.Counts().Starts; got != 1 {
		t.Errorf("a was connected %d times, want once: it was connected before the pass", got)
	}
}

// TestStrictConnectCleansUpInReverseOrder: a strict pass that fails
// disconnects the servers it started, last first; the failed one keeps its
// error.
func TestStrictConnectCleansUpInReverseOrder(t *testing.T) {
	f := newFleet(t)
	for _, n := range []string{"a", "b", "c"} {
		f.add(n, mcptest.Script{})
	}
	f.fail("c", errors.New("refused"))
	m := f.managerWith(&Options{Strict: true, StartupGate: -1}, server("a"), server("b"), server("c"))
	var mu sync.Mutex
	var stopped []string
	m.Subscribe(func(ev Event) {
		if ev.Kind == EventState && ev.State == StateDisconnected && ev.From != StateDisconnected {
			mu.Lock()
			stopped = append(stopped, ev.Server)
			mu.Unlock()
		}
	})
	if err := m.Connect(t.Context()); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("strict Connect with a failing server = %v, want its failure", err)
	}
	m.Close() // delivers every event
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff([]string{"c", "b", "a"}, stopped); diff != "" {
		t.Errorf("cleanup order (-want +got):\n%s", diff)
	}
}

// TestStrictConnectAgainAfterCleanup: the servers a failed strict pass
// disconnected connect again, once healed; the failed one is reported as
// failed meanwhile.
func TestStrictConnectAgainAfterCleanup(t *testing.T) {
	f := newFleet(t)
	for _, n := range []string{"a", "b"} {
		f.add(n, mcptest.Script{})
	}
	f.fail("b", errors.New("refused"))
	m := f.managerWith(&Options{Strict: true}, server("a"), server("b"))
	if err := m.Connect(t.Context()); err == nil {
		t.Fatal("strict Connect with a failing server succeeded")
	}
	if got := m.Status().Connected(); len(got) != 0 {
		t.Errorf("connected after the failed pass: %v", got)
	}
	if diff := cmp.Diff([]string{"b"}, m.Status().Failed()); diff != "" {
		t.Errorf("failed after the failed pass (-want +got):\n%s", diff)
	}
	f.fail("b", nil)
	if err := m.Connect(t.Context()); err != nil {
		t.Errorf("Connect after healing = %v", err)
	}
	if diff := cmp.Diff([]string{"a", "b"}, m.Status().Connected()); diff != "" {
		t.Errorf("connected (-want +got):\n%s", diff)
	}
}

func TestNonStrictConnectKeepsTheHealthy(t *testing.T) {
	f := newFleet(t)
	f.add("good", mcptest.Script{Tools: tools("ok")})
	f.fail("bad", errors.New("connection refused"))
	off := server("off")
	off.Enabled = new(bool)
	m := f.manager(server("good"), server("bad"), off)
	if err := m.Connect(t.Context()); err != nil {
		t.Fatalf("Connect = %v, want nil in non-strict mode", err)
	}
	if diff := cmp.Diff([]string{"good__ok"}, names(m.Tools(t.Context(), nil))); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	got := map[string]string{}
	for _, s := range m.Status() {
		got[s.Name] = s.State.String()
		if s.Name == "bad" && (s.Err == nil || !strings.Contains(s.Err.Error(), `server "bad": connect: connection refused`)) {
			t.Errorf("bad's error = %v", s.Err)
		}
	}
	if diff := cmp.Diff(map[string]string{"good": "connected", "bad": "failed", "off": "disabled"}, got); diff != "" {
		t.Errorf("states (-want +got):\n%s", diff)
	}
}

func TestConnectIsParallel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t)
		var servers []config.Server
		for i := range 5 {
			name := fmt.Sprintf("s%d", i)
			f.add(name, mcptest.Script{Tools: tools("t")})
			servers = append(servers, server(name))
		}
		delay := 3 * time.Second
		m := New(&config.Config{Servers: servers}, &Options{StartupGate: -1, Cache: CacheOff, Dial: func(ctx context.Context, srv config.Server) (mcp.Transport, error) {
			select {
			case <-time.After(delay):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return f.dial(ctx, srv)
		}})
		defer m.Close()
		start := time.Now()
		if err := m.Connect(t.Context()); err != nil {
			t.Fatal(err)
		}
		if got := time.Since(start); got != delay {
			t.Errorf("5 servers that take %v each connected in %v, want %v (in parallel)", delay, got, delay)
		}
		if got := len(m.Tools(t.Context(), nil)); got != 5 {
			t.Errorf("%d tools, want 5", got)
		}
	})
}

func TestConnectHonoursCallerContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t)
		f.add("hang", mcptest.Script{HangOnInitialize: true})
		srv := server("hang")
		srv.Timeout = new(int64) // no timeout
		m := New(&config.Config{Servers: []config.Server{srv}}, &Options{Dial: f.dial, StartupGate: -1, Cache: CacheOff})
		defer m.Close()
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		err := m.Connect(ctx)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Connect = %v, want the caller's deadline", err)
		}
		if got := m.Status()[0].State; got != StateConnecting {
			t.Errorf("state = %v, want still connecting in the background", got)
		}
	})
}

func TestConnectIsIdempotent(t *testing.T) {
	f := newFleet(t)
	s := f.add("a", mcptest.Script{})
	m := f.manager(server("a"))
	for range 3 {
		if err := m.Connect(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if got := s.Counts().Starts; got != 1 {
		t.Errorf("%d handshakes, want 1", got)
	}
}
