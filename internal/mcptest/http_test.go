package mcptest

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// These tests use real sockets, so they run on real time, with short
// deadlines where a wait is the point.

// serveHTTPTest serves s's Streamable HTTP handler on an httptest server.
// At cleanup the Server is closed first, which ends the hanging requests
// that httptest.Server.Close would otherwise wait for.
func serveHTTPTest(t *testing.T, s *Server) *httptest.Server {
	t.Helper()
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		s.Close()
		hs.Close()
	})
	return hs
}

// connectHTTP connects a client over Streamable HTTP. The session is closed
// at cleanup.
func connectHTTP(t *testing.T, endpoint string, client *http.Client, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	cs, err := dialHTTP(context.Background(), endpoint, client, opts)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func dialHTTP(ctx context.Context, endpoint string, client *http.Client, opts *mcp.ClientOptions) (*mcp.ClientSession, error) {
	tr := &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: client}
	return newClient(opts).Connect(ctx, tr, nil)
}

// rawPost posts one JSON-RPC message as a go-sdk client would, with the
// given session id, and returns the status and body.
func rawPost(t *testing.T, url, sessionID, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	if sessionID != "" {
		req.Header.Set("Mcp-Session-Id", sessionID)
	}
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("POST: %v", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading body: %v", err)
	}
	return resp.StatusCode, string(data)
}

func TestHTTPSessionsAndRestart(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		t.Run(map[bool]string{false: "default", true: "legacyOnly"}[legacy], func(t *testing.T) {
			s := NewServer(Script{LegacyOnly: legacy})
			hs := serveHTTPTest(t, s)
			cs := connectHTTP(t, hs.URL, hs.Client(), nil)
			ctx := context.Background()

			if cs.ID() == "" {
				t.Error("no session id: want a stateful session")
			}
			if got := cs.InitializeResult().ProtocolVersion; got >= "2026-07-28" {
				t.Errorf("protocol version %s, want a legacy one", got)
			}
			if got, _, err := callText(ctx, cs, "echo", map[string]any{"x": 1}); err != nil || got != `{"x":1}` {
				t.Fatalf("echo = %q, %v", got, err)
			}

			s.Restart()
			_, _, err := callText(ctx, cs, "echo", nil)
			if !errors.Is(err, mcp.ErrSessionMissing) {
				t.Errorf("call after Restart: err = %v, want ErrSessionMissing", err)
			}

			// The restarted server takes new sessions.
			cs2 := connectHTTP(t, hs.URL, hs.Client(), nil)
			if cs2.ID() == cs.ID() {
				t.Errorf("new session reuses id %q", cs.ID())
			}
			if _, _, err := callText(ctx, cs2, "echo", nil); err != nil {
				t.Errorf("call on a new session: %v", err)
			}
			// The call on the forgotten session never reached a handler.
			want := Counts{Starts: 2, Calls: 2, ByTool: map[string]int{"echo": 2}}
			if diff := cmp.Diff(want, s.Counts()); diff != "" {
				t.Errorf("Counts (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHTTPUnknownSession(t *testing.T) {
	const listBody = `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`
	tests := []struct {
		mode       UnknownSessionMode
		wantStatus int
		wantBody   string
	}{
		{UnknownSession404, http.StatusNotFound, "session not found\n"},
		{UnknownSession400, http.StatusBadRequest, `{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID provided"},"id":null}` + "\n"},
		{UnknownSession400Text, http.StatusBadRequest, "Bad Request: No valid session ID provided\n"},
	}
	for _, tt := range tests {
		t.Run(tt.mode.String(), func(t *testing.T) {
			s := NewServer(Script{LegacyOnly: true})
			s.SetUnknownSession(tt.mode)
			hs := serveHTTPTest(t, s)
			cs := connectHTTP(t, hs.URL, hs.Client(), nil)
			id := cs.ID()

			// A known session is served as usual, whatever the mode.
			if status, _ := rawPost(t, hs.URL, id, listBody); status != http.StatusOK {
				t.Errorf("known session: status %d, want 200", status)
			}

			s.Restart()
			status, body := rawPost(t, hs.URL, id, listBody)
			if status != tt.wantStatus || body != tt.wantBody {
				t.Errorf("unknown session: %d %q; want %d %q", status, body, tt.wantStatus, tt.wantBody)
			}
			// The go-sdk client knows a 404 for what it is; a 400 reaches it
			// as a bare "Bad Request".
			_, _, err := callText(context.Background(), cs, "echo", nil)
			if err == nil {
				t.Error("client call on an unknown session succeeded")
			}
			if got, want := errors.Is(err, mcp.ErrSessionMissing), tt.mode == UnknownSession404; got != want {
				t.Errorf("client call: err = %v; ErrSessionMissing %v, want %v", err, got, want)
			}
		})
	}
}

func TestHTTPServerStopStart(t *testing.T) {
	s := NewServer(Script{})
	defer s.Close()
	h, err := StartHTTP(s)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	ctx := context.Background()

	if !strings.HasSuffix(h.URL, "/mcp") || !strings.HasSuffix(h.SSEURL, "/sse") {
		t.Errorf("URLs %q and %q", h.URL, h.SSEURL)
	}
	cs := connectHTTP(t, h.URL, client, nil)
	if _, _, err := callText(ctx, cs, "echo", nil); err != nil {
		t.Fatalf("echo: %v", err)
	}

	if err := h.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := h.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if cs, err := dialHTTP(dctx, h.URL, client, nil); err == nil {
		cs.Close()
		t.Fatal("Connect to a stopped server succeeded")
	}
	if _, _, err := callText(ctx, cs, "echo", nil); err == nil {
		t.Error("call to a stopped server succeeded")
	}

	if err := h.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	if _, _, err := callText(ctx, cs, "echo", nil); !errors.Is(err, mcp.ErrSessionMissing) {
		t.Errorf("old session after restart: err = %v, want ErrSessionMissing", err)
	}
	cs2 := connectHTTP(t, h.URL, client, nil)
	if _, _, err := callText(ctx, cs2, "echo", nil); err != nil {
		t.Errorf("echo after Start: %v", err)
	}

	if err := h.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := h.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := h.Start(); !errors.Is(err, ErrClosed) {
		t.Errorf("Start after Close: err = %v, want ErrClosed", err)
	}
}

func TestSSEHandler(t *testing.T) {
	s := NewServer(Script{})
	h, err := StartHTTP(s)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(func() {
		s.Close()
		h.Close()
		client.CloseIdleConnections()
	})
	ctx := context.Background()
	cs, err := newClient(nil).Connect(ctx, &mcp.SSEClientTransport{Endpoint: h.SSEURL, HTTPClient: client}, nil)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })

	names, err := ToolNames(ctx, cs)
	if err != nil {
		t.Fatalf("Tools: %v", err)
	}
	if len(names) != len(DefaultTools()) {
		t.Errorf("tools %v", names)
	}
	if got, _, err := callText(ctx, cs, "add", map[string]any{"a": 2, "b": 3}); err != nil || got != "5" {
		t.Errorf("add = %q, %v; want 5", got, err)
	}

	// Restart drops the SSE stream: the session ends.
	s.Restart()
	if err := cs.Wait(); err == nil {
		t.Log("Wait returned nil")
	}
	if _, _, err := callText(ctx, cs, "echo", nil); err == nil {
		t.Error("call after Restart succeeded")
	}
}

func TestHTTPExitOnCall(t *testing.T) {
	s := NewServer(Script{ExitOnCall: 2})
	hs := serveHTTPTest(t, s)
	cs := connectHTTP(t, hs.URL, hs.Client(), nil)
	ctx := context.Background()

	if got, _, err := callText(ctx, cs, "increment", nil); err != nil || got != "1" {
		t.Fatalf("first call = %q, %v", got, err)
	}
	if got, _, err := callText(ctx, cs, "increment", nil); err == nil {
		t.Fatalf("second call = %q; want the server to crash", got)
	}
	if _, _, err := callText(ctx, cs, "echo", nil); err == nil {
		t.Error("call after the crash succeeded")
	}
	// Like a restarted process, the server takes new sessions; the count
	// goes on.
	cs2 := connectHTTP(t, hs.URL, hs.Client(), nil)
	if got, _, err := callText(ctx, cs2, "increment", nil); err != nil || got != "2" {
		t.Errorf("call on a new session = %q, %v; want 2", got, err)
	}
}

func TestHTTPExitAfterListTools(t *testing.T) {
	s := NewServer(Script{ExitAfterListTools: true})
	hs := serveHTTPTest(t, s)
	cs := connectHTTP(t, hs.URL, hs.Client(), nil)
	ctx := context.Background()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("ListTools: %v", err)
	}
	if len(res.Tools) != len(DefaultTools()) {
		t.Errorf("%d tools", len(res.Tools))
	}
	awaitNoSessions(t, s)
	if _, _, err := callText(ctx, cs, "echo", nil); !errors.Is(err, mcp.ErrSessionMissing) {
		t.Errorf("call after exit: err = %v, want ErrSessionMissing", err)
	}
}

func TestHTTPExitAfterInitialize(t *testing.T) {
	s := NewServer(Script{ExitAfterInitialize: true})
	hs := serveHTTPTest(t, s)
	cs := connectHTTP(t, hs.URL, hs.Client(), nil)
	awaitNoSessions(t, s)
	if _, _, err := callText(context.Background(), cs, "echo", nil); !errors.Is(err, mcp.ErrSessionMissing) {
		t.Errorf("call after exit: err = %v, want ErrSessionMissing", err)
	}
}

func TestHTTPHangOnInitialize(t *testing.T) {
	s := NewServer(Script{HangOnInitialize: true})
	hs := serveHTTPTest(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if cs, err := dialHTTP(ctx, hs.URL, hs.Client(), nil); err == nil {
		cs.Close()
		t.Fatal("Connect to a hung server succeeded")
	}

	// Close releases a hang that nothing else would end.
	errc := make(chan error, 1)
	go func() {
		cs, err := dialHTTP(context.Background(), hs.URL, hs.Client(), nil)
		if err == nil {
			cs.Close()
		}
		errc <- err
	}()
	await(t, s, func() bool { return s.hangs > 0 })
	s.Close()
	if err := <-errc; err == nil {
		t.Error("Connect succeeded after Close")
	}
}

// await waits until cond, called with the server's lock held, is true. It
// fails the test after 10 seconds.
func await(t *testing.T, s *Server, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.await(ctx, cond); err != nil {
		t.Fatalf("server state: %v", err)
	}
}

// awaitNoSessions waits until the server has closed and forgotten every
// session.
func awaitNoSessions(t *testing.T, s *Server) {
	t.Helper()
	await(t, s, func() bool { return len(s.sessions) == 0 && s.closing == 0 })
}

func TestRejectPOSTs(t *testing.T) {
	s := NewServer(Script{})
	hs := serveHTTPTest(t, s)
	s.RejectPOSTs(http.StatusTooManyRequests, 2, 3*time.Second)
	for range 2 {
		code, _ := rawPost(t, hs.URL, "", `{"jsonrpc":"2.0","id":1,"method":"ping"}`)
		if code != http.StatusTooManyRequests {
			t.Errorf("POST = %d, want 429", code)
		}
	}
	req, _ := http.NewRequest(http.MethodPost, hs.URL, strings.NewReader("{}"))
	s.RejectPOSTs(http.StatusServiceUnavailable, 1, 3*time.Second)
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "3" {
		t.Errorf("POST = %d with Retry-After %q, want 503 with 3", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	cs := connectHTTP(t, hs.URL, client, nil)
	if got, _, err := callText(context.Background(), cs, "add", map[string]any{"a": 1, "b": 2}); err != nil || got != "3" {
		t.Errorf("after the rejections, add = %q, %v", got, err)
	}
	if got := s.Counts().Calls; got != 1 {
		t.Errorf("server counted %d calls, want only the one it processed", got)
	}
}

func TestStatelessHandler(t *testing.T) {
	s := NewServer(Script{})
	hs, err := StartHTTP(s)
	if err != nil {
		t.Fatal(err)
	}
	defer hs.Close()
	defer s.Close()
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	cs := connectHTTP(t, hs.StatelessURL, client, nil)
	if cs.ID() != "" {
		t.Errorf("stateless session ID %q, want none", cs.ID())
	}
	if got := cs.InitializeResult().ProtocolVersion; got < "2026-07-28" {
		t.Errorf("protocol %q, want the stateless era", got)
	}
	if got, _, err := callText(context.Background(), cs, "add", map[string]any{"a": 2, "b": 2}); err != nil || got != "4" {
		t.Errorf("add = %q, %v", got, err)
	}
}

// TestHTTPProcessServesTheScript: a script served by a child process over
// HTTP answers as in process, and Close ends the child.
func TestHTTPProcessServesTheScript(t *testing.T) {
	p, err := StartHTTPProcess(Script{Name: "child", Tools: []ToolSpec{{Name: "big", Behavior: Big}}, ResponseBytes: 3 << 20})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := newClient(nil).Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: p.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := cs.InitializeResult().ServerInfo.Name; got != "child" {
		t.Errorf("server name %q, want child", got)
	}
	if text, _, err := callText(t.Context(), cs, "big", nil); err != nil || len(text) != 3<<20 {
		t.Errorf("big = %d bytes, %v; want 3 MiB", len(text), err)
	}
	cs.Close()
	if err := p.Close(); err != nil {
		t.Errorf("Close = %v", err)
	}
	if st := p.cmd.ProcessState; st == nil || !st.Exited() {
		t.Errorf("the child did not exit: %v", p.cmd.ProcessState)
	}
}
