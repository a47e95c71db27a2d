package switchboard

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
	"github.com/switchboard-mcp/switchboard/internal/toolcache"
)

// The manager scenarios of OpenAI's agents SDK (seed-behaviours §1.1 to
// §1.5) and oh-my-pi's startup gate and cache (§2.4, §2.5).

func TestViewsAreDistinctAndCopies(t *testing.T) {
	f := newFleet(t)
	f.add("a", mcptest.Script{})
	f.add("b", mcptest.Script{})
	f.fail("b", errors.New("refused"))
	off := server("off")
	off.Enabled = new(bool)
	cfg := &config.Config{
		Servers:  []config.Server{server("a"), server("b"), off},
		Rejected: []config.Rejected{{Name: "bad", Err: errors.New("bad entry")}},
	}
	m := New(cfg, &Options{Dial: f.dial, CacheDir: t.TempDir()})
	defer m.Close()
	if err := m.Connect(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		got  []string
		want []string
	}{
		{"Servers", m.Servers(), []string{"a", "b", "off", "bad"}},
		{"Connected", m.Connected(), []string{"a"}},
		{"Failed", m.Failed(), []string{"b", "bad"}},
		{"Active", m.Active(), []string{"a"}},
	} {
		if diff := cmp.Diff(tc.want, tc.got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
	errs := m.Errors()
	if len(errs) != 2 || errs["b"] == nil || errs["bad"] == nil {
		t.Errorf("Errors = %v, want b's and bad's", errs)
	}
	// Mutating what was returned changes nothing.
	m.Servers()[0] = "mutated"
	delete(errs, "b")
	if m.Servers()[0] != "a" || m.Errors()["b"] == nil {
		t.Error("a returned view aliases the manager's state")
	}
}

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
	if diff := cmp.Diff([]string{"a", "b"}, m.Connected()); diff != "" {
		t.Errorf("connected (-want +got):\n%s", diff)
	}
	if errs := m.Errors(); len(errs) != 0 {
		t.Errorf("errors after a successful retry: %v", errs)
	}
	if got := f.dialed("a"); got != 1 {
		t.Errorf("a was dialed %d times, want once", got)
	}
}

func TestKeepFailed(t *testing.T) {
	f := newFleet(t)
	f.add("a", mcptest.Script{})
	f.add("b", mcptest.Script{})
	f.fail("b", errors.New("refused"))
	m := f.managerWith(&Options{KeepFailed: true}, server("a"), server("b"))
	if err := m.Connect(t.Context()); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a", "b"}, m.Active()); diff != "" {
		t.Errorf("Active with KeepFailed (-want +got):\n%s", diff)
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
			Sequential: true, NoCache: true,
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
	if diff := cmp.Diff([]string{"a"}, m.Active()); diff != "" {
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
	if got := m.Connected(); len(got) != 0 {
		t.Errorf("connected after the failed pass: %v", got)
	}
	if diff := cmp.Diff([]string{"b"}, m.Failed()); diff != "" {
		t.Errorf("failed after the failed pass (-want +got):\n%s", diff)
	}
	f.fail("b", nil)
	if err := m.Connect(t.Context()); err != nil {
		t.Errorf("Connect after healing = %v", err)
	}
	if diff := cmp.Diff([]string{"a", "b"}, m.Connected()); diff != "" {
		t.Errorf("connected (-want +got):\n%s", diff)
	}
}

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
	if diff := cmp.Diff([]string{"a", "b"}, m.Connected()); diff != "" {
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
	if diff := cmp.Diff([]string{"a"}, m.Active()); diff != "" {
		t.Errorf("active (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"b"}, m.Failed()); diff != "" {
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
	if diff := cmp.Diff([]string{"a", "off"}, m.Connected()); diff != "" {
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
	if diff := cmp.Diff([]string{"a", "b"}, m.Connected()); diff != "" {
		t.Errorf("connected (-want +got):\n%s", diff)
	}
}

func TestLifecycleIsSerialized(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t)
		f.add("slow", mcptest.Script{})
		f.delay("slow", time.Minute)
		m := New(&config.Config{Servers: []config.Server{server("slow")}}, &Options{Dial: f.dial, StartupGate: -1, NoCache: true})
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
		m := f.managerWith(&Options{NoCache: true}, server("a"), server("b"))
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
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		want := []Event{{Kind: EventChanged, Server: "b", Tools: Diff{Removed: []string{"b__y"}}, Prompts: Diff{Removed: []string{"b__p"}}, Resources: Diff{Removed: []string{"mem://b"}}}}
		if diff := cmp.Diff(want, changes, cmpEvents); diff != "" {
			t.Errorf("change events (-want +got):\n%s", diff)
		}
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

// TestStartupGate ports oh-my-pi's mcp-startup-no-block test (issue #2100):
// a server that never answers initialize must not delay Connect past the
// gate, and must not be spawned twice.
func TestStartupGate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t)
		f.add("hang", mcptest.Script{HangOnInitialize: true})
		f.add("fast", mcptest.Script{Tools: tools("t")})
		hang := server("hang")
		hang.Timeout = new(int64)
		m := f.managerWith(&Options{StartupGate: DefaultStartupGate}, hang, server("fast"))
		start := time.Now()
		if err := m.Connect(t.Context()); err != nil {
			t.Fatalf("Connect = %v", err)
		}
		if took := time.Since(start); took != DefaultStartupGate {
			t.Errorf("Connect returned after %v, want the %v gate", took, DefaultStartupGate)
		}
		if diff := cmp.Diff([]string{"fast__t"}, names(m.Tools(t.Context(), nil))); diff != "" {
			t.Errorf("tools at return (-want +got):\n%s", diff)
		}
		if errs := m.Errors(); len(errs) != 0 {
			t.Errorf("errors at return: %v, want none: the hanging server is still connecting", errs)
		}
		if err := m.Connect(t.Context()); err != nil {
			t.Errorf("a second Connect = %v", err)
		}
		if got := f.dialed("hang"); got != 1 {
			t.Errorf("the hanging server was dialed %d times, want once", got)
		}
	})
}

func TestDeferredToolsFromTheCache(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t)
		srv := f.add("slow", mcptest.Script{Tools: tools("t", "u")})
		dir := t.TempDir()
		cfg := server("slow")

		// A first run connects and caches the tools.
		first := New(&config.Config{Servers: []config.Server{cfg}}, &Options{Dial: f.dial, CacheDir: dir})
		if err := first.Connect(t.Context()); err != nil {
			t.Fatal(err)
		}
		first.Close()

		// The next start: the server is slow; its cached tools are there at
		// once, and a call waits for it.
		f.delay("slow", time.Second)
		m := New(&config.Config{Servers: []config.Server{cfg}}, &Options{Dial: f.dial, CacheDir: dir})
		defer m.Close()
		if err := m.Connect(t.Context()); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"slow__t", "slow__u"}, names(m.Tools(t.Context(), nil))); diff != "" {
			t.Errorf("deferred tools (-want +got):\n%s", diff)
		}
		if st := m.Status()[0]; st.State != StateConnecting || !st.Deferred {
			t.Errorf("status = %v (deferred %v), want connecting with deferred tools", st.State, st.Deferred)
		}
		res, err := callTool(t.Context(), m, "slow__t", map[string]any{"n": 1})
		if err != nil || mcptest.Text(res) != `{"n":1}` {
			t.Fatalf("call of a deferred tool = %v, %v; want it to wait for the server", res, err)
		}
		if got := srv.Counts().ByTool["t"]; got != 1 {
			t.Errorf("t ran %d times", got)
		}
	})
}

// TestCachedToolsExposedBeforeTheFirstDial: behind the gate, the view
// with every server's cached tools is made before any server is dialed, so
// that servers starting at once cannot starve its making past the gate.
// Without the hold it fails only when a dial wins the race with the view;
// TestStartAfterHoldsTheFirstAttempt (internal/upstream) is the
// deterministic guard of the hold itself.
func TestCachedToolsExposedBeforeTheFirstDial(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t)
		f.add("a", mcptest.Script{Tools: tools("t")})
		f.add("b", mcptest.Script{Tools: tools("u")})
		cfgs := []config.Server{server("a"), server("b")}
		dir := t.TempDir()
		first := New(&config.Config{Servers: cfgs}, &Options{Dial: f.dial, CacheDir: dir, StartupGate: -1})
		if err := first.Connect(t.Context()); err != nil {
			t.Fatal(err)
		}
		first.Close()

		var m *Manager
		var mu sync.Mutex
		seen := make(map[string][]string) // what Tools returned when each server was dialed
		dial := func(ctx context.Context, srv config.Server) (mcp.Transport, error) {
			mu.Lock()
			seen[srv.Name] = names(m.Tools(ctx, nil))
			mu.Unlock()
			return f.dial(ctx, srv)
		}
		m = New(&config.Config{Servers: cfgs}, &Options{Dial: dial, CacheDir: dir, StartupGate: DefaultStartupGate})
		defer m.Close()
		if err := m.Connect(t.Context()); err != nil {
			t.Fatal(err)
		}
		want := []string{"a__t", "b__u"}
		mu.Lock()
		defer mu.Unlock()
		if diff := cmp.Diff(map[string][]string{"a": want, "b": want}, seen); diff != "" {
			t.Errorf("tools when each server was dialed (-want +got):\n%s", diff)
		}
	})
}

func TestNoCacheEntryToolsArriveLater(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t)
		f.add("slow", mcptest.Script{Tools: tools("t")})
		f.delay("slow", time.Second)
		m := f.managerWith(&Options{StartupGate: DefaultStartupGate}, server("slow"))
		added := mcptest.Await(m.Subscribe, func(ev Event) bool {
			return ev.Kind == EventChanged && len(ev.Tools.Added) > 0
		})
		if err := m.Connect(t.Context()); err != nil {
			t.Fatal(err)
		}
		if got := m.Tools(t.Context(), nil); len(got) != 0 {
			t.Errorf("tools at return: %v, want none: nothing is cached", names(got))
		}
		if diff := cmp.Diff([]string{"slow__t"}, (<-added).Tools.Added); diff != "" {
			t.Errorf("added later (-want +got):\n%s", diff)
		}
	})
}

func TestCacheIsKeyedByFingerprintAndRedacted(t *testing.T) {
	const secret = "sk-cache-0123456789abcdef"
	t.Setenv("SWITCHBOARD_TEST_CACHE_SECRET", secret)
	f := newFleet(t)
	f.add("s", mcptest.Script{Tools: []mcptest.ToolSpec{{Name: "t", Description: "uses key " + secret}}})
	dir := t.TempDir()
	cfg := server("s")
	cfg.Args = []string{"--key", "${SWITCHBOARD_TEST_CACHE_SECRET}"}
	m := New(&config.Config{Servers: []config.Server{cfg}}, &Options{Dial: f.dial, CacheDir: dir})
	if err := m.Connect(t.Context()); err != nil {
		t.Fatal(err)
	}
	m.Close() // the cache is written by then
	cache := toolcache.Open(dir, nil)
	got, _, ok := cache.Get("s", cfg.Fingerprint())
	if !ok || len(got) != 1 {
		t.Fatalf("cache entry = %v, %v", got, ok)
	}
	if strings.Contains(got[0].Description, secret) || !strings.Contains(got[0].Description, "[redacted]") {
		t.Errorf("cached description %q, want the secret redacted", got[0].Description)
	}
	files, _ := os.ReadDir(dir)
	for _, file := range files {
		b, _ := os.ReadFile(dir + "/" + file.Name())
		if strings.Contains(string(b), secret) {
			t.Errorf("%s holds the secret", file.Name())
		}
	}
	changed := cfg.Clone()
	changed.Args = append(changed.Args, "--verbose")
	if _, _, ok := cache.Get("s", changed.Fingerprint()); ok {
		t.Error("a changed config hit the old entry")
	}
}

func TestEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t)
		f.add("good", mcptest.Script{Tools: tools("t")})
		f.add("bad", mcptest.Script{})
		f.fail("bad", errors.New("refused"))
		good, bad := server("good"), server("bad")
		bad.Source = "/etc/switchboard/mcp.json"
		m := f.managerWith(&Options{NoCache: true}, good, bad)
		var mu sync.Mutex
		var got []string
		m.Subscribe(func(ev Event) {
			mu.Lock()
			defer mu.Unlock()
			switch ev.Kind {
			case EventState:
				s := ev.Server + " " + ev.State.String()
				if ev.Source != "" {
					s += " (" + ev.Source + ")"
				}
				got = append(got, s)
			case EventChanged:
				got = append(got, "changed +"+strings.Join(ev.Tools.Added, ","))
			}
		})
		if err := m.Connect(t.Context()); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		for _, want := range []string{"good connecting", "bad connecting", "good connected", "bad failed (/etc/switchboard/mcp.json)", "changed +good__t"} {
			found := false
			for _, g := range got {
				found = found || g == want
			}
			if !found {
				t.Errorf("events %q lack %q", got, want)
			}
		}
	})
}

func TestEventBacklogUntilFirstSubscriber(t *testing.T) {
	m := New(&config.Config{}, &Options{NoCache: true})
	for i := range 150 {
		m.emit(Event{Kind: EventResourceUpdated, URI: string(rune('a' + i%26))})
	}
	var got []Event
	done := make(chan struct{})
	m.Subscribe(func(ev Event) {
		got = append(got, ev)
		if len(got) == backlogSize {
			close(done)
		}
	})
	<-done
	m.Close()
	if len(got) != backlogSize {
		t.Errorf("the first subscriber got %d events, want the last %d", len(got), backlogSize)
	}
	if got[0].URI != string(rune('a'+50%26)) {
		t.Errorf("the first kept event is %q, want the 51st: the oldest are dropped", got[0].URI)
	}
}

func TestDynamicFilterApprovalAndSchemas(t *testing.T) {
	f := newFleet(t)
	f.add("s", mcptest.Script{Tools: []mcptest.ToolSpec{
		{Name: "read", InputSchema: map[string]any{"type": "object"}},
		{Name: "write", InputSchema: map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{"type": "string"}}}},
	}})
	approval, err := NewApprovalPolicy(map[string]any{"write": "always"})
	if err != nil {
		t.Fatal(err)
	}
	m := f.managerWith(&Options{
		Approval:      approval,
		StrictSchemas: true,
		Filter: func(_ context.Context, fc FilterContext, tool *mcp.Tool) (bool, error) {
			if fc.Server != "s" {
				return false, errors.New("wrong server")
			}
			tool.Description = "mutated by the filter"
			return fc.Query.Agent == "admin" || tool.Name == "read", nil
		},
	}, server("s"))
	if err := m.Connect(t.Context()); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"s__read"}, names(m.Tools(t.Context(), &Query{Agent: "guest"}))); diff != "" {
		t.Errorf("guest's tools (-want +got):\n%s", diff)
	}
	admin := m.Tools(t.Context(), &Query{Agent: "admin"})
	if diff := cmp.Diff([]string{"s__read", "s__write"}, names(admin)); diff != "" {
		t.Errorf("admin's tools (-want +got):\n%s", diff)
	}
	if admin[0].Description == "mutated by the filter" || admin[0].Definition().Description == "mutated by the filter" {
		t.Error("the filter's change to its copy leaked out")
	}
	// Missing properties become {}; strict conversion applies where it can.
	read := admin[0].InputSchema()
	if _, ok := read["properties"].(map[string]any); !ok {
		t.Errorf("read's schema %v has no properties object", read)
	}
	write := admin[1].Definition().InputSchema.(map[string]any)
	if write["additionalProperties"] != false {
		t.Errorf("write's schema %v was not made strict", write)
	}
	if !m.RequiresApproval(t.Context(), nil, "s__write") || m.RequiresApproval(t.Context(), nil, "s__read") {
		t.Error("approval: want write only")
	}
	if !m.RequiresApproval(t.Context(), nil, "s__nope") {
		t.Error("an unknown tool does not require approval")
	}
}

func TestErrorFormatter(t *testing.T) {
	f := newFleet(t)
	f.add("s", mcptest.Script{})
	f.add("down", mcptest.Script{Tools: tools("t")})
	m := f.managerWith(&Options{FormatError: DefaultErrorFormatter}, server("s"), server("down"))
	reconnecting := mcptest.Await(m.Subscribe, func(ev Event) bool {
		return ev.Kind == EventState && ev.Server == "down" && ev.State == StateReconnecting
	})
	if err := m.Connect(t.Context()); err != nil {
		t.Fatal(err)
	}
	f.fail("down", errors.New("refused"))
	f.servers["down"].Restart()
	<-reconnecting // else the call may go out on the dying session, and be ambiguous
	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"s__add", map[string]any{"a": 1}, "were invalid"},
		{"s__nope", nil, "There is no tool named s__nope"},
		{"down__t", nil, "Do not retry this tool"},
	} {
		res, err := callTool(t.Context(), m, tc.tool, tc.args)
		if err != nil || !res.IsError || !strings.Contains(mcptest.Text(res), tc.want) {
			t.Errorf("%s = %v, %v; want an error result saying %q", tc.tool, mcptest.Text(res), err, tc.want)
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := callTool(ctx, m, "s__echo", nil); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled call = %v, want the cancellation, not a result", err)
	}
}

func TestPromptsAndResources(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t)
		f.add("a", mcptest.Script{
			Prompts:   []mcptest.PromptSpec{{Name: "greet", Arguments: []string{"who"}}},
			Resources: []mcptest.ResourceSpec{{URI: "mem://shared", Name: "shared", Text: "from a"}},
		})
		f.add("b", mcptest.Script{
			Prompts:   []mcptest.PromptSpec{{Name: "greet"}},
			Resources: []mcptest.ResourceSpec{{URI: "mem://shared", Name: "shared", Text: "from b"}, {URI: "mem://b", Name: "b", Text: "only b"}},
		})
		m := f.managerWith(&Options{NoCache: true}, server("a"), server("b"))
		updates := make(chan string, 10)
		m.Subscribe(func(ev Event) {
			if ev.Kind == EventResourceUpdated {
				updates <- ev.Server + " " + ev.URI
			}
		})
		if err := m.Connect(t.Context()); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		var prompts []string
		for _, p := range m.Prompts(t.Context(), nil) {
			prompts = append(prompts, p.Name)
		}
		if diff := cmp.Diff([]string{"a__greet", "b__greet"}, prompts); diff != "" {
			t.Errorf("prompts (-want +got):\n%s", diff)
		}
		pr, err := m.GetPrompt(t.Context(), nil, &mcp.GetPromptParams{Name: "a__greet", Arguments: map[string]string{"who": "Ada"}})
		if err != nil || pr.Messages[0].Content.(*mcp.TextContent).Text != "PROMPT greet who=Ada" {
			t.Errorf("GetPrompt = %v, %v", pr, err)
		}
		var uris []string
		for _, r := range m.Resources(t.Context(), nil) {
			uris = append(uris, r.Server+" "+r.Resource.URI)
		}
		if diff := cmp.Diff([]string{"b mem://b", "a mem://shared"}, uris); diff != "" {
			t.Errorf("resources (-want +got):\n%s", diff)
		}
		rr, err := m.ReadResource(t.Context(), nil, &mcp.ReadResourceParams{URI: "mem://shared"})
		if err != nil || rr.Contents[0].Text != "from a" {
			t.Errorf("ReadResource(shared) = %v, %v; want the first configured server's", rr, err)
		}
		if st := m.Status()[1]; len(st.Collisions) != 1 || st.Collisions[0] != "mem://shared" {
			t.Errorf("b's collisions = %v", st.Collisions)
		}
		if err := m.SubscribeResource(t.Context(), nil, "mem://b"); err != nil {
			t.Fatal(err)
		}
		f.servers["b"].NotifyResourceUpdated("mem://b")
		if got := <-updates; got != "b mem://b" {
			t.Errorf("update = %q", got)
		}
		if _, err := m.ReadResource(t.Context(), nil, &mcp.ReadResourceParams{URI: "mem://none"}); !errors.Is(err, ErrUnknownResource) {
			t.Errorf("ReadResource(none) = %v", err)
		}
		if _, err := m.GetPrompt(t.Context(), nil, &mcp.GetPromptParams{Name: "nope", Arguments: nil}); !errors.Is(err, ErrUnknownPrompt) {
			t.Errorf("GetPrompt(nope) = %v", err)
		}
	})
}

// TestStaticFilterKeptAfterReload ports LiveKit's
// test_mcp_toolset_keeps_filter_after_tool_list_reload.
func TestStaticFilterKeptAfterReload(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t)
		srv := f.add("s", mcptest.Script{Tools: tools("alpha", "beta")})
		cfg := server("s")
		cfg.Tools.Allow = []string{"a*"}
		m := f.managerWith(&Options{NoCache: true}, cfg)
		if err := m.Connect(t.Context()); err != nil {
			t.Fatal(err)
		}
		srv.SetTools(tools("alpha2", "beta2"))
		mcptest.PassTime(time.Second)
		synctest.Wait()
		if diff := cmp.Diff([]string{"s__alpha2"}, names(m.Tools(t.Context(), nil))); diff != "" {
			t.Errorf("tools after a reload (-want +got):\n%s", diff)
		}
	})
}

// TestDeferredToolOfAServerThatFailsFailsClearly: the cached tools of a
// server that fails on its first connect stay listed (a down server's tools
// never become unknown), and a call to one fails at once, naming the
// server, its state and the cause.
func TestDeferredToolOfAServerThatFailsFailsClearly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t)
		srv := f.add("gone", mcptest.Script{Tools: tools("t")})
		dir := t.TempDir()
		first := f.managerWith(&Options{CacheDir: dir}, server("gone"))
		if err := first.Connect(t.Context()); err != nil {
			t.Fatal(err)
		}
		first.Close()

		// Next start: its tools come from the cache, but the server is slow
		// and then refuses.
		f.delay("gone", time.Second)
		f.fail("gone", errors.New("connection refused"))
		m := f.managerWith(&Options{CacheDir: dir, StartupGate: DefaultStartupGate}, server("gone"))
		if err := m.Connect(t.Context()); err != nil {
			t.Fatal(err)
		}
		for range 2 { // the first waits for the connection; the second fails at once
			_, err := callTool(t.Context(), m, "gone__t", nil)
			if !errors.Is(err, ErrNotConnected) || !strings.Contains(err.Error(), `server "gone"`) ||
				!strings.Contains(err.Error(), "failed") || !strings.Contains(err.Error(), "connection refused") {
				t.Errorf("call of a deferred tool whose server failed = %v, want ErrNotConnected naming the server, its state and the cause", err)
			}
		}
		if got := srv.Counts().ByTool["t"]; got != 0 {
			t.Errorf("t ran %d times", got)
		}
		if diff := cmp.Diff([]string{"gone__t"}, names(m.Tools(t.Context(), nil))); diff != "" {
			t.Errorf("tools of a failed server (-want +got):\n%s", diff)
		}
	})
}

func TestReloadFailedEventNamesTheServer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t)
		srv := f.add("s", mcptest.Script{Tools: tools("alpha")})
		m := f.managerWith(&Options{NoCache: true}, server("s"))
		failed := mcptest.Await(m.Subscribe, func(ev Event) bool { return ev.Kind == EventReloadFailed })
		if err := m.Connect(t.Context()); err != nil {
			t.Fatal(err)
		}
		srv.FailListTools(100)
		srv.SetTools(tools("beta"))
		ev := <-failed
		if ev.Server != "s" || ev.List != "tools" || ev.Err == nil {
			t.Errorf("reload-failed event = %+v, want server s, list tools and the cause", ev)
		}
		if diff := cmp.Diff([]string{"s__alpha"}, names(m.Tools(t.Context(), nil))); diff != "" {
			t.Errorf("tools after a failed reload (-want +got):\n%s", diff)
		}
	})
}

// TestCrashLoopThenManualReconnect: a server that crashes on every
// connection ends in crash-loop, keeps its tools listed, and is retried
// every 5 min; a manual reconnect of the failed servers connects it at once
// once it is fixed, and leaves the others alone.
func TestCrashLoopThenManualReconnect(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t)
		srv := f.add("flaky", mcptest.Script{Tools: tools("t")})
		f.add("steady", mcptest.Script{Tools: tools("u")})
		steady := server("steady")
		steady.Source = "/etc/switchboard/mcp.json"
		flaky := server("flaky")
		flaky.Source = "/home/me/.mcp.json"
		m := f.managerWith(&Options{NoCache: true}, flaky, steady)
		crashLoop := mcptest.Await(m.Subscribe, func(ev Event) bool {
			return ev.Kind == EventState && ev.Server == "flaky" && ev.State == StateCrashLoop
		})
		if err := m.Connect(t.Context()); err != nil {
			t.Fatal(err)
		}
		// From now on the server crashes as soon as it has listed its tools.
		f.add("flaky", mcptest.Script{Tools: tools("t"), ExitAfterListTools: true})
		srv.Restart()
		loop := <-crashLoop
		if loop.Source != flaky.Source || loop.Err == nil {
			t.Errorf("crash-loop event = %+v, want the config file and the cause", loop)
		}
		if _, err := callTool(t.Context(), m, "flaky__t", nil); !errors.Is(err, ErrCircuitOpen) {
			t.Errorf("call in crash-loop = %v, want ErrCircuitOpen", err)
		}
		if diff := cmp.Diff([]string{"flaky"}, m.Failed()); diff != "" {
			t.Errorf("failed (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"flaky__t", "steady__u"}, names(m.Tools(t.Context(), nil))); diff != "" {
			t.Errorf("tools in crash-loop (-want +got):\n%s", diff)
		}
		// It is tried every 5 min ±20%, and crashes each time.
		dials := f.dialed("flaky")
		mcptest.PassTime(6 * time.Minute)
		if got := f.dialed("flaky") - dials; got != 1 {
			t.Errorf("%d attempts in the first 6 min of crash-loop, want 1", got)
		}
		f.add("flaky", mcptest.Script{Tools: tools("t")}) // fixed
		if err := m.ReconnectFailed(t.Context()); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"flaky"}, m.Connected()[:1]); diff != "" {
			t.Errorf("connected after a manual reconnect (-want +got):\n%s", diff)
		}
		if got := f.dialed("steady"); got != 1 {
			t.Errorf("the steady server was dialed %d times, want once: ReconnectFailed leaves it alone", got)
		}
	})
}

func TestInstructionsAreExposed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t)
		f.add("s", mcptest.Script{Instructions: "Use t for everything."})
		m := f.managerWith(&Options{NoCache: true}, server("s"))
		if err := m.Connect(t.Context()); err != nil {
			t.Fatal(err)
		}
		if got := m.Status()[0].Instructions; got != "Use t for everything." {
			t.Errorf("instructions = %q", got)
		}
	})
}

// A close during connect stops the Connect, which says why, and is not held
// up by it.
func TestCloseStopsALongConnect(t *testing.T) {
	for _, opts := range []Options{{Strict: true, StartupGate: DefaultStartupGate}, {Sequential: true, StartupGate: DefaultStartupGate}, {StartupGate: -1}} {
		t.Run(fmt.Sprintf("strict=%v,sequential=%v", opts.Strict, opts.Sequential), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFleet(t)
				f.add("hang", mcptest.Script{HangOnInitialize: true}) // 30 s timeout
				opts.NoCache = true
				m := f.managerWith(&opts, server("hang"))
				connected := make(chan error, 1)
				go func() { connected <- m.Connect(context.Background()) }()
				synctest.Wait()
				start := time.Now()
				if err := m.Close(); err != nil {
					t.Errorf("Close = %v", err)
				}
				if took := time.Since(start); took > time.Second {
					t.Errorf("Close took %v, waiting for the Connect", took)
				}
				if err := <-connected; !errors.Is(err, ErrClosed) {
					t.Errorf("the Connect that Close stopped = %v, want ErrClosed", err)
				}
				if err := m.Connect(t.Context()); !errors.Is(err, ErrClosed) {
					t.Errorf("Connect after Close = %v, want ErrClosed", err)
				}
			})
		})
	}
}

// TestCloseKeepsItsTimeout: Close returns within CloseTimeout, with every
// child it started gone, though one server's process ignores stdin's close
// and SIGTERM and another never answers the DELETE that ends its session.
func TestCloseKeepsItsTimeout(t *testing.T) {
	cmd, args, env := mcptest.StdioCommand(mcptest.Script{})
	stubborn := config.Server{Name: "stubborn", Command: "/bin/sh",
		Args: append([]string{"-c", `trap '' TERM; "$@"; sleep 300`, "sh", cmd}, args...), Env: env}
	web := mcptest.NewServer(mcptest.Script{LegacyOnly: true})
	defer web.Close()
	hs, err := mcptest.StartHTTP(web)
	if err != nil {
		t.Fatal(err)
	}
	defer hs.Close()
	web.HangDeletes()
	m := New(&config.Config{Servers: []config.Server{stubborn, {Name: "web", URL: hs.URL}}},
		&Options{NoCache: true, StartupGate: -1, CloseTimeout: time.Second})
	if err := m.Connect(t.Context()); err != nil {
		t.Fatal(err)
	}
	pid := m.Status()[0].PID
	if pid == 0 {
		t.Fatalf("status %+v: no PID", m.Status()[0])
	}
	start := time.Now()
	err = m.Close()
	if took := time.Since(start); took > time.Second+300*time.Millisecond {
		t.Errorf("Close took %v with a 1 s timeout", took)
	}
	if err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("Close = %v, want it to report the kill", err)
	}
	if err := mcptest.Gone(pid); err != nil {
		t.Errorf("the stubborn server's process outlived Close: %v", err)
	}
}

// TestCloseKeepsItsTimeoutDuringHandshakes: Close stops the handshakes in
// progress of many stdio servers that never answer, and returns within
// CloseTimeout: a stopped handshake waits for nothing.
func TestCloseKeepsItsTimeoutDuringHandshakes(t *testing.T) {
	var servers []config.Server
	for i := range 8 {
		servers = append(servers, config.Server{Name: fmt.Sprintf("mute%d", i), Command: "/bin/sh", Args: []string{"-c", "exec sleep 300"}})
	}
	m := New(&config.Config{Servers: servers}, &Options{NoCache: true, CloseTimeout: time.Second})
	if err := m.Connect(t.Context()); err != nil { // returns at the gate
		t.Fatal(err)
	}
	start := time.Now()
	m.Close()
	if took := time.Since(start); took > time.Second+300*time.Millisecond {
		t.Errorf("Close took %v with a 1 s timeout", took)
	}
}

// TestUnchangedReloadRebuildsNothing: a server that says its tools changed
// and lists the same ones makes no new catalog and no cache write; a real
// change makes both.
func TestUnchangedReloadRebuildsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t)
		srv := f.add("s", mcptest.Script{Tools: tools("a")})
		dir := t.TempDir()
		m := f.managerWith(&Options{CacheDir: dir}, server("s"))
		if err := m.Connect(t.Context()); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		cfg := server("s")
		cache, fp := toolcache.Open(dir, nil), cfg.Fingerprint()
		_, saved, ok := cache.Get("s", fp)
		if !ok {
			t.Fatal("no cache entry after connecting")
		}
		catalogBefore := m.view.Load().tools

		mcptest.PassTime(time.Minute)
		srv.NotifyToolsChanged()
		mcptest.PassTime(time.Second)
		synctest.Wait()
		if m.view.Load().tools != catalogBefore {
			t.Error("the same tools, listed again, made a new catalog")
		}
		if _, at, _ := cache.Get("s", fp); !at.Equal(saved) {
			t.Errorf("the same tools, listed again, were cached again at %v (first at %v)", at, saved)
		}

		srv.SetTools(tools("a", "b"))
		mcptest.PassTime(time.Second)
		synctest.Wait()
		if diff := cmp.Diff([]string{"s__a", "s__b"}, names(m.Tools(t.Context(), nil))); diff != "" {
			t.Errorf("tools after a change (-want +got):\n%s", diff)
		}
		if got, at, _ := cache.Get("s", fp); at.Equal(saved) || len(got) != 2 {
			t.Errorf("cache after a change: %d tools saved at %v, want 2, saved later than %v", len(got), at, saved)
		}
	})
}

// TestRejectedEntryIsNotUnknown: a lifecycle command that names an entry
// the config rejected says why it was rejected, not that it is unknown.
func TestRejectedEntryIsNotUnknown(t *testing.T) {
	f := newFleet(t)
	f.add("a", mcptest.Script{})
	bad := errors.New(`mcp.json: server "bad": url: required for http servers`)
	m := New(&config.Config{Servers: []config.Server{server("a")}, Rejected: []config.Rejected{{Name: "bad", Err: bad}}},
		&Options{Dial: f.dial, NoCache: true, StartupGate: -1})
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
