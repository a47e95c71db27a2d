package switchboard

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
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

// fleet is a set of in-memory mcptest servers, one per configured name.
type fleet struct {
	t       *testing.T
	mu      sync.Mutex
	servers map[string]*mcptest.Server
	failing map[string]error // dials of these names fail
	delays  map[string]time.Duration
	dials   map[string]int
}

func newFleet(t *testing.T) *fleet {
	return &fleet{t: t, servers: make(map[string]*mcptest.Server), failing: make(map[string]error),
		delays: make(map[string]time.Duration), dials: make(map[string]int)}
}

// fail makes dials of name fail with err; nil heals it.
func (f *fleet) fail(name string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err == nil {
		delete(f.failing, name)
	} else {
		f.failing[name] = err
	}
}

// delay makes dials of name take d.
func (f *fleet) delay(name string, d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.delays[name] = d
}

// dialed returns how often name was dialed.
func (f *fleet) dialed(name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.dials[name]
}

// add runs script as the server called name.
func (f *fleet) add(name string, script mcptest.Script) *mcptest.Server {
	s := mcptest.NewServer(script)
	f.t.Cleanup(func() { s.Close() })
	f.servers[name] = s
	return s
}

func (f *fleet) dial(ctx context.Context, srv config.Server) (mcp.Transport, error) {
	f.mu.Lock()
	f.dials[srv.Name]++
	err, failing := f.failing[srv.Name]
	s, ok := f.servers[srv.Name]
	d := f.delays[srv.Name]
	f.mu.Unlock()
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if failing {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("no test server %q", srv.Name)
	}
	return s.ConnectInMemory(ctx)
}

// manager returns a manager over servers, dialing the fleet, with its tool
// cache in a directory of the test. It is closed when the test ends.
func (f *fleet) manager(servers ...config.Server) *Manager {
	return f.managerWith(nil, servers...)
}

// managerWith is manager with options; Dial and CacheDir are set for the
// fleet. Unless opts set a startup gate, Connect waits for every server:
// a real-time gate would make a test's outcome depend on the machine's
// load. Tests of the gate set it, and run under synctest.
func (f *fleet) managerWith(opts *Options, servers ...config.Server) *Manager {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.StartupGate == 0 {
		o.StartupGate = -1
	}
	o.Dial = f.dial
	if o.CacheDir == "" {
		o.CacheDir = f.t.TempDir()
	}
	m := New(&config.Config{Servers: servers}, &o)
	f.t.Cleanup(func() { m.Close() })
	return m
}

// server returns a valid config entry for an in-memory server.
func server(name string) config.Server {
	return config.Server{Name: name, Type: config.Stdio, Command: "in-memory"}
}

func tools(names ...string) []mcptest.ToolSpec {
	var specs []mcptest.ToolSpec
	for _, n := range names {
		specs = append(specs, mcptest.ToolSpec{Name: n})
	}
	return specs
}

func names(ts []Tool) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name)
	}
	return out
}

func TestConnectMergesToolsSortedByPublicName(t *testing.T) {
	f := newFleet(t)
	f.add("zeta", mcptest.Script{Tools: tools("search", "fetch")})
	f.add("alpha", mcptest.Script{Tools: tools("search")})
	raw := server("raw")
	raw.Prefix = new(string)
	f.add("raw", mcptest.Script{Tools: tools("plain")})
	m := f.manager(server("zeta"), server("alpha"), raw)
	if err := m.Connect(t.Context()); err != nil {
		t.Fatal(err)
	}
	want := []string{"alpha__search", "plain", "zeta__fetch", "zeta__search"}
	if diff := cmp.Diff(want, names(m.Tools(t.Context(), nil))); diff != "" {
		t.Errorf("Tools (-want +got):\n%s", diff)
	}
}

func TestCallToolRoutesToOriginalName(t *testing.T) {
	f := newFleet(t)
	a := f.add("a", mcptest.Script{Tools: tools("echo")})
	b := f.add("b", mcptest.Script{Tools: tools("echo")})
	m := f.manager(server("a"), server("b"))
	if err := m.Connect(t.Context()); err != nil {
		t.Fatal(err)
	}
	res, err := callTool(t.Context(), m, "b__echo", map[string]any{"n": 1})
	if err != nil {
		t.Fatalf("CallTool: %v", err)
	}
	if got := res.Content[0].(*mcp.TextContent).Text; got != `{"n":1}` {
		t.Errorf("result = %q", got)
	}
	if a.Counts().Calls != 0 || b.Counts().ByTool["echo"] != 1 {
		t.Errorf("calls: a=%d b=%v; want the call on b's echo only", a.Counts().Calls, b.Counts().ByTool)
	}
	t0, ok := m.Lookup("b__echo")
	if !ok || t0.Server != "b" || t0.Original != "echo" {
		t.Errorf("Lookup(b__echo) = %+v, %v", t0, ok)
	}
}

func TestCallUnknownTool(t *testing.T) {
	f := newFleet(t)
	f.add("a", mcptest.Script{})
	m := f.manager(server("a"))
	if err := m.Connect(t.Context()); err != nil {
		t.Fatal(err)
	}
	_, err := callTool(t.Context(), m, "a__nope", nil)
	if !errors.Is(err, ErrUnknownTool) || !strings.Contains(err.Error(), `"a__nope"`) {
		t.Errorf("CallTool(a__nope) = %v, want ErrUnknownTool naming the tool", err)
	}
}

func TestStaticFilters(t *testing.T) {
	f := newFleet(t)
	f.add("gh", mcptest.Script{Tools: tools("issue_list", "issue_delete", "issue_get", "repo_list")})
	srv := server("gh")
	srv.Tools = config.ToolFilter{Allow: []string{"issue_*"}, Deny: []string{"*_delete"}}
	m := f.manager(srv)
	if err := m.Connect(t.Context()); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"gh__issue_get", "gh__issue_list"}, names(m.Tools(t.Context(), nil))); diff != "" {
		t.Errorf("filtered tools (-want +got):\n%s", diff)
	}
	if _, err := callTool(t.Context(), m, "gh__issue_delete", nil); !errors.Is(err, ErrUnknownTool) {
		t.Errorf("a denied tool is callable: %v", err)
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
		m := New(&config.Config{Servers: servers}, &Options{StartupGate: -1, NoCache: true, Dial: func(ctx context.Context, srv config.Server) (mcp.Transport, error) {
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
		m := New(&config.Config{Servers: []config.Server{srv}}, &Options{Dial: f.dial, StartupGate: -1, NoCache: true})
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

func TestSnapshotsAreCopies(t *testing.T) {
	f := newFleet(t)
	f.add("a", mcptest.Script{Tools: []mcptest.ToolSpec{{Name: "t", InputSchema: map[string]any{
		"type": "object", "properties": map[string]any{"x": map[string]any{"type": "string"}},
	}}}})
	m := f.manager(server("a"))
	if err := m.Connect(t.Context()); err != nil {
		t.Fatal(err)
	}
	first := m.Tools(t.Context(), nil)
	first[0].Name, first[0].Description = "mutated", "mutated"
	def := first[0].Definition()
	def.Description = "mutated"
	def.InputSchema.(map[string]any)["properties"].(map[string]any)["x"] = "mutated"
	first[0].InputSchema()["properties"].(map[string]any)["x"] = "mutated"
	st := m.Status()
	st[0].Name = "mutated"
	again := m.Tools(t.Context(), nil)[0]
	if again.Name != "a__t" || again.Description == "mutated" {
		t.Error("mutating a returned tool changed the manager")
	}
	for _, schema := range []map[string]any{again.InputSchema(), again.Definition().InputSchema.(map[string]any)} {
		if _, ok := schema["properties"].(map[string]any)["x"].(map[string]any); !ok {
			t.Error("mutating a returned schema changed the manager")
		}
	}
	if again.Definition().Description == "mutated" {
		t.Error("mutating a returned definition changed the manager")
	}
	if m.Status()[0].Name != "a" {
		t.Error("mutating a returned status changed the manager")
	}
}

func TestRejectedEntriesShowAsFailed(t *testing.T) {
	reject := errors.New(`mcp.json: server "broken": command: required for stdio servers`)
	cfg := &config.Config{Rejected: []config.Rejected{{Name: "broken", Source: "mcp.json", Required: true, Err: reject}}}
	m := New(cfg, nil)
	defer m.Close()
	if err := m.Connect(t.Context()); err != nil {
		t.Fatal(err)
	}
	st := m.Status()
	if len(st) != 1 || st[0].State != StateFailed || !errors.Is(st[0].Err, reject) || st[0].Source != "mcp.json" {
		t.Errorf("Status = %+v, want broken failed with its config error", st)
	}
	if m.Ready() {
		t.Error("Ready with a required server rejected")
	}
}

func TestInvalidCodeBuiltEntryIsRejected(t *testing.T) {
	m := New(&config.Config{Servers: []config.Server{{Name: "nothing"}}}, nil)
	defer m.Close()
	st := m.Status()
	if st[0].State != StateFailed || st[0].Err == nil {
		t.Errorf("an entry with neither command nor url: %+v, want failed with an error", st[0])
	}
}

func TestReadiness(t *testing.T) {
	f := newFleet(t)
	f.add("req", mcptest.Script{})
	f.add("opt", mcptest.Script{})
	f.fail("opt", errors.New("down"))
	req := server("req")
	req.Required = true
	m := f.manager(req, server("opt"))
	if m.Ready() {
		t.Error("Ready before connecting")
	}
	if err := m.Connect(t.Context()); err != nil {
		t.Fatal(err)
	}
	if !m.Ready() {
		t.Error("not Ready with the required server connected and an optional one failed")
	}
}

func TestCloseReverseOrderAndEvents(t *testing.T) {
	f := newFleet(t)
	var servers []config.Server
	for _, n := range []string{"first", "second", "third"} {
		f.add(n, mcptest.Script{})
		servers = append(servers, server(n))
	}
	m := f.manager(servers...)
	var mu sync.Mutex
	var closed []string
	m.Subscribe(func(ev Event) {
		if ev.Kind == EventState && ev.State == StateClosed {
			mu.Lock()
			closed = append(closed, ev.Server)
			mu.Unlock()
		}
	})
	if err := m.Connect(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatalf("Close = %v", err)
	}
	if err := m.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff([]string{"third", "second", "first"}, closed); diff != "" {
		t.Errorf("close order (-want +got):\n%s", diff)
	}
	if err := m.Connect(t.Context()); !errors.Is(err, ErrClosed) {
		t.Errorf("Connect after Close = %v, want ErrClosed", err)
	}
}

func TestToolsChangedEvent(t *testing.T) {
	f := newFleet(t)
	f.add("a", mcptest.Script{Tools: tools("x", "y")})
	m := f.manager(server("a"))
	got := make(chan Event, 10)
	unsubscribe := m.Subscribe(func(ev Event) {
		if ev.Kind == EventChanged {
			// Listeners hear of a change after the view is updated.
			if n := len(m.Tools(t.Context(), nil)); n != len(ev.Tools.Added) {
				t.Errorf("Tools() has %d tools when the event reports %d added", n, len(ev.Tools.Added))
			}
			got <- ev
		}
	})
	defer unsubscribe()
	if err := m.Connect(t.Context()); err != nil {
		t.Fatal(err)
	}
	ev := <-got
	if diff := cmp.Diff([]string{"a__x", "a__y"}, ev.Tools.Added); diff != "" || len(ev.Tools.Removed) != 0 {
		t.Errorf("added (-want +got):\n%s removed %v", diff, ev.Tools.Removed)
	}
}

func TestSubscriberPanicDoesNotAffectOthers(t *testing.T) {
	m := New(&config.Config{}, nil)
	var mu sync.Mutex
	var seen []string
	record := func(who string) func(Event) {
		return func(Event) {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, who)
		}
	}
	m.Subscribe(record("first"))
	m.Subscribe(func(Event) { panic("listener bug") })
	m.Subscribe(record("third"))
	m.subs.send(Event{Kind: EventChanged})
	m.Close() // delivers what is queued
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(seen)
	if diff := cmp.Diff([]string{"first", "third"}, seen); diff != "" {
		t.Errorf("deliveries (-want +got):\n%s", diff)
	}
}

func TestUnsubscribeFromListener(t *testing.T) {
	m := New(&config.Config{}, nil)
	calls := 0
	var unsubscribe func()
	unsubscribe = m.Subscribe(func(Event) {
		calls++
		unsubscribe()
	})
	m.subs.send(Event{Kind: EventChanged})
	m.subs.send(Event{Kind: EventChanged})
	m.Close()
	if calls != 1 {
		t.Errorf("listener called %d times after unsubscribing from itself, want 1", calls)
	}
}

func TestStateStrings(t *testing.T) {
	for s, want := range map[State]string{
		StateConnecting: "connecting", StateConnected: "connected", StateReconnecting: "reconnecting",
		StateFailed: "failed", StateCrashLoop: "crash-loop", StateDisabled: "disabled", StateClosed: "closed",
	} {
		if got := s.String(); got != want {
			t.Errorf("%d: %q, want %q", int(s), got, want)
		}
	}
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
// are not JSON-RPC are skipped, and counted in its status and by the
// observer; its calls are answered.
func TestStrayLinesAreCounted(t *testing.T) {
	cmd, args, env := mcptest.StdioCommand(mcptest.Script{GarbageOnStart: true, GarbageOnCall: true})
	var mu sync.Mutex
	observed := map[string]int{}
	m := New(&config.Config{Servers: []config.Server{{Name: "noisy", Command: cmd, Args: args, Env: env}}}, &Options{
		NoCache: true,
		Observer: &Observer{SkippedLine: func(server string) {
			mu.Lock()
			defer mu.Unlock()
			observed[server]++
		}},
	})
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
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff(map[string]int{"noisy": 4}, observed); diff != "" {
		t.Errorf("observed (-want +got):\n%s", diff)
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

// callTool calls the tool with the public name on m, with args, for no
// particular query.
func callTool(ctx context.Context, m *Manager, name string, args map[string]any) (*mcp.CallToolResult, error) {
	return m.CallTool(ctx, nil, &mcp.CallToolParams{Name: name, Arguments: args})
}

func TestEventString(t *testing.T) {
	cause := &ServerError{Server: "web", Op: "session", Err: errors.New("connection lost")}
	for _, tc := range []struct {
		ev   Event
		want string
	}{
		{Event{Kind: EventState, Server: "web", State: StateConnected}, "state web: connected"},
		{Event{Kind: EventState, Server: "web", State: StateReconnecting, Err: cause}, "state web: reconnecting; last error: session: connection lost"},
		{Event{Kind: EventChanged, Server: "web", Tools: Diff{Added: []string{"web__a"}, Removed: []string{"web__b"}}, Resources: Diff{Added: []string{"mem://x"}}},
			"changed web: tools +web__a -web__b resources +mem://x"},
		{Event{Kind: EventReloadFailed, Server: "web", List: "tools", Err: &ServerError{Server: "web", Op: "reload tools", Err: errors.New("boom")}},
			"reload-failed web: reload tools: boom"},
		{Event{Kind: EventResourceUpdated, Server: "web", URI: "mem://x"}, "resource-updated web: mem://x"},
	} {
		if got := tc.ev.String(); got != tc.want {
			t.Errorf("String() = %q, want %q", got, tc.want)
		}
	}
}
