package switchboard

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// Servers that crash, go away or print garbage keep their tools listed and
// touch no other server.

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
		m := f.managerWith(&Options{Cache: CacheOff}, flaky, steady)
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
		if diff := cmp.Diff([]string{"flaky"}, m.Status().Failed()); diff != "" {
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
		if diff := cmp.Diff([]string{"flaky"}, m.Status().Connected()[:1]); diff != "" {
			t.Errorf("connected after a manual reconnect (-want +got):\n%s", diff)
		}
		if got := f.dialed("steady"); got != 1 {
			t.Errorf("the steady server was dialed %d times, want once: ReconnectFailed leaves it alone", got)
		}
	})
}

func TestOneBrokenServerTouchesNoOther(t *testing.T) {
	good := func(name string) config.Server {
		cmd, args, env := mcptest.StdioCommand(mcptest.Script{})
		return config.Server{Name: name, Command: cmd, Args: args, Env: env}
	}
	// Over 64 KiB, starting like JSON, it is passed to go-sdk, which fails.
	cmd, args, env := mcptest.StdioCommand(mcptest.Script{GarbageOnCall: true, Garbage: "{", GarbageBytes: 100 << 10})
	noisy := config.Server{Name: "noisy", Command: cmd, Args: args, Env: env}
	m := New(&config.Config{Servers: []config.Server{good("left"), noisy, good("right")}}, nil)
	defer m.Close()
	if err := m.Connect(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := callTool(t.Context(), m, "noisy__increment", nil); err == nil || !strings.Contains(err.Error(), "not JSON-RPC") {
		t.Errorf("call to the noisy server = %v, want a clear error", err)
	}
	for _, name := range []string{"left__add", "right__add"} {
		res, err := callTool(t.Context(), m, name, map[string]any{"a": 1, "b": 1})
		if err != nil || mcptest.Text(res) != "2" {
			t.Errorf("%s after the noisy server broke = %v, %v", name, res, err)
		}
	}
}

// TestStrayLinesAreCounted: the lines a stdio server prints on stdout that
// are not JSON-RPC are skipped, and counted in its status; its calls are
// answered.
func TestStrayLinesAreCounted(t *testing.T) {
	cmd, args, env := mcptest.StdioCommand(mcptest.Script{GarbageOnStart: true, GarbageOnCall: true})
	m := New(&config.Config{Servers: []config.Server{{Name: "noisy", Command: cmd, Args: args, Env: env}}}, &Options{Cache: CacheOff})
	defer m.Close()
	if err := m.Connect(t.Context()); err != nil {
		t.Fatal(err)
	}
	for want := 1; want <= 3; want++ {
		res, err := callTool(t.Context(), m, "noisy__increment", nil)
		if err != nil || mcptest.Text(res) != strconv.Itoa(want) {
			t.Fatalf("call %d = %v, %v", want, res, err)
		}
	}
	if got := m.Status()[0]; got.SkippedLines != 4 || got.State != StateConnected || got.Reconnects != 0 {
		t.Errorf("status: %s, %d reconnects, %d lines skipped; want connected, 0, 4", got.State, got.Reconnects, got.SkippedLines)
	}
}

func TestReconnectingServerKeepsItsTools(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t)
		srv := f.add("flaky", mcptest.Script{Tools: tools("t")})
		m := f.manager(server("flaky"))
		reconnecting := mcptest.Await(m.Subscribe, func(ev Event) bool {
			return ev.Kind == EventState && ev.State == StateReconnecting
		})
		if err := m.Connect(t.Context()); err != nil {
			t.Fatal(err)
		}
		// The server goes away and cannot be reached for now.
		f.fail("flaky", errors.New("connection refused"))
		srv.Restart()
		<-reconnecting
		if diff := cmp.Diff([]string{"flaky__t"}, names(m.Tools(t.Context(), nil))); diff != "" {
			t.Errorf("tools while reconnecting (-want +got):\n%s", diff)
		}
		if st := m.Status()[0]; st.State != StateReconnecting || st.Tools != 1 {
			t.Errorf("status = %v with %d tools, want reconnecting with its 1 stale tool", st.State, st.Tools)
		}
		if _, err := callTool(t.Context(), m, "flaky__t", nil); !errors.Is(err, ErrReconnecting) {
			t.Errorf("call while reconnecting = %v, want ErrReconnecting", err)
		}
	})
}
