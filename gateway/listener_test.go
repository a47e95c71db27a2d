package gateway

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// stuck bounds each wait of these tests on a socket: a limit that does not
// act fails the test then, instead of hanging it.
const stuck = 20 * time.Second

// connStates records the states a server's connections went through, by
// the client's address.
type connStates struct {
	mu      sync.Mutex
	seen    map[string][]http.ConnState
	changed chan struct{} // buffered, 1
}

func (c *connStates) record(conn net.Conn, s http.ConnState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	addr := conn.RemoteAddr().String()
	c.seen[addr] = append(c.seen[addr], s)
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

// await waits until the server's side of conn has been in state.
func (c *connStates) await(t *testing.T, conn net.Conn, state http.ConnState) {
	t.Helper()
	timer := time.NewTimer(stuck)
	defer timer.Stop()
	for {
		c.mu.Lock()
		seen := slices.Contains(c.seen[conn.LocalAddr().String()], state)
		c.mu.Unlock()
		if seen {
			return
		}
		select {
		case <-c.changed:
		case <-timer.C:
			t.Fatalf("the connection from %v is not %v after %v", conn.LocalAddr(), state, stuck)
		}
	}
}

// serveLimited serves h with NewHTTPServer(h, opts) on a loopback port and
// returns the server, its address, and its connections' states.
func serveLimited(t *testing.T, h http.Handler, opts *HTTPOptions) (*http.Server, string, *connStates) {
	t.Helper()
	srv := NewHTTPServer(h, opts)
	states := &connStates{seen: make(map[string][]http.ConnState), changed: make(chan struct{}, 1)}
	if track := srv.ConnState; track != nil {
		srv.ConnState = func(c net.Conn, s http.ConnState) {
			track(c, s)
			states.record(c, s)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		srv.Close()
		<-served
	})
	return srv, ln.Addr().String(), states
}

// dial opens a raw connection to addr, with a deadline of stuck.
func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(stuck))
	return conn
}

// send writes s to conn.
func send(t *testing.T, conn net.Conn, s string) {
	t.Helper()
	if _, err := io.WriteString(conn, s); err != nil {
		t.Fatal(err)
	}
}

// wantClosed checks that the server closed conn: a read ends with EOF (or
// a reset), not with the test's deadline.
func wantClosed(t *testing.T, what string, r io.Reader) {
	t.Helper()
	_, err := io.Copy(io.Discard, r)
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		t.Errorf("%s: the connection is still open after %v", what, stuck)
	}
}

// getOwn does GET path on a connection of its own and returns the status.
func getOwn(t *testing.T, addr, path string) int {
	t.Helper()
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: stuck}).Get("http://" + addr + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// slowBody is the start of a POST to /mcp whose body of 1000 bytes never
// comes, or its chunked form.
func slowBody(chunked bool, header string) string {
	if chunked {
		return "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n" +
			header + "Transfer-Encoding: chunked\r\n\r\n3e8\r\n{\"jsonrpc\""
	}
	return "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n" +
		header + "Content-Length: 1000\r\n\r\n{\"jsonrpc\""
}

// TestRefusedRequestIsAnsweredBeforeItsBody: a POST without the token, or
// from another site, whose body never finishes gets its 401 or 403 at once
// and its connection closed, from Gateway.Handler alone (an embedder's
// server has no deadline of ours); other clients are served meanwhile.
func TestRefusedRequestIsAnsweredBeforeItsBody(t *testing.T) {
	_, g := setup(t, upstreams{"s": mcptest.NewServer(mcptest.Script{})}, []config.Server{entry("s", false)},
		&Options{AuthToken: "secret"})
	hs := httptest.NewServer(g.Handler())
	defer hs.Close()
	addr := strings.TrimPrefix(hs.URL, "http://")
	for _, tc := range []struct {
		name, header string
		chunked      bool
		want         int
	}{
		{"no token", "", false, http.StatusUnauthorized},
		{"no token, chunked", "", true, http.StatusUnauthorized},
		{"a wrong token", "Authorization: Bearer nope\r\n", false, http.StatusUnauthorized},
		{"another site", "Authorization: Bearer secret\r\nOrigin: http://evil.example\r\n", false, http.StatusForbidden},
	} {
		conn := dial(t, addr)
		send(t, conn, slowBody(tc.chunked, tc.header))
		r := bufio.NewReader(conn)
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			t.Errorf("%s: no answer: %v", tc.name, err)
			continue
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want || !resp.Close {
			t.Errorf("%s: %s, close %v; want %d and the connection closed", tc.name, resp.Status, resp.Close, tc.want)
		}
		wantClosed(t, tc.name, r)
	}
	if code := getOwn(t, addr, "/healthz"); code != http.StatusOK {
		t.Errorf("another client: /healthz %d", code)
	}
}

// TestSlowBodyIsCut: a POST whose body stops coming ends at the body
// timeout, with 400 and its connection closed; the log names the limit;
// other clients are served.
func TestSlowBodyIsCut(t *testing.T) {
	logs := &syncBuffer{written: make(chan struct{}, 1)}
	_, g := setup(t, upstreams{"s": mcptest.NewServer(mcptest.Script{})}, []config.Server{entry("s", false)}, nil)
	_, addr, _ := serveLimited(t, g.Handler(), &HTTPOptions{BodyTimeout: 100 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	for _, chunked := range []bool{false, true} {
		conn := dial(t, addr)
		send(t, conn, slowBody(chunked, ""))
		r := bufio.NewReader(conn)
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			t.Fatalf("chunked %v: no answer: %v", chunked, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("chunked %v: %s, want 400", chunked, resp.Status)
		}
		wantClosed(t, fmt.Sprintf("chunked %v", chunked), r)
	}
	ctx, cancel := context.WithTimeout(t.Context(), stuck)
	defer cancel()
	if err := g.Drain(ctx); err != nil {
		t.Errorf("the slow POSTs still hold their handlers: %v", err)
	}
	if !strings.Contains(logs.String(), `limit="body timeout"`) {
		t.Errorf("the log does not name the limit:\n%s", logs)
	}
	if code := getOwn(t, addr, "/healthz"); code != http.StatusOK {
		t.Errorf("another client: /healthz %d", code)
	}
}

// TestLongCallOutlivesBodyTimeout: the body timeout bounds the body only: a
// call that runs longer, on a connection that then sends nothing, is not
// cut.
func TestLongCallOutlivesBodyTimeout(t *testing.T) {
	up := mcptest.NewServer(mcptest.Script{Tools: []mcptest.ToolSpec{{Name: "sleep", Behavior: mcptest.Sleep}}})
	_, g := setup(t, upstreams{"s": up}, []config.Server{entry("s", false)}, nil)
	_, addr, _ := serveLimited(t, g.Handler(), &HTTPOptions{BodyTimeout: 20 * time.Millisecond, WriteTimeout: 20 * time.Millisecond})
	c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp", DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "s__sleep", Arguments: map[string]any{"ms": 200}})
	if err != nil || res.IsError {
		t.Fatalf("a call longer than the timeouts: %v, %+v", err, res)
	}
}

// TestUnreadResponseIsCut: a client that asks for an 8 MiB result (more
// than the sockets buffer) and never reads it loses its connection at the
// write timeout, and the handler returns, letting the result go; another
// client is served meanwhile.
func TestUnreadResponseIsCut(t *testing.T) {
	up := mcptest.NewServer(mcptest.Script{Tools: []mcptest.ToolSpec{{Name: "big", Behavior: mcptest.Big}}, ResponseBytes: 8 << 20})
	logs := &syncBuffer{written: make(chan struct{}, 1)}
	_, g := setup(t, upstreams{"s": up}, []config.Server{entry("s", false)}, &Options{Stateless: true})
	// The test knows when the call's POST starts and ends.
	started, finished := make(chan struct{}), make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			g.Handler().ServeHTTP(w, r)
			return
		}
		close(started)
		defer close(finished)
		g.Handler().ServeHTTP(w, r)
	})
	_, addr, _ := serveLimited(t, h, &HTTPOptions{WriteTimeout: 200 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(logs, nil))})

	conn := dial(t, addr)
	conn.(*net.TCPConn).SetReadBuffer(4 << 10)
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"s__big","arguments":{}}}`
	send(t, conn, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"+
		"Mcp-Protocol-Version: 2025-11-25\r\n"+fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(call), call))
	<-started
	if code := getOwn(t, addr, "/healthz"); code != http.StatusOK {
		t.Errorf("another client: /healthz %d", code)
	}
	select {
	case <-finished:
	case <-time.After(stuck):
		t.Fatalf("the unread response still holds its handler after %v", stuck)
	}
	if !strings.Contains(logs.String(), `limit="write timeout"`) {
		t.Errorf("the log does not name the limit:\n%s", logs)
	}
}

// TestConnectionCap: over MaxConns, a new connection closes the one that
// waited longest for a request (idle, or still sending its headers), and is
// served; with every connection in a request, a new one is closed at once,
// and the log names the limit.
func TestConnectionCap(t *testing.T) {
	const maxConns = 3
	logs := &syncBuffer{written: make(chan struct{}, 1)}
	_, g := setup(t, upstreams{"s": mcptest.NewServer(mcptest.Script{})}, []config.Server{entry("s", false)}, nil)
	_, addr, states := serveLimited(t, g.Handler(), &HTTPOptions{MaxConns: maxConns, Logger: slog.New(slog.NewTextHandler(logs, nil))})

	// Idle keep-alive connections, as many as the cap.
	var idle []*bufio.Reader
	for range maxConns {
		conn, r := keptAlive(t, addr)
		states.await(t, conn, http.StateIdle)
		idle = append(idle, r)
	}
	// One more client: the longest idle connection goes.
	conn := dial(t, addr)
	send(t, conn, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
	if resp, err := http.ReadResponse(bufio.NewReader(conn), nil); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("a client over the cap, with connections idle: %v, %v", resp, err)
	}
	states.await(t, conn, http.StateClosed)
	wantClosed(t, "the longest idle connection", idle[0])
	if !strings.Contains(logs.String(), "the one that waited longest for a request is closed") {
		t.Errorf("the log does not tell of the connection closed:\n%s", logs)
	}

	// Connections each in a request (a body that does not come), as many
	// as the cap: the idle ones go.
	for range maxConns {
		conn := dial(t, addr)
		send(t, conn, slowBody(false, ""))
		states.await(t, conn, http.StateActive)
	}
	for i, r := range idle[1:] {
		wantClosed(t, fmt.Sprintf("idle connection %d", i+1), r)
	}
	extra := dial(t, addr)
	wantClosed(t, "a connection over the cap, with every one in a request", extra)
	if !strings.Contains(logs.String(), `each in a request; a new one is closed" limit="max connections" max=3`) {
		t.Errorf("the log does not name the limit:\n%s", logs)
	}
}

// TestIdleConnectionIsClosed: a keep-alive connection that sends no next
// request is closed at the idle timeout.
func TestIdleConnectionIsClosed(t *testing.T) {
	_, g := setup(t, upstreams{"s": mcptest.NewServer(mcptest.Script{})}, []config.Server{entry("s", false)}, nil)
	_, addr, _ := serveLimited(t, g.Handler(), &HTTPOptions{IdleTimeout: 50 * time.Millisecond})
	_, r := keptAlive(t, addr)
	wantClosed(t, "an idle keep-alive connection", r)
}

// keptAlive dials addr, has one request answered on the connection, and
// returns it, kept alive, with its reader.
func keptAlive(t *testing.T, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	conn := dial(t, addr)
	send(t, conn, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	r := bufio.NewReader(conn)
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return conn, r
}
