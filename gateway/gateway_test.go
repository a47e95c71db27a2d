package gateway

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// upstreams maps server names to in-memory test servers; a name mapped to
// nil fails to connect.
type upstreams map[string]*mcptest.Server

func (u upstreams) dial(ctx context.Context, srv config.Server) (mcp.Transport, error) {
	s := u[srv.Name]
	if s == nil {
		return nil, errors.New("connection refused")
	}
	return s.ConnectInMemory(ctx)
}

func entry(name string, required bool) config.Server {
	return config.Server{Name: name, Command: "in-memory", Required: required}
}

// setup returns a connected manager over ups and a gateway over it.
func setup(t *testing.T, ups upstreams, servers []config.Server, opts *Options) (*switchboard.Manager, *Gateway) {
	t.Helper()
	for _, s := range ups {
		if s != nil {
			t.Cleanup(func() { s.Close() })
		}
	}
	return start(t, servers, &switchboard.Options{Dial: ups.dial}, opts)
}

// start connects a manager, with mopts, to servers, and returns it and a
// gateway over it, with opts. Connect waits for every server: a test's
// outcome must not depend on whether they connect within the startup gate
// on a busy machine.
func start(t *testing.T, servers []config.Server, mopts *switchboard.Options, opts *Options) (*switchboard.Manager, *Gateway) {
	t.Helper()
	mopts.StartupGate = -1
	m := switchboard.New(&config.Config{Servers: servers}, mopts)
	t.Cleanup(func() { m.Close() })
	if err := m.Connect(t.Context()); err != nil {
		t.Fatal(err)
	}
	g := New(m, opts)
	t.Cleanup(func() { g.Close() })
	return m, g
}

// client connects an MCP client to g in memory.
func client(t *testing.T, g *Gateway, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	return clientWith(t, g, opts, nil)
}

// clientWith is client with session options (a protocol version, say).
func clientWith(t *testing.T, g *Gateway, opts *mcp.ClientOptions, sessOpts *mcp.ClientSessionOptions) *mcp.ClientSession {
	t.Helper()
	return connectInMemory(t, g.Server(), opts, sessOpts)
}

// connectInMemory connects an MCP client to srv in memory, until the test
// ends.
func connectInMemory(tb testing.TB, srv *mcp.Server, opts *mcp.ClientOptions, sessOpts *mcp.ClientSessionOptions) *mcp.ClientSession {
	tb.Helper()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(tb.Context(), st, nil)
	if err != nil {
		tb.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v"}, opts).Connect(tb.Context(), ct, sessOpts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		cs.Close()
		ss.Wait()
	})
	return cs
}

func listNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	names, err := mcptest.ToolNames(t.Context(), cs)
	if err != nil {
		t.Fatal(err)
	}
	return names
}

func TestGatewayServesMergedTools(t *testing.T) {
	ups := upstreams{
		"files": mcptest.NewServer(mcptest.Script{Tools: []mcptest.ToolSpec{{Name: "read", Behavior: mcptest.Echo}}}),
		"math":  mcptest.NewServer(mcptest.Script{}),
	}
	_, g := setup(t, ups, []config.Server{entry("files", false), entry("math", false)}, nil)
	cs := client(t, g, nil)
	want := []string{"files__read", "math__add", "math__big", "math__echo", "math__fail", "math__increment", "math__sleep"}
	if diff := cmp.Diff(want, listNames(t, cs)); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "math__add", Arguments: map[string]any{"a": 20, "b": 22}})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || mcptest.Text(res) != "42" {
		t.Errorf("math__add = %q (isError %v), want 42", mcptest.Text(res), res.IsError)
	}
	if got := ups["math"].Counts().ByTool["add"]; got != 1 {
		t.Errorf("upstream add ran %d times, want 1", got)
	}
}

func TestGatewayToolErrorsAreResults(t *testing.T) {
	ups := upstreams{"m": mcptest.NewServer(mcptest.Script{})}
	_, g := setup(t, ups, []config.Server{entry("m", false)}, nil)
	cs := client(t, g, nil)
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "m__fail", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.Contains(mcptest.Text(res), "tool fail failed") {
		t.Errorf("m__fail = %q (isError %v), want the upstream's error result", mcptest.Text(res), res.IsError)
	}
}

func TestGatewayUnknownTool(t *testing.T) {
	ups := upstreams{"m": mcptest.NewServer(mcptest.Script{})}
	_, g := setup(t, ups, []config.Server{entry("m", false)}, nil)
	cs := client(t, g, nil)
	_, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "m__nope"})
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeInvalidParams || !strings.Contains(rpcErr.Message, "m__nope") {
		t.Errorf("call of an unknown tool = %v, want invalid params naming it", err)
	}
}

// TestGatewayUnknownToolSuggests: a direct call of a name that no tool has
// gets the go-sdk's error for an unknown tool, whose message suggests the
// names the client may have meant.
func TestGatewayUnknownToolSuggests(t *testing.T) {
	ups := upstreams{"m": mcptest.NewServer(mcptest.Script{}), "n": mcptest.NewServer(mcptest.Script{})}
	_, g := setup(t, ups, []config.Server{entry("m", false), entry("n", false)}, nil)
	cs := client(t, g, nil)
	for name, want := range map[string]string{
		"echo":    `unknown tool "echo"; did you mean one of "m__echo", "n__echo"?`,
		"m_echo":  `unknown tool "m_echo"; did you mean "m__echo"?`,
		"M.Add":   `unknown tool "M.Add"; did you mean "m__add"?`,
		"m__ehco": `unknown tool "m__ehco"; did you mean "m__echo"?`,
		"m__nope": `unknown tool "m__nope"`,
	} {
		_, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name})
		var rpcErr *jsonrpc.Error
		if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeInvalidParams || rpcErr.Message != want {
			t.Errorf("call of %s = %v; want invalid params, %q", name, err, want)
		}
	}
}

func TestGatewayRejectsNonObjectArguments(t *testing.T) {
	ups := upstreams{"m": mcptest.NewServer(mcptest.Script{})}
	_, g := setup(t, ups, []config.Server{entry("m", false)}, nil)
	cs := client(t, g, nil)
	_, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "m__echo", Arguments: []int{1, 2}})
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeInvalidParams {
		t.Fatalf("array arguments = %v, want invalid params", err)
	}
	for _, want := range []string{`server "m"`, `"m__echo"`, "must be a JSON object"} {
		if !strings.Contains(rpcErr.Message, want) {
			t.Errorf("message %q lacks %q", rpcErr.Message, want)
		}
	}
	if got := ups["m"].Counts().Calls; got != 0 {
		t.Errorf("upstream saw %d calls, want none", got)
	}
}

func TestGatewayAddsToolsThatArriveLater(t *testing.T) {
	ups := upstreams{"late": mcptest.NewServer(mcptest.Script{Tools: []mcptest.ToolSpec{{Name: "t"}}})}
	t.Cleanup(func() { ups["late"].Close() })
	m := switchboard.New(&config.Config{Servers: []config.Server{entry("late", false)}}, &switchboard.Options{Dial: ups.dial})
	defer m.Close()
	g := New(m, nil)
	defer g.Close()
	changed := make(chan struct{}, 1)
	cs := client(t, g, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
		select {
		case changed <- struct{}{}:
		default:
		}
	}})
	if got := listNames(t, cs); len(got) != 0 {
		t.Fatalf("tools before connecting: %v", got)
	}
	if err := m.Connect(t.Context()); err != nil {
		t.Fatal(err)
	}
	<-changed
	if diff := cmp.Diff([]string{"late__t"}, listNames(t, cs)); diff != "" {
		t.Errorf("tools after list_changed (-want +got):\n%s", diff)
	}
}

func TestExposable(t *testing.T) {
	for _, tc := range []struct {
		schema any
		ok     bool
	}{
		{nil, true},
		{map[string]any{"type": "object"}, true},
		{map[string]any{"type": "string"}, false},
		{"nonsense", false},
	} {
		_, err := exposable(&mcp.Tool{Name: "t", InputSchema: tc.schema})
		if (err == nil) != tc.ok {
			t.Errorf("exposable(%v) = %v, want ok=%v", tc.schema, err, tc.ok)
		}
	}
}

func get(t *testing.T, h http.Handler, path string, header http.Header) (int, string) {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	srv.Client().CloseIdleConnections()
	return resp.StatusCode, string(body)
}

// syncBuffer is a bytes.Buffer safe for concurrent use, for logs, that
// tells of every write.
type syncBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	written chan struct{} // buffered, 1
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case s.written <- struct{}{}:
	default:
	}
	return s.b.Write(p)
}

// waitFor waits until the buffer holds text.
func (s *syncBuffer) waitFor(text string) {
	for !strings.Contains(s.String(), text) {
		<-s.written
	}
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestClientSessionWithoutStreamIsNoWarning: a client session with no
// stream to be told list_changed on (it never opened one, or went away
// without ending its session) costs no warning on each list change, and
// the SDK's news of sessions coming and going is debug.
func TestClientSessionWithoutStreamIsNoWarning(t *testing.T) {
	srv := mcptest.NewServer(mcptest.Script{})
	logs := &syncBuffer{written: make(chan struct{}, 1)}
	m, g := setup(t, upstreams{"a": srv}, []config.Server{entry("a", false)},
		&Options{Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	hs := httptest.NewServer(g.Handler())
	defer hs.Close()
	// A session opened by hand, with no GET stream, never deleted.
	req, err := http.NewRequest("POST", hs.URL+"/mcp", strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := hs.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()

	changed := mcptest.Await(m.Subscribe, func(ev switchboard.Event) bool { return ev.Kind == switchboard.EventChanged })
	srv.SetTools([]mcptest.ToolSpec{{Name: "t2"}})
	<-changed
	// The notification goes out after the server's debounce, and fails.
	logs.waitFor(`msg="calling notifications/tools/list_changed`)
	if strings.Contains(logs.String(), "level=WARN") {
		t.Errorf("warnings for a client session without a stream:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), `level=DEBUG msg="server session connected"`) {
		t.Errorf("the SDK's news of a session is not at debug level:\n%s", logs.String())
	}
}
