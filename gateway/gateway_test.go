package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	st, ct := mcp.NewInMemoryTransports()
	ss, err := g.Server().Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v"}, opts).Connect(t.Context(), ct, sessOpts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
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

func TestHealthAndReadiness(t *testing.T) {
	secret := "s3cr3t-value"
	ups := upstreams{"up": mcptest.NewServer(mcptest.Script{}), "down": nil}
	down := entry("down", true)
	down.URL, down.Command, down.Type = "https://user:"+secret+"@example.invalid/mcp?token="+secret, "", config.HTTP
	_, g := setup(t, ups, []config.Server{entry("up", true), down, {Name: "off", Command: "x", Enabled: new(bool)}}, nil)
	h := g.Handler()

	code, body := get(t, h, "/healthz", nil)
	if code != http.StatusOK || body != "{\"status\":\"ok\"}\n" {
		t.Errorf("/healthz = %d %q, want 200 {\"status\":\"ok\"}", code, body)
	}
	code, body = get(t, h, "/readyz", nil)
	if code != http.StatusServiceUnavailable {
		t.Errorf("/readyz = %d, want 503 with a required server down", code)
	}
	var got readiness
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatalf("/readyz body %q: %v", body, err)
	}
	want := readiness{Status: "not_ready", Servers: map[string]string{"up": "connected", "down": "failed", "off": "disabled"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("/readyz (-want +got):\n%s", diff)
	}
	for _, leak := range []string{secret, "example.invalid", "refused"} {
		if strings.Contains(body, leak) {
			t.Errorf("/readyz body %q contains %q", body, leak)
		}
	}
}

func TestReadyWhenRequiredConnected(t *testing.T) {
	ups := upstreams{"up": mcptest.NewServer(mcptest.Script{}), "opt": nil}
	_, g := setup(t, ups, []config.Server{entry("up", true), entry("opt", false)}, nil)
	code, body := get(t, g.Handler(), "/readyz", nil)
	if code != http.StatusOK || !strings.Contains(body, `"status":"ready"`) {
		t.Errorf("/readyz = %d %s, want 200 ready", code, body)
	}
}

func TestAuthToken(t *testing.T) {
	ups := upstreams{"m": mcptest.NewServer(mcptest.Script{})}
	_, g := setup(t, ups, []config.Server{entry("m", false)}, &Options{AuthToken: "letmein"})
	h := g.Handler()
	for _, tc := range []struct {
		path   string
		header string
		want   int
	}{
		{"/mcp", "", http.StatusUnauthorized},
		{"/mcp", "Bearer wrong", http.StatusUnauthorized},
		{"/mcp", "Basic letmein", http.StatusUnauthorized},
		{"/mcp", "Bearerletmein", http.StatusUnauthorized},
		{"/status", "bearer letmein", http.StatusOK}, // the scheme is case-insensitive
		{"/status", "BEARER letmein", http.StatusOK},
		{"/status", "Bearer  letmein", http.StatusUnauthorized},
		{"/healthz", "", http.StatusOK},
		{"/readyz", "", http.StatusOK},
	} {
		hdr := http.Header{}
		if tc.header != "" {
			hdr.Set("Authorization", tc.header)
		}
		if code, _ := get(t, h, tc.path, hdr); code != tc.want {
			t.Errorf("GET %s with %q = %d, want %d", tc.path, tc.header, code, tc.want)
		}
	}
	// With the token, an MCP client gets through.
	srv := httptest.NewServer(h)
	defer srv.Close()
	httpClient := &http.Client{Transport: bearer{"letmein", http.DefaultTransport}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "v"}, nil).Connect(t.Context(),
		&mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp", HTTPClient: httpClient}, nil)
	if err != nil {
		t.Fatalf("connect with the token: %v", err)
	}
	if got := len(listNames(t, cs)); got == 0 {
		t.Error("no tools over authorized HTTP")
	}
	cs.Close()
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
}

type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", fmt.Sprintf("Bearer %s", b.token))
	return b.base.RoundTrip(r)
}

func TestDrainWaitsForCalls(t *testing.T) {
	var c inflight
	c.init()
	if err := c.wait(t.Context()); err != nil {
		t.Fatalf("wait with nothing in flight = %v", err)
	}
	c.add()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := c.wait(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("wait with a call in flight = %v, want the context's error", err)
	}
	c.done()
	if err := c.wait(t.Context()); err != nil {
		t.Errorf("wait after the call = %v", err)
	}
}

func TestStatelessHTTP(t *testing.T) {
	ups := upstreams{"m": mcptest.NewServer(mcptest.Script{})}
	_, g := setup(t, ups, []config.Server{entry("m", false)}, &Options{Stateless: true})
	srv := httptest.NewServer(g.Handler())
	defer srv.Close()
	transport := &http.Transport{}
	defer transport.CloseIdleConnections()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "v"}, nil).Connect(t.Context(),
		&mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp", HTTPClient: &http.Client{Transport: transport}}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer cs.Close()
	if cs.ID() != "" {
		t.Errorf("stateless gateway gave session ID %q", cs.ID())
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "m__add", Arguments: map[string]any{"a": 1, "b": 2}})
	if err != nil || mcptest.Text(res) != "3" {
		t.Errorf("m__add over stateless HTTP = %v, %v", res, err)
	}
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

// TestAnswer: only the JSON-RPC error a server answered a call with passes
// through as a protocol error; one carried by the cause of an unavailable
// server, or the SDK's own rejection of a write, does not.
func TestAnswer(t *testing.T) {
	invalid := &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "bad"}
	rejected := &jsonrpc.Error{Code: codeRejected, Message: "rejected by transport"}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"the server's answer", &switchboard.ServerError{Server: "s", Op: "call", Err: invalid}, true},
		{"a rejected write", &switchboard.ServerError{Server: "s", Op: "call", Err: rejected}, false},
		{"an unavailable server whose last attempt failed with one", &switchboard.ServerError{Server: "s", Op: "call",
			Err: &switchboard.UnavailableError{State: switchboard.StateReconnecting, Err: invalid}}, false},
		{"an ambiguous call", &switchboard.AmbiguousError{Tool: "t", Err: invalid}, false},
		{"no JSON-RPC error", errors.New("plain"), false},
	} {
		if _, got := answer(tc.err); got != tc.want {
			t.Errorf("%s: answer = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestTokenGuardsMetricsNotProbes: with a token, /mcp and /metrics need it;
// /healthz and /readyz never do.
func TestTokenGuardsMetricsNotProbes(t *testing.T) {
	const token = "t0ken-value"
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "switchboard_up 1\n") })
	_, g := setup(t, upstreams{"m": mcptest.NewServer(mcptest.Script{})}, []config.Server{entry("m", false)}, &Options{AuthToken: token, Metrics: metrics})
	h := g.Handler()
	bearer := http.Header{"Authorization": {"Bearer " + token}}
	wrong := http.Header{"Authorization": {"Bearer nope"}}
	for _, tc := range []struct {
		path   string
		header http.Header
		want   int
	}{
		{"/metrics", nil, http.StatusUnauthorized},
		{"/metrics", wrong, http.StatusUnauthorized},
		{"/metrics", bearer, http.StatusOK},
		{"/mcp", nil, http.StatusUnauthorized},
		{"/healthz", nil, http.StatusOK},
		{"/readyz", nil, http.StatusOK},
	} {
		code, body := get(t, h, tc.path, tc.header)
		if code != tc.want {
			t.Errorf("GET %s with %v: %d, want %d", tc.path, tc.header, code, tc.want)
		}
		if strings.Contains(body, token) {
			t.Errorf("GET %s: the body shows the token", tc.path)
		}
	}
}

// TestAdminReconnect: POST /admin/reconnect/NAME reconnects a server now,
// and says how it went; it needs the token when one is set.
func TestAdminReconnect(t *testing.T) {
	const token = "adm1n"
	srv := mcptest.NewServer(mcptest.Script{})
	_, g := setup(t, upstreams{"m": srv}, []config.Server{entry("m", false), {Name: "off", Command: "x", Enabled: new(false)}}, &Options{AuthToken: token})
	hs := httptest.NewServer(g.Handler())
	defer hs.Close()
	defer hs.Client().CloseIdleConnections()
	post := func(path string, auth bool) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), "POST", hs.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if auth {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := hs.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	before := srv.Counts().Starts
	if code, body := post("/admin/reconnect/m", true); code != http.StatusOK || !strings.Contains(body, `"state":"connected"`) {
		t.Errorf("reconnect m: %d %s", code, body)
	}
	if after := srv.Counts().Starts; after != before+1 {
		t.Errorf("the server saw %d handshakes, want %d: no new session", after, before+1)
	}
	for _, tc := range []struct {
		path string
		auth bool
		want int
	}{
		{"/admin/reconnect/m", false, http.StatusUnauthorized},
		{"/admin/reconnect/ghost", true, http.StatusNotFound},
		{"/admin/reconnect/off", true, http.StatusConflict},
	} {
		if code, body := post(tc.path, tc.auth); code != tc.want {
			t.Errorf("POST %s (auth %v): %d %s, want %d", tc.path, tc.auth, code, body, tc.want)
		}
	}
}
