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

	"github.com/switchboard-mcp/switchboard"
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

// postAt posts a JSON-RPC message to endpoint for session (none if ""), of
// protocol version, and returns the response's session ID, status and
// body.
func postAt(t *testing.T, endpoint, version, session, body string) (id string, status int, answer string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, endpoint, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", version)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.Header.Get("Mcp-Session-Id"), resp.StatusCode, string(b)
}

// legacyPost is postAt at protocol version legacy, without the body.
func legacyPost(t *testing.T, endpoint, session, body string) (string, int) {
	t.Helper()
	id, status, _ := postAt(t, endpoint, legacy, session, body)
	return id, status
}

// initAt opens a session on endpoint by hand, at protocol version, and
// returns its ID.
func initAt(t *testing.T, endpoint, version string) string {
	t.Helper()
	id, status, _ := postAt(t, endpoint, version, "", fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, version))
	if status != http.StatusOK || id == "" {
		t.Fatalf("initialize: status %d, session %q", status, id)
	}
	if _, status, _ := postAt(t, endpoint, version, id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); status != http.StatusAccepted {
		t.Fatalf("notifications/initialized: status %d", status)
	}
	return id
}

// legacyInit is initAt at protocol version legacy.
func legacyInit(t *testing.T, endpoint string) string {
	t.Helper()
	return initAt(t, endpoint, legacy)
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

// stallRig is a gateway on a listener with small send buffers, in front of
// a server of resources, and a client of it that stopped reading.
type stallRig struct {
	srv, added *mcptest.Server
	m          *switchboard.Manager
	g          *Gateway
	endpoint   string
	logs       *syncBuffer
	drops      chan string
	// stalled is the session of the client that stopped reading, after
	// it subscribed to every URI.
	stalled *mcp.ServerSession
}

// newStallRig serves uris with a gateway whose sessions queue at most
// queue notifications, and opens a session subscribed to every URI that
// stops reading its stream. The gateway's Handler is served by a plain
// http.Server, or, with listener set, by NewHTTPServer.
func newStallRig(t *testing.T, queue int, uris []string, listener *HTTPOptions) *stallRig {
	t.Helper()
	var resources []mcptest.ResourceSpec
	for _, uri := range uris {
		resources = append(resources, mcptest.ResourceSpec{URI: uri, Name: uri})
	}
	r := &stallRig{
		srv:   mcptest.NewServer(mcptest.Script{Resources: resources}),
		added: mcptest.NewServer(mcptest.Script{Tools: []mcptest.ToolSpec{{Name: "new"}}}),
		logs:  &syncBuffer{written: make(chan struct{}, 1)},
		drops: make(chan string, 10),
	}
	r.m, r.g = setup(t, upstreams{"s": r.srv, "added": r.added}, []config.Server{entry("s", false)}, &Options{
		Logger:             slog.New(slog.NewTextHandler(r.logs, nil)),
		NotifyQueue:        queue,
		StreamWriteTimeout: time.Second,
		SessionDropped:     func(reason string) { r.drops <- reason },
	})
	hs := httptest.NewUnstartedServer(r.g.Handler())
	if listener != nil {
		hs.Config = NewHTTPServer(r.g.Handler(), listener)
	}
	hs.Listener = smallBuffers{hs.Listener}
	hs.Start()
	t.Cleanup(func() {
		r.g.Close() // ends every stream, which hs.Close waits for
		hs.Close()
	})
	r.endpoint = hs.URL + "/mcp"

	stalled := legacyInit(t, r.endpoint)
	for i, uri := range uris {
		if _, status := legacyPost(t, r.endpoint, stalled, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"resources/subscribe","params":{"uri":%q}}`, i+2, uri)); status != http.StatusOK {
			t.Fatalf("resources/subscribe %s: status %d", uri, status)
		}
	}
	stalledStream(t, hs, stalled)
	for ss := range r.g.Server().Sessions() {
		if ss.ID() == stalled {
			r.stalled = ss
		}
	}
	if r.stalled == nil {
		t.Fatalf("no session %s", stalled)
	}
	return r
}

// reader connects a client that reads, subscribed to uris, and returns it
// with the URIs of the updates it is told of, and a channel that gets a
// value for each tools/list_changed.
func (r *stallRig) reader(t *testing.T, uris []string) (*mcp.ClientSession, <-chan string, <-chan struct{}) {
	t.Helper()
	updates, listChanged := make(chan string, 10000), make(chan struct{}, 100)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "reader", Version: "v"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			updates <- req.Params.URI
		},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { listChanged <- struct{}{} },
	}).Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: r.endpoint, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	for _, uri := range uris {
		if err := cs.Subscribe(t.Context(), &mcp.SubscribeParams{URI: uri}); err != nil {
			t.Fatal(err)
		}
	}
	return cs, updates, listChanged
}

// waiting is how many notifications the stalled session has waiting.
func (r *stallRig) waiting() int {
	return len(r.queued())
}

// queued returns the notifications the stalled session has waiting.
func (r *stallRig) queued() []queued {
	r.g.sessions.mu.Lock()
	st := r.g.sessions.byID[r.stalled]
	r.g.sessions.mu.Unlock()
	if st == nil {
		return nil
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	return slices.Clone(st.queue)
}

// waitingUpdates is how many resources/updated the stalled session has
// waiting.
func (r *stallRig) waitingUpdates() int {
	n := 0
	for _, q := range r.queued() {
		if q.method == "notifications/resources/updated" {
			n++
		}
	}
	return n
}

// TestStalledClientHoldsUpNoOther: a client subscribed to resources that
// stops reading its stream holds up no other client: another keeps getting
// every resources/updated, and a reload's new server reaches it with
// tools/list_changed; once the stalled session has more notifications
// waiting than NotifyQueue, it is closed, with a warning, and the rest go
// on. Its stream's writes have StreamWriteTimeout, also under
// NewHTTPServer, whose WriteTimeout is for other responses.
func TestStalledClientHoldsUpNoOther(t *testing.T) {
	for _, tc := range []struct {
		name     string
		listener *HTTPOptions
	}{
		{"Handler", nil},
		{"NewHTTPServer", &HTTPOptions{WriteTimeout: time.Hour}},
	} {
		t.Run(tc.name, func(t *testing.T) { testStalledClient(t, tc.listener) })
	}
}

func testStalledClient(t *testing.T, listener *HTTPOptions) {
	const queue = 32
	// More resources than the queue holds: the same notification is
	// queued once.
	var uris []string
	for i := range queue + 8 {
		uris = append(uris, fmt.Sprintf("mem://%d", i))
	}
	r := newStallRig(t, queue, uris, listener)

	cs, updates, listChanged := r.reader(t, uris)

	// update has the server tell of an update of the next resource, and
	// waits until the reader has it.
	n := 0
	update := func() {
		t.Helper()
		uri := uris[n%len(uris)]
		n++
		if err := r.srv.NotifyResourceUpdated(uri); err != nil {
			t.Fatal(err)
		}
		if got := receive(t, updates, fmt.Sprintf("the reader's update %d", n)); got != uri {
			t.Fatalf("the reader's update %d is of %s, want %s", n, got, uri)
		}
	}

	// Until the stalled client's buffers are full, and then some: its
	// updates wait in its queue.
	for r.waiting() < queue/2 {
		if n > 10000 {
			t.Fatalf("%d updates, and the stalled session has %d waiting", n, r.waiting())
		}
		update()
	}
	// A reload adds a server: the reader is told its tools changed.
	servers := []config.Server{entry("s", false), entry("added", false)}
	if _, err := r.m.Reconfigure(t.Context(), &config.Config{Servers: servers}); err != nil {
		t.Fatal(err)
	}
	receive(t, listChanged, "the reader's tools/list_changed after the reload")
	if names := listNames(t, cs); !slices.Contains(names, "added__new") {
		t.Errorf("the reader's tools after the reload: %v, want added__new", names)
	}

	// More updates overflow the stalled session's queue: it is closed.
	for len(r.drops) == 0 {
		if n > 20000 {
			t.Fatalf("%d updates, and the stalled session is still open", n)
		}
		update()
	}
	if reason := <-r.drops; reason != DropNotifyQueueFull {
		t.Errorf("the session was dropped for %q, want %q", reason, DropNotifyQueueFull)
	}
	ended := make(chan error, 1)
	go func() { ended <- r.stalled.Wait() }()
	receive(t, ended, "the end of the stalled session")
	update()
	if want := "closing a client session that does not read its notifications"; !strings.Contains(r.logs.String(), want) {
		t.Errorf("logs without %q:\n%s", want, r.logs.String())
	}
}

// TestSameNotificationQueuedOnce: a storm of updates of one resource takes
// one place in the queue of a client that does not read: the session is
// not closed for it.
func TestSameNotificationQueuedOnce(t *testing.T) {
	const queue = 4
	r := newStallRig(t, queue, []string{"mem://a"}, nil)
	// The reader's updates say when the stalled session's are queued: the
	// gateway tells its sessions of one update before the next.
	_, updates, _ := r.reader(t, []string{"mem://a"})
	for i := range 50 * queue {
		if err := r.srv.NotifyResourceUpdated("mem://a"); err != nil {
			t.Fatal(err)
		}
		receive(t, updates, fmt.Sprintf("the reader's update %d", i+1))
		if w := r.waitingUpdates(); w > 1 {
			t.Fatalf("after %d updates of one resource, %d of them wait in the queue, want at most 1", i+1, w)
		}
	}
	if len(r.drops) != 0 {
		t.Errorf("the session was dropped (%s) for updates of one resource", <-r.drops)
	}
}

// TestUnreadCallHoldsUpNoOther: a client that leaves the response of its
// own call unread, while the server sends progress for it without end,
// holds up no other client of that server: another's call gets its
// progress and its answer, and the notifications over the stalled call's
// queue are dropped, with a warning.
func TestUnreadCallHoldsUpNoOther(t *testing.T) {
	// A stdio server: one stream, whose messages are read in order, and
	// whose notifications of a call come before its answer.
	command, args, env := mcptest.StdioCommand(mcptest.Script{Tools: []mcptest.ToolSpec{{Name: "progress", Behavior: mcptest.Progress}}})
	logs := &syncBuffer{written: make(chan struct{}, 1)}
	_, g := start(t, []config.Server{{Name: "s", Command: command, Args: args, Env: env}}, &switchboard.Options{},
		&Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	hs := httptest.NewUnstartedServer(g.Handler())
	hs.Listener = smallBuffers{hs.Listener}
	hs.Start()
	t.Cleanup(func() {
		g.Close()
		hs.Close()
	})
	endpoint := hs.URL + "/mcp"

	// The stalled client calls, and reads nothing of the answer. Its
	// connection closes first, when the test ends: the gateway's write to
	// it has no deadline here.
	stalled := legacyInit(t, endpoint)
	conn, err := net.Dial("tcp", hs.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	_ = conn.(*net.TCPConn).SetReadBuffer(4096)
	call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"s__progress","arguments":{"steps":5000},"_meta":{"progressToken":"stalled"}}}`
	fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Session-Id: %s\r\nMcp-Protocol-Version: %s\r\nContent-Length: %d\r\n\r\n%s",
		hs.Listener.Addr(), stalled, legacy, len(call), call)
	defer conn.Close()
	// The call's progress has begun to come: what comes after fills the
	// connection's buffers, and then waits.
	r := bufio.NewReaderSize(conn, 16)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("the stalled call's answer: %v", err)
		}
		if strings.HasPrefix(line, "data: ") {
			break
		}
	}

	progress := make(chan float64, 100)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "reader", Version: "v"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			progress <- req.Params.Progress
		},
	}).Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: endpoint, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	answered := make(chan error, 1)
	go func() {
		params := &mcp.CallToolParams{Name: "s__progress", Arguments: map[string]any{"steps": 3}}
		params.SetProgressToken("reader")
		res, err := cs.CallTool(t.Context(), params)
		if err == nil && mcptest.Text(res) != "done" {
			err = fmt.Errorf("answer %q, want done", mcptest.Text(res))
		}
		answered <- err
	}()
	if err := receive(t, answered, "the reader's call"); err != nil {
		t.Fatalf("the reader's call: %v", err)
	}
	for i := range 3 {
		receive(t, progress, fmt.Sprintf("the reader's progress %d", i+1))
	}
	// The server's progress overflows the stalled call's queue.
	for !strings.Contains(logs.String(), `limit="relay queue"`) {
		select {
		case <-logs.written:
		case <-time.After(stallWait):
			t.Fatalf("no warning of the relay queue within %v:\n%s", stallWait, logs)
		}
	}
}
