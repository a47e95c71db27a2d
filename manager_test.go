package switchboard

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

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
	if m.Status().Ready() {
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
	if m.Status().Ready() {
		t.Error("Ready before connecting")
	}
	if err := m.Connect(t.Context()); err != nil {
		t.Fatal(err)
	}
	if !m.Status().Ready() {
		t.Error("not Ready with the required server connected and an optional one failed")
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

// callTool calls the tool with the public name on m, with args, for no
// particular query.
func callTool(ctx context.Context, m *Manager, name string, args map[string]any) (*mcp.CallToolResult, error) {
	return m.CallTool(ctx, nil, &mcp.CallToolParams{Name: name, Arguments: args})
}
