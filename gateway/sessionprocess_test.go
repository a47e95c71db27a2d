//lint:file-ignore SA1019 The tests exercise sampling, logging and roots, which the gateway forwards.

package gateway

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// TestProcessPerSession: a stdio server with processPerSession gives each
// client session a process of its own, so that a sampling request always
// reaches the client whose call caused it, however many call at once.
func TestProcessPerSession(t *testing.T) {
	script := passthroughScript
	script.Tools = append(slices.Clone(script.Tools), mcptest.ToolSpec{Name: "count", Behavior: mcptest.Increment})
	srv := config.Server{Name: "s", ProtocolVersion: legacy, ProcessPerSession: true}
	srv.Command, srv.Args, srv.Env = mcptest.StdioCommand(script)
	m, g := start(t, []config.Server{srv}, &switchboard.Options{Cache: switchboard.CacheOff}, nil)

	for round := range 2 {
		texts, isErr := askAll(t, g, 4)
		for i, text := range texts {
			if want := fmt.Sprintf("client %d", i); text != want || isErr[i] {
				t.Errorf("round %d: client %d got %q (error: %v), want its own answer", round, i, text, isErr[i])
			}
		}
	}
	// Each session counts in its own process.
	a, b := legacyClient(t, g, nil), legacyClient(t, g, nil)
	for _, step := range []struct {
		cs   *mcp.ClientSession
		want string
	}{{a, "1"}, {a, "2"}, {b, "1"}, {a, "3"}} {
		res, err := step.cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "s__count"})
		if err != nil || mcptest.Text(res) != step.want {
			t.Errorf("count = %v %v, want %s", mcptest.Text(res), err, step.want)
		}
	}
	if st := m.Status()[0]; st.SessionProcesses != 2+4*2 {
		// askAll's clients stay connected until the test ends.
		t.Errorf("status: %d processes per session, want %d", st.SessionProcesses, 2+4*2)
	}
	// A level set after a session's process started reaches it.
	logs := make(chan any, 10)
	c := legacyClient(t, g, &mcp.ClientOptions{LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) { logs <- req.Params.Data }})
	if _, err := c.CallTool(t.Context(), &mcp.CallToolParams{Name: "s__count"}); err != nil {
		t.Fatal(err)
	}
	if err := c.SetLoggingLevel(t.Context(), &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CallTool(t.Context(), &mcp.CallToolParams{Name: "s__work", Arguments: map[string]any{"steps": 1}}); err != nil {
		t.Fatal(err)
	}
	select {
	case data := <-logs:
		if data != "step 1" {
			t.Errorf("log %v, want step 1", data)
		}
	case <-t.Context().Done():
		t.Error("no log from the session's own process")
	}
}

// TestProcessPerSessionLifetime: a session's own process starts on its
// first request and stops when the session ends; requests made for no
// client go to the shared one.
func TestProcessPerSessionLifetime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := mcptest.NewServer(mcptest.Script{Tools: []mcptest.ToolSpec{{Name: "echo", Behavior: mcptest.Echo}}})
		e := entry("s", false)
		e.ProcessPerSession = true
		m, g := setup(t, upstreams{"s": srv}, []config.Server{e}, nil)
		call := func(cs *mcp.ClientSession) {
			t.Helper()
			if res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "s__echo", Arguments: map[string]any{"text": "x"}}); err != nil || res.IsError {
				t.Fatalf("call: %v %v", res, err)
			}
		}
		open := func(want int) {
			t.Helper()
			synctest.Wait()
			if n := srv.OpenSessions(); n != want {
				t.Errorf("the server has %d sessions open, want %d", n, want)
			}
			if n := m.Status()[0].SessionProcesses; n != want-1 {
				t.Errorf("status: %d processes per session, want %d", n, want-1)
			}
		}
		open(1) // the shared one, which listed the tools
		a := client(t, g, nil)
		open(1) // nothing before a request
		call(a)
		call(a)
		open(2)
		b := client(t, g, nil)
		call(b)
		open(3)
		if _, err := m.CallTool(t.Context(), nil, &mcp.CallToolParams{Name: "s__echo", Arguments: map[string]any{"text": "x"}}); err != nil {
			t.Fatal(err)
		}
		open(3) // no client: the shared one
		a.Close()
		open(2)
		b.Close()
		open(1)
	})
}

// TestProcessPerSessionFollowsTheHost: a session's own process follows what
// the host does to its server: Reconnect restarts it; a reload that moves
// the server moves it too; one that ends processPerSession, disables or
// removes the server ends it, and so does Disconnect; the session's next
// request then starts one on what the config says.
func TestProcessPerSessionFollowsTheHost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		script := mcptest.Script{Tools: []mcptest.ToolSpec{{Name: "echo", Behavior: mcptest.Echo}}}
		a, b := mcptest.NewServer(script), mcptest.NewServer(script)
		t.Cleanup(func() { a.Close(); b.Close() })
		dial := func(ctx context.Context, srv config.Server) (mcp.Transport, error) {
			if slices.Contains(srv.Args, "b") {
				return b.ConnectInMemory(ctx)
			}
			return a.ConnectInMemory(ctx)
		}
		onA := entry("s", false)
		onA.ProcessPerSession = true
		onB := onA
		onB.Args = []string{"b"}
		sharedOnB := onB
		sharedOnB.ProcessPerSession = false
		m, g := start(t, []config.Server{onA}, &switchboard.Options{Dial: dial}, nil)
		cs := client(t, g, nil)
		call := func(on *mcptest.Server) {
			t.Helper()
			before := on.Counts().Calls
			if res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "s__echo", Arguments: map[string]any{"text": "x"}}); err != nil || res.IsError {
				t.Fatalf("call: %v %v", res, err)
			}
			if on.Counts().Calls != before+1 {
				t.Fatalf("the call did not reach the server it should have")
			}
		}
		open := func(step string, onA, onB, own int) {
			t.Helper()
			synctest.Wait()
			if na, nb := a.OpenSessions(), b.OpenSessions(); na != onA || nb != onB {
				t.Errorf("%s: sessions open on a and b: %d and %d, want %d and %d", step, na, nb, onA, onB)
			}
			if st := m.Status(); len(st) > 0 && st[0].SessionProcesses != own {
				t.Errorf("%s: status: %d processes per session, want %d", step, st[0].SessionProcesses, own)
			}
		}
		reload := func(servers ...config.Server) {
			t.Helper()
			if _, err := m.Reconfigure(t.Context(), &config.Config{Servers: servers}); err != nil {
				t.Fatal(err)
			}
		}

		call(a)
		open("first call", 2, 0, 1)
		starts := a.Counts().Starts
		if err := m.Reconnect(t.Context(), "s"); err != nil {
			t.Fatal(err)
		}
		open("reconnect", 2, 0, 1)
		if got := a.Counts().Starts - starts; got != 2 {
			t.Errorf("reconnect: %d handshakes, want 2 (the shared process and the session's)", got)
		}
		reload(onB)
		open("moved to b", 0, 2, 1)
		call(b)
		open("called on b", 0, 2, 1)
		reload(sharedOnB)
		open("shared again", 0, 1, 0)
		call(b)
		open("called the shared process", 0, 1, 0)
		reload(onB)
		call(b)
		open("a process per session again", 0, 2, 1)
		disabled := onB
		disabled.Enabled = new(bool)
		reload(disabled)
		open("disabled", 0, 0, 0)
		reload(onB)
		synctest.Wait() // connected again: a call before may find no tool yet
		call(b)
		open("enabled again", 0, 2, 1)
		if err := m.Disconnect(t.Context(), "s"); err != nil {
			t.Fatal(err)
		}
		open("disconnected", 0, 0, 0)
		if err := m.Connect(t.Context()); err != nil {
			t.Fatal(err)
		}
		call(b)
		open("connected again", 0, 2, 1)
		reload()
		open("removed", 0, 0, 0)
	})
}

// TestRootsReachTheSessionsOwnProcess: a process per session is offered
// its client's roots, and their changes; a shared process is offered none,
// for one client's roots are not another's.
func TestRootsReachTheSessionsOwnProcess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		script := mcptest.Script{Tools: []mcptest.ToolSpec{{Name: "roots", Behavior: mcptest.Roots}}}
		own, shared := entry("own", false), entry("shared", false)
		own.ProcessPerSession, own.ProtocolVersion, shared.ProtocolVersion = true, legacy, legacy
		_, g := setup(t, upstreams{"own": mcptest.NewServer(script), "shared": mcptest.NewServer(script)}, []config.Server{own, shared}, nil)
		rootsOf := func(cs *mcp.ClientSession, server string) (string, bool) {
			t.Helper()
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: server + "__roots"})
			if err != nil {
				t.Fatal(err)
			}
			return mcptest.Text(res), res.IsError
		}
		clients := map[string]*mcp.Client{}
		sessions := map[string]*mcp.ClientSession{}
		for _, name := range []string{"a", "b"} {
			c := mcp.NewClient(&mcp.Implementation{Name: name, Version: "v"}, nil)
			c.AddRoots(&mcp.Root{URI: "file:///" + name})
			clients[name] = c
			st, ct := mcp.NewInMemoryTransports()
			ss, err := g.Server().Connect(t.Context(), st, nil)
			if err != nil {
				t.Fatal(err)
			}
			cs, err := c.Connect(t.Context(), ct, &mcp.ClientSessionOptions{ProtocolVersion: legacy})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				cs.Close()
				ss.Wait()
			})
			sessions[name] = cs
		}
		for name, cs := range sessions {
			if got, isErr := rootsOf(cs, "own"); got != "file:///"+name || isErr {
				t.Errorf("%s's own process was offered %q (error: %v)", name, got, isErr)
			}
			// The go-sdk answers an empty list for a client that does not
			// offer roots.
			if got, _ := rootsOf(cs, "shared"); got != "" && !strings.HasPrefix(got, "roots failed") {
				t.Errorf("the shared process was offered %q, want no roots", got)
			}
		}
		clients["a"].AddRoots(&mcp.Root{URI: "file:///a2"})
		synctest.Wait()
		if got, _ := rootsOf(sessions["a"], "own"); got != "file:///a\nfile:///a2" {
			t.Errorf("after a's roots changed, its process was offered %q", got)
		}
		if got, _ := rootsOf(sessions["b"], "own"); got != "file:///b" {
			t.Errorf("after a's roots changed, b's process was offered %q", got)
		}
	})
}
