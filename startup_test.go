package switchboard

import (
	"context"
	"errors"
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

// The startup gate and the tool cache read behind it: oh-my-pi's
// scenarios (seed-behaviours §2.4, §2.5).

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
		if errs := m.Status().Errors(); len(errs) != 0 {
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
// TestStartBeginHoldsTheFirstAttempt (internal/upstream) is the
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

// TestFailedBeforeFromTheCache: a server that failed to connect, before
// it listed a tool, is known to have failed the next time a manager on the
// same cache starts it with the same config: ServerStatus.FailedBefore
// says how, while it connects, and no more once it has listed its tools,
// which the cache then keeps in place of the failure. Another config of it
// knows nothing.
func TestFailedBeforeFromTheCache(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t)
		f.add("s", mcptest.Script{Tools: tools("t")})
		dir := t.TempDir()
		run := func(srv config.Server, check func(*Manager)) {
			t.Helper()
			m := New(&config.Config{Servers: []config.Server{srv}}, &Options{Dial: f.dial, CacheDir: dir})
			defer m.Close()
			if err := m.Connect(t.Context()); err != nil {
				t.Fatal(err)
			}
			check(m)
		}
		failedBefore := func(m *Manager) string { return m.Status()[0].FailedBefore }

		f.fail("s", errors.New("no access token was provided"))
		run(server("s"), func(m *Manager) {
			if fb := failedBefore(m); fb != "" {
				t.Errorf("FailedBefore on the first run = %q, want none", fb)
			}
		})
		f.fail("s", nil)
		f.delay("s", time.Second) // still connecting past the gate
		run(server("s"), func(m *Manager) {
			if fb := failedBefore(m); !strings.Contains(fb, "no access token was provided") {
				t.Errorf("FailedBefore while connecting = %q, want the last run's failure", fb)
			}
			if err := m.WaitSettled(t.Context()); err != nil {
				t.Fatal(err)
			}
			if fb := failedBefore(m); fb != "" {
				t.Errorf("FailedBefore once connected = %q, want none", fb)
			}
		})
		run(server("s"), func(m *Manager) {
			if st := m.Status()[0]; st.FailedBefore != "" || !st.Deferred {
				t.Errorf("the run after a good one: FailedBefore %q, Deferred %v; want its cached tools and no failure", st.FailedBefore, st.Deferred)
			}
		})
		// A failure tells for an hour.
		late := server("s")
		late.Args = []string{"--late"} // a config that never listed
		f.fail("s", errors.New("broken"))
		settle := func(m *Manager) {
			if err := m.WaitSettled(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
		run(late, settle)
		run(late, func(m *Manager) {
			if fb := failedBefore(m); !strings.Contains(fb, "broken") {
				t.Errorf("FailedBefore within the hour = %q, want the failure", fb)
			}
			settle(m)
		})
		// The same failure, kept an hour ago.
		if err := toolcache.Open(dir, nil).ReportFailure("s", late.Fingerprint(), "broken", time.Now().Add(-failedBeforeFor)); err != nil {
			t.Fatal(err)
		}
		run(late, func(m *Manager) {
			if fb := failedBefore(m); fb != "" {
				t.Errorf("FailedBefore of a failure an hour ago = %q, want none", fb)
			}
		})
		f.fail("s", nil)
		other := server("s")
		other.Args = []string{"--other"}
		f.fail("s", errors.New("broken"))
		run(server("s"), func(*Manager) {})
		f.fail("s", nil)
		run(other, func(m *Manager) {
			if fb := failedBefore(m); fb != "" {
				t.Errorf("FailedBefore of another config = %q, want none", fb)
			}
		})
	})
}
