package upstream

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A session is one connection to the server: the MCP session and everything
// that carries it. It is created and closed only by the owner goroutine.
type session struct {
	cs   *mcp.ClientSession
	conn *trackedConn
	proc *process // nil unless stdio
	// stdout is what reads a stdio server's stdout; nil unless stdio.
	stdout *stdoutFilter
	http   *http.Transport   // the upstream's pool; nil unless http or sse
	auth   auth.OAuthHandler // nil unless the server logs in

	tools    []*mcp.Tool   // listed during the handshake
	listed   bool          // the tools were listed during the handshake
	toolsTTL time.Duration // their cache hint
	toolsGen uint64        // the tools' list_changed count when they were listed
	endpoint string        // http: the URL, for probes
	client   *http.Client
	maxBytes int64 // the response limit it was dialed with

	lastUsed atomic.Int64  // unix nanoseconds of the last answer
	answered chan struct{} // closed by the first answer to a call
	answer   sync.Once
	used     atomic.Bool           // it became the upstream's session: requests ran on it
	dead     atomic.Bool           // a request or a probe found it dead
	deadErr  atomic.Pointer[error] // what it found
	subs     map[string]bool       // the resources subscribed on it; guarded by the list set's lock

	probeMu sync.Mutex
	probing chan struct{} // closed when the probe in progress ends; nil if none. Guarded by probeMu.

	lost    chan struct{} // closed when the session ended on its own
	lostErr error         // why; read only after lost is closed
	closed  chan struct{} // closed when we start closing it
	watch   sync.WaitGroup
}

// close ends the session and releases everything it holds, whether its
// handshake succeeded or not. grace bounds each step of a stdio server's
// shutdown; once kill is closed, the shutdown skips to SIGKILL. A process
// whose session was never used (its handshake, or its first tools/list,
// did not end well, or a command superseded it) has nothing to end in good
// order: it gets no grace to exit on its own before it is interrupted (a
// server that hangs at start must not hold up a one-shot command's exit).
func (s *session) close(grace time.Duration, kill <-chan struct{}) error {
	close(s.closed)
	// Closing the connection first interrupts in-flight requests, which
	// ClientSession.Close would otherwise wait for.
	s.conn.close()
	if s.cs != nil {
		s.cs.Close()
		s.watch.Wait()
	}
	if s.proc != nil {
		stdinGrace := grace
		if !s.used.Load() {
			stdinGrace = 0
		}
		return s.proc.stop(stdinGrace, grace, kill)
	}
	return nil
}

// touch records that the server just answered.
func (s *session) touch() { s.lastUsed.Store(time.Now().UnixNano()) }

// idle reports whether the session has sat unused long enough to be probed.
func (s *session) idle() bool {
	return time.Since(time.Unix(0, s.lastUsed.Load())) > idleProbe
}

// modern reports whether the session speaks the stateless protocol era
// (2026-07-28 and later), which has no sessions to go stale and no ping.
func (s *session) modern() bool {
	res := s.cs.InitializeResult()
	return res != nil && res.ProtocolVersion >= modernProtocolVersion
}

// capabilities returns the server's capabilities, never nil.
func (s *session) capabilities() *mcp.ServerCapabilities {
	if res := s.cs.InitializeResult(); res != nil && res.Capabilities != nil {
		return res.Capabilities
	}
	return &mcp.ServerCapabilities{}
}

// modernProtocolVersion is the first stateless revision (SEP-2575).
const modernProtocolVersion = "2026-07-28"

// trackingTransport remembers the connection it makes, so that the session
// can be torn down without waiting for in-flight requests. It also gives the
// connection a context of its own: some transports (SSE) tie their stream to
// the context of Connect, which must bound only the handshake.
type trackingTransport struct {
	inner    mcp.Transport
	conn     *trackedConn
	lifetime context.Context // the upstream's
}

func (t *trackingTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	connCtx, cancel := context.WithCancel(t.lifetime)
	stop := context.AfterFunc(ctx, cancel)
	c, err := t.inner.Connect(connCtx)
	if !stop() && err == nil {
		err = ctx.Err() // the handshake ended while connecting
		c.Close()
	}
	if err != nil {
		cancel()
		return nil, err
	}
	t.conn.set(c, cancel)
	return c, nil
}

// trackedConn holds the transport connection of a session.
type trackedConn struct {
	mu     sync.Mutex
	conn   mcp.Connection
	cancel context.CancelFunc // ends the connection's context
	shut   bool
}

func (c *trackedConn) set(conn mcp.Connection, cancel context.CancelFunc) {
	c.mu.Lock()
	c.conn, c.cancel = conn, cancel
	shut := c.shut
	c.mu.Unlock()
	if shut {
		conn.Close()
		cancel()
	}
}

func (c *trackedConn) close() {
	c.mu.Lock()
	conn, cancel := c.conn, c.cancel
	c.shut = true
	c.mu.Unlock()
	if conn != nil {
		conn.Close()
		cancel()
	}
}
