package gateway

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// stallWait is how long a test waits for what must come before it calls
// it lost: long on a busy machine, and only ever waited in full by a test
// that fails.
const stallWait = 20 * time.Second

// smallBuffers is a listener whose connections have a small send buffer,
// so that a client that stops reading fills it soon.
type smallBuffers struct{ net.Listener }

func (l smallBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(4096)
	}
	return c, err
}

// legacyPost posts a JSON-RPC message to endpoint for session (none if
// ""), and returns the response's session ID and status, the body read.
func legacyPost(t *testing.T, endpoint, session, body string) (string, int) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, endpoint, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", legacy)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.Header.Get("Mcp-Session-Id"), resp.StatusCode
}

// legacyInit opens a session on endpoint by hand, at protocol version
// legacy, and returns its ID.
func legacyInit(t *testing.T, endpoint string) string {
	t.Helper()
	id, status := legacyPost(t, endpoint, "", fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, legacy))
	if status != http.StatusOK || id == "" {
		t.Fatalf("initialize: status %d, session %q", status, id)
	}
	if _, status := legacyPost(t, endpoint, id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); status != http.StatusAccepted {
		t.Fatalf("notifications/initialized: status %d", status)
	}
	return id
}

// stalledStream opens session's standalone stream (a GET to /mcp) on a
// connection of its own with a small receive buffer, reads the response's
// head, and reads nothing more: the client of a session that stopped
// reading. The connection is closed when t ends.
func stalledStream(t *testing.T, hs *httptest.Server, session string) {
	t.Helper()
	conn, err := net.Dial("tcp", hs.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	_ = conn.(*net.TCPConn).SetReadBuffer(4096)
	fmt.Fprintf(conn, "GET /mcp HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\nMcp-Session-Id: %s\r\nMcp-Protocol-Version: %s\r\n\r\n",
		hs.Listener.Addr(), session, legacy)
	r := bufio.NewReader(conn)
	// The go-sdk sends the head and a comment once the stream is the
	// session's: what is sent after goes to it.
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("the stream's head: %v", err)
		}
		if strings.HasPrefix(line, "HTTP/1.1 ") && !strings.HasPrefix(line, "HTTP/1.1 200") {
			t.Fatalf("the stream: %s", line)
		}
		if line == ": ok\n" {
			return
		}
	}
}

// receive waits for one value from ch, for what; it fails t if none comes
// within stallWait.
func receive[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	timer := time.NewTimer(stallWait)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		t.Fatalf("%s: nothing within %v", what, stallWait)
	}
	panic("unreachable")
}

// TestStalledClientHoldsUpNoOther: a client subscribed to a resource that
// stops reading its stream holds up no other client: another keeps getting
// every resources/updated, and a reload's new server reaches it with
// tools/list_changed; once the stalled session has more notifications
// waiting than NotifyQueue, it is closed, with a warning, and the rest go
// on.
func TestStalledClientHoldsUpNoOther(t *testing.T) {
	const queue = 32
	srv, added := resourceServer("mem://a"), mcptest.NewServer(mcptest.Script{Tools: []mcptest.ToolSpec{{Name: "new"}}})
	logs := &syncBuffer{written: make(chan struct{}, 1)}
	drops := make(chan string, 10)
	m, g := setup(t, upstreams{"s": srv, "added": added}, []config.Server{entry("s", false)}, &Options{
		Logger:             slog.New(slog.NewTextHandler(logs, nil)),
		NotifyQueue:        queue,
		StreamWriteTimeout: time.Second,
		SessionDropped:     func(reason string) { drops <- reason },
	})
	hs := httptest.NewUnstartedServer(g.Handler())
	hs.Listener = smallBuffers{hs.Listener}
	hs.Start()
	t.Cleanup(func() {
		g.Close() // ends every stream, which hs.Close waits for
		hs.Close()
	})
	endpoint := hs.URL + "/mcp"

	updates, listChanged := make(chan string, 10000), make(chan struct{}, 100)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "reader", Version: "v"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			updates <- req.Params.URI
		},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { listChanged <- struct{}{} },
	}).Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: endpoint, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	if err := cs.Subscribe(t.Context(), &mcp.SubscribeParams{URI: "mem://a"}); err != nil {
		t.Fatal(err)
	}

	stalled := legacyInit(t, endpoint)
	if _, status := legacyPost(t, endpoint, stalled, `{"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{"uri":"mem://a"}}`); status != http.StatusOK {
		t.Fatalf("resources/subscribe: status %d", status)
	}
	stalledStream(t, hs, stalled)
	var stalledSession *mcp.ServerSession
	for ss := range g.Server().Sessions() {
		if ss.ID() == stalled {
			stalledSession = ss
		}
	}
	if stalledSession == nil {
		t.Fatalf("no session %s", stalled)
	}

	// update has the server tell of an update, and waits until the
	// reader has it.
	n := 0
	update := func() {
		t.Helper()
		n++
		if err := srv.NotifyResourceUpdated("mem://a"); err != nil {
			t.Fatal(err)
		}
		receive(t, updates, fmt.Sprintf("the reader's update %d", n))
	}
	// waiting is how many notifications the stalled session has waiting.
	waiting := func() int {
		g.sessions.mu.Lock()
		defer g.sessions.mu.Unlock()
		if st := g.sessions.byID[stalledSession]; st != nil {
			return len(st.outbox)
		}
		return 0
	}

	// Until the stalled client's buffers are full, and then some: its
	// updates wait in its queue.
	for waiting() < queue/2 {
		if n > 10000 {
			t.Fatalf("%d updates, and the stalled session has %d waiting", n, waiting())
		}
		update()
	}
	// A reload adds a server: the reader is told its tools changed.
	servers := []config.Server{entry("s", false), entry("added", false)}
	if _, err := m.Reconfigure(t.Context(), &config.Config{Servers: servers}); err != nil {
		t.Fatal(err)
	}
	receive(t, listChanged, "the reader's tools/list_changed after the reload")
	if names := listNames(t, cs); !slices.Contains(names, "added__new") {
		t.Errorf("the reader's tools after the reload: %v, want added__new", names)
	}

	// More updates overflow the stalled session's queue: it is closed.
	for len(drops) == 0 {
		if n > 20000 {
			t.Fatalf("%d updates, and the stalled session is still open", n)
		}
		update()
	}
	if reason := <-drops; reason != DropNotifyQueueFull {
		t.Errorf("the session was dropped for %q, want %q", reason, DropNotifyQueueFull)
	}
	ended := make(chan error, 1)
	go func() { ended <- stalledSession.Wait() }()
	receive(t, ended, "the end of the stalled session")
	update()
	if want := "closing a client session that does not read its notifications"; !strings.Contains(logs.String(), want) {
		t.Errorf("logs without %q:\n%s", want, logs.String())
	}
}
