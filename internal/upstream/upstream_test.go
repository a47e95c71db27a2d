package upstream

import (
	"context"
	"errors"
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

// inMemory returns an upstream connected to a fresh in-memory mcptest server.
func inMemory(t *testing.T, script mcptest.Script, srv config.Server, opts *Options) (*Upstream, *mcptest.Server) {
	t.Helper()
	ms := mcptest.NewServer(script)
	t.Cleanup(func() { ms.Close() })
	var o Options
	if opts != nil {
		o = *opts
	}
	o.Dial = func(ctx context.Context, _ config.Server) (mcp.Transport, error) {
		return ms.ConnectInMemory(ctx)
	}
	if srv.Name == "" {
		srv.Name = "mem"
	}
	if srv.Command == "" && srv.URL == "" {
		srv.Command = "in-memory"
	}
	u := New(srv, &o)
	t.Cleanup(func() { u.Close(time.Time{}) })
	return u, ms
}

func ms(n int64) *int64 { return &n }

// restartServer restarts srv, which drops u's session, and waits until u
// has reconnected. The reconnect takes no (fake) time: waiting for the
// reconnecting state could miss it.
func restartServer(t *testing.T, u *Upstream, srv *mcptest.Server) {
	t.Helper()
	before := u.Snapshot().Reconnects
	srv.Restart()
	for {
		u.sup.mu.Lock()
		state, reconnects, changed := u.sup.state, u.sup.reconnects, u.sup.changed
		u.sup.mu.Unlock()
		if state == Connected && reconnects > before {
			return
		}
		if state == Closed {
			t.Fatal("upstream closed while waiting for it to reconnect")
		}
		<-changed
	}
}

// waitState blocks until u reaches state want.
func waitState(t *testing.T, u *Upstream, want State) {
	t.Helper()
	for {
		u.sup.mu.Lock()
		state, changed := u.sup.state, u.sup.changed
		u.sup.mu.Unlock()
		if state == want {
			return
		}
		if state == Closed {
			t.Fatalf("upstream closed while waiting for %v", want)
		}
		<-changed
	}
}

// reconnect makes a manual reconnect of u ([Upstream.Restart]), waits for
// its attempt or for ctx, and returns how it ended: nil if u is connected,
// else an UnavailableError with u's state and last error.
func reconnect(ctx context.Context, u *Upstream) error {
	select {
	case <-u.Restart():
	case <-ctx.Done():
		return ctx.Err()
	}
	if s := u.Snapshot(); s.State != Connected {
		return &UnavailableError{State: s.State, Err: s.Err}
	}
	return nil
}

func toolNames(tools []*mcp.Tool) []string {
	var names []string
	for _, t := range tools {
		names = append(names, t.Name)
	}
	return names
}

func TestConnectListsAndCalls(t *testing.T) {
	script := mcptest.Script{PageSize: 2, Tools: []mcptest.ToolSpec{
		{Name: "a"}, {Name: "b"}, {Name: "c"}, {Name: "d"}, {Name: "e"},
	}}
	u, srv := inMemory(t, script, config.Server{}, nil)
	if err := u.Connect(t.Context()); err != nil {
		t.Fatalf("Connect: %v", err)
	}
	snap := u.Snapshot()
	if snap.State != Connected || snap.Err != nil {
		t.Fatalf("state = %v, err = %v; want connected, nil", snap.State, snap.Err)
	}
	if diff := cmp.Diff([]string{"a", "b", "c", "d", "e"}, toolNames(snap.Tools)); diff != "" {
		t.Errorf("tools across pages (-want +got):\n%s", diff)
	}
	res, err := callTool(t.Context(), u, "c", nil)
	if err != nil {
		t.Fatalf("CallTool: %v", err)
	}
	if got := mcptest.Text(res); got != "{}" {
		t.Errorf("nil arguments arrived as %q, want {}", got)
	}
	res, err = callTool(t.Context(), u, "a", map[string]any{"x": 1.0})
	if err != nil || mcptest.Text(res) != `{"x":1}` {
		t.Errorf("CallTool(a, x=1) = %q, %v; want {\"x\":1}", mcptest.Text(res), err)
	}
	if got := srv.Counts().Calls; got != 2 {
		t.Errorf("server saw %d calls, want 2", got)
	}
}

func TestConnectIsIdempotent(t *testing.T) {
	u, srv := inMemory(t, mcptest.Script{}, config.Server{}, nil)
	for range 3 {
		if err := u.Connect(t.Context()); err != nil {
			t.Fatalf("Connect: %v", err)
		}
	}
	if got := srv.Counts().Starts; got != 1 {
		t.Errorf("server saw %d handshakes, want 1", got)
	}
}

func TestDialFailure(t *testing.T) {
	boom := errors.New("boom")
	var events []Event
	var mu sync.Mutex
	u := New(config.Server{Name: "broken", Command: "x"}, &Options{
		Dial: func(context.Context, config.Server) (mcp.Transport, error) { return nil, boom },
		OnEvent: func(ev Event) {
			mu.Lock()
			defer mu.Unlock()
			events = append(events, ev)
		},
	})
	defer u.Close(time.Time{})
	err := u.Connect(t.Context())
	if !errors.Is(err, boom) {
		t.Fatalf("Connect = %v, want it to wrap boom", err)
	}
	var ue *Error
	if !errors.As(err, &ue) || ue.Server != "broken" || ue.Op != "connect" {
		t.Errorf("Connect error = %#v, want an *Error for server broken, op connect", err)
	}
	if got := err.Error(); got != `server "broken": connect: boom` {
		t.Errorf("error = %q", got)
	}
	if _, err := callTool(t.Context(), u, "x", nil); !errors.Is(err, ErrNotConnected) {
		t.Errorf("CallTool on a failed upstream = %v, want ErrNotConnected", err)
	}
	u.Close(time.Time{})
	mu.Lock()
	defer mu.Unlock()
	var got []string
	for _, ev := range events {
		if ev.Kind == EventState {
			got = append(got, ev.From.String()+">"+ev.Snapshot.State.String())
		}
	}
	if diff := cmp.Diff([]string{"disconnected>connecting", "connecting>failed", "failed>closed"}, got); diff != "" {
		t.Errorf("transitions (-want +got):\n%s", diff)
	}
}

// TestConnectTimeout: a connection that the server's timeout ends says
// after how long, and in which step: the handshake's request that found no
// answer, or the first list of tools.
func TestConnectTimeout(t *testing.T) {
	for _, tc := range []struct {
		name   string
		script mcptest.Script
		srv    config.Server
		want   string
	}{
		{"initialize", mcptest.Script{HangOnInitialize: true}, config.Server{},
			`server "mem": connect: initialize: timed out after 1.5s`},
		{"server/discover", mcptest.Script{HangOnInitialize: true}, config.Server{ProtocolVersion: "2026-07-28"},
			`server "mem": connect: server/discover: timed out after 1.5s`},
		{"initialize after server/discover", mcptest.Script{HangOnInitialize: true, LegacyOnly: true}, config.Server{ProtocolVersion: "2026-07-28"},
			`server "mem": connect: initialize: timed out after 1.5s`},
		{"list tools", mcptest.Script{HangOnListTools: true}, config.Server{},
			`server "mem": list tools: timed out after 1.5s`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tc.srv.Timeout = ms(1500)
				u, _ := inMemory(t, tc.script, tc.srv, nil)
				start := time.Now()
				err := u.Connect(t.Context())
				if !errors.Is(err, ErrTimeout) {
					t.Fatalf("Connect = %v, want ErrTimeout", err)
				}
				if got := time.Since(start); got != 1500*time.Millisecond {
					t.Errorf("timed out after %v, want 1.5s", got)
				}
				if err.Error() != tc.want {
					t.Errorf("Connect = %q, want %q", err, tc.want)
				}
			})
		})
	}
}

func TestTimeoutZeroDisables(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		u, _ := inMemory(t, mcptest.Script{HangOnInitialize: true}, config.Server{Timeout: ms(0)}, nil)
		u.Start(nil)
		ctx, cancel := context.WithTimeout(t.Context(), time.Hour)
		defer cancel()
		err := u.Connect(ctx)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Connect = %v, want the caller's deadline after an hour", err)
		}
		if got := u.State(); got != Connecting {
			t.Errorf("state = %v, want still connecting", got)
		}
	})
}

func TestCallTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		u, _ := connectedInMemory(t, mcptest.Script{CallDelay: time.Minute}, config.Server{Timeout: ms(2000)}, nil)
		start := time.Now()
		_, err := callTool(t.Context(), u, "echo", nil)
		if !errors.Is(err, ErrTimeout) {
			t.Fatalf("CallTool = %v, want ErrTimeout", err)
		}
		if got := time.Since(start); got != 2*time.Second {
			t.Errorf("call timed out after %v, want 2s", got)
		}
	})
}

func TestCallerCancellation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		u, _ := connectedInMemory(t, mcptest.Script{CallDelay: time.Minute}, config.Server{}, nil)
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		_, err := callTool(ctx, u, "echo", nil)
		if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrTimeout) {
			t.Fatalf("CallTool = %v, want the caller's own deadline, not ErrTimeout", err)
		}
	})
}

// eventLog records an upstream's events.
type eventLog struct {
	mu     sync.Mutex
	events []Event
}

func (l *eventLog) add(ev Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, ev)
}

// transitions returns "from>to" for every event so far.
func (l *eventLog) transitions() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, ev := range l.events {
		if ev.Kind == EventState {
			out = append(out, ev.From.String()+">"+ev.Snapshot.State.String())
		}
	}
	return out
}

// errs returns the causes of the events into state to.
func (l *eventLog) errs(to State) []error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []error
	for _, ev := range l.events {
		if ev.Kind == EventState && ev.Snapshot.State == to {
			out = append(out, ev.Snapshot.Err)
		}
	}
	return out
}

func TestSessionLostReconnects(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var log eventLog
		u, srv := connectedInMemory(t, mcptest.Script{ExitOnCall: 2}, config.Server{}, &Options{OnEvent: log.add})
		if _, err := callTool(t.Context(), u, "echo", nil); err != nil {
			t.Fatalf("first call: %v", err)
		}
		// The server drops the session on receipt of the second call, which
		// never runs. echo is read-only: it is replayed on a new session.
		res, err := callTool(t.Context(), u, "echo", map[string]any{"n": 2.0})
		if err != nil || mcptest.Text(res) != `{"n":2}` {
			t.Fatalf("second call = %v, %v; want it replayed on a new session", res, err)
		}
		c := srv.Counts()
		if c.Starts != 2 || c.ByTool["echo"] != 2 {
			t.Errorf("starts %d, echo ran %d times; want 2 and 2 (the dropped call never ran)", c.Starts, c.ByTool["echo"])
		}
		want := []string{"disconnected>connecting", "connecting>connected", "connected>reconnecting", "reconnecting>connected"}
		synctest.Wait() // events are delivered just after the state changes
		if diff := cmp.Diff(want, log.transitions()); diff != "" {
			t.Errorf("transitions (-want +got):\n%s", diff)
		}
		if errs := log.errs(Reconnecting); len(errs) != 1 || !strings.Contains(errs[0].Error(), `server "mem": session:`) {
			t.Errorf("reconnecting events = %v, want one naming the server and the session", errs)
		}
		if got := u.Snapshot().Reconnects; got != 1 {
			t.Errorf("Reconnects = %d, want 1", got)
		}
	})
}

func TestCloseDuringConnect(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		u, srv := inMemory(t, mcptest.Script{HangOnInitialize: true}, config.Server{Timeout: ms(0)}, nil)
		u.Start(nil)
		synctest.Wait()
		if err := u.Close(time.Time{}); err != nil {
			t.Errorf("Close = %v", err)
		}
		if got := u.State(); got != Closed {
			t.Errorf("state = %v, want closed", got)
		}
		if err := u.Connect(t.Context()); !errors.Is(err, ErrClosed) {
			t.Errorf("Connect after Close = %v, want ErrClosed", err)
		}
		if got := srv.Counts().Starts; got != 0 {
			t.Errorf("server answered %d handshakes, want 0", got)
		}
	})
}

func TestCloseIsIdempotentAndConcurrent(t *testing.T) {
	u, _ := connectedInMemory(t, mcptest.Script{}, config.Server{}, nil)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if err := u.Close(time.Time{}); err != nil {
				t.Errorf("Close = %v", err)
			}
		})
	}
	wg.Wait()
	if _, err := callTool(t.Context(), u, "echo", nil); !errors.Is(err, ErrClosed) {
		t.Errorf("CallTool after Close = %v, want ErrClosed", err)
	}
}

func TestCloseBeforeStart(t *testing.T) {
	u := New(config.Server{Name: "never", Command: "x"}, nil)
	if err := u.Close(time.Time{}); err != nil {
		t.Fatalf("Close = %v", err)
	}
	u.Start(nil) // must not start anything after Close
	if got := u.State(); got != Closed {
		t.Errorf("state = %v, want closed", got)
	}
}

func TestCloseInterruptsInFlightCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		u, _ := connectedInMemory(t, mcptest.Script{CallDelay: time.Hour}, config.Server{Timeout: ms(0)}, nil)
		errc := make(chan error, 1)
		go func() {
			_, err := callTool(context.Background(), u, "echo", nil)
			errc <- err
		}()
		synctest.Wait()
		u.Close(time.Time{})
		if err := <-errc; err == nil {
			t.Error("a call in flight at Close succeeded, want an error")
		}
	})
}

func TestStateStrings(t *testing.T) {
	want := map[State]string{
		Connecting: "connecting", Connected: "connected", Reconnecting: "reconnecting",
		Failed: "failed", CrashLoop: "crash-loop", Closed: "closed", State(42): "State(42)",
	}
	for s, w := range want {
		if got := s.String(); got != w {
			t.Errorf("State(%d).String() = %q, want %q", int(s), got, w)
		}
	}
}

// callTool calls the tool name on u with args.
func callTool(ctx context.Context, u *Upstream, name string, args map[string]any) (*mcp.CallToolResult, error) {
	return u.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
}

// connectedInMemory is inMemory, connected.
func connectedInMemory(t *testing.T, script mcptest.Script, srv config.Server, opts *Options) (*Upstream, *mcptest.Server) {
	t.Helper()
	u, ms := inMemory(t, script, srv, opts)
	if err := u.Connect(t.Context()); err != nil {
		t.Fatal(err)
	}
	return u, ms
}

// stdio returns a config entry that runs script as a child process.
func stdio(name string, script mcptest.Script) config.Server {
	cmd, args, env := mcptest.StdioCommand(script)
	return config.Server{Name: name, Command: cmd, Args: args, Env: env}
}

// shell returns a config entry that runs a shell script; tests use it for
// processes that misbehave in ways an MCP server would not choose to.
func shell(name, script string, args ...string) config.Server {
	return config.Server{Name: name, Command: "/bin/sh", Args: append([]string{"-c", script, "sh"}, args...)}
}
