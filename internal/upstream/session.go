package upstream

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/config"
)

// legacyProtocolVersion is the handshake stdio and SSE servers get by
// default: some older stdio servers exit on an unknown first message such as
// server/discover (go-sdk #1177), and the SSE transport predates the
// stateless era altogether.
const legacyProtocolVersion = "2025-11-25"

// A session is one connection to the server: the MCP session and everything
// that carries it. It is created and closed only by the owner goroutine.
type session struct {
	cs   *mcp.ClientSession
	conn *trackedConn
	proc *process        // nil unless stdio
	http *http.Transport // nil unless http or sse

	tools []*mcp.Tool // listed during the handshake

	lost    chan struct{} // closed when the session ended on its own
	lostErr error         // why; read only after lost is closed
	closed  chan struct{} // closed when we start closing it
	watch   sync.WaitGroup
}

// dialSession opens a transport for the resolved server and initializes an MCP
// session on it. ctx bounds only the handshake.
func (u *Upstream) dialSession(ctx context.Context, srv *config.Server) (_ *session, err error) {
	s := &session{lost: make(chan struct{}), closed: make(chan struct{})}
	var transport mcp.Transport
	if u.opts.Dial != nil {
		transport, err = u.opts.Dial(ctx, *srv)
	} else {
		transport, err = s.transport(srv, u.opts.LookupEnv)
	}
	if err != nil {
		return nil, err
	}
	s.conn = &trackedConn{}
	tracked := &trackingTransport{inner: transport, conn: s.conn, lifetime: u.ctx}

	version := srv.ProtocolVersion
	if version == "" && srv.TransportType() != config.HTTP {
		version = legacyProtocolVersion
	}
	cs, err := u.client.Connect(ctx, tracked, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		err = s.explain(err)
		s.abort(u.opts.StopGrace)
		return nil, err
	}
	s.cs = cs
	s.watch.Add(1)
	go s.watchSession()
	return s, nil
}

// transport makes the go-sdk transport for srv.
func (s *session) transport(srv *config.Server, lookup func(string) (string, bool)) (mcp.Transport, error) {
	switch srv.TransportType() {
	case config.Stdio:
		p, err := startProcess(srv, lookup)
		if err != nil {
			return nil, err
		}
		s.proc = p
		return &mcp.IOTransport{Reader: p.stdout, Writer: p.stdin}, nil
	case config.HTTP, config.SSE:
		s.http = http.DefaultTransport.(*http.Transport).Clone()
		client := &http.Client{Transport: &headerTransport{base: s.http, headers: srv.Headers}}
		if srv.TransportType() == config.SSE {
			return &mcp.SSEClientTransport{Endpoint: srv.URL, HTTPClient: client}, nil
		}
		return &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: client}, nil
	default:
		return nil, fmt.Errorf("unknown transport type %q", srv.Type)
	}
}

// watchSession waits for the session to end, and for a stdio server also for
// its process to exit, whichever comes first.
func (s *session) watchSession() {
	defer s.watch.Done()
	ended := make(chan error, 1)
	go func() { ended <- s.cs.Wait() }()
	var err error
	if s.proc != nil {
		select {
		case err = <-ended:
		case <-s.proc.exited:
			// A grandchild may hold stdout open: end the session ourselves.
			s.conn.close()
			<-ended
		case <-s.closed:
			<-ended
			return
		}
	} else {
		select {
		case err = <-ended:
		case <-s.closed:
			<-ended
			return
		}
	}
	select {
	case <-s.closed:
		return // we closed it: not a loss
	default:
	}
	s.lostErr = s.lossCause(err)
	close(s.lost)
}

// lossCause says why a session ended on its own. For a stdio server the
// process's exit is the best explanation, so wait briefly for it.
func (s *session) lossCause(err error) error {
	if s.proc != nil && s.proc.waitExit(explainWait) {
		s.proc.waitStderr(explainWait)
		return s.withStderr(s.proc.exitError())
	}
	if err == nil {
		return errors.New("server closed the connection")
	}
	return fmt.Errorf("connection lost: %w", err)
}

// explain adds what is known about a stdio process to a handshake error. A
// process that crashed at start has usually exited by now, or is about to:
// give it a moment, so that the error can say how it ended and what it
// printed.
func (s *session) explain(err error) error {
	if s.proc == nil {
		return err
	}
	if s.proc.waitExit(explainWait) {
		s.proc.waitStderr(explainWait)
		err = fmt.Errorf("%w (%v)", err, s.proc.exitError())
	}
	return s.withStderr(err)
}

// explainWait bounds how long a failed handshake waits for a crashing
// process's exit status and last words.
const explainWait = 500 * time.Millisecond

func (s *session) withStderr(err error) error {
	if s.proc == nil {
		return err
	}
	if t := s.proc.stderr.String(); t != "" {
		return fmt.Errorf("%w; stderr: %s", err, t)
	}
	return err
}

// close ends the session and releases everything it holds. grace bounds each
// step of a stdio server's shutdown.
func (s *session) close(grace time.Duration) error {
	close(s.closed)
	// Closing the connection first interrupts in-flight requests, which
	// ClientSession.Close would otherwise wait for.
	s.conn.close()
	s.cs.Close()
	s.watch.Wait()
	return s.release(grace)
}

// abort releases a session whose handshake failed.
func (s *session) abort(grace time.Duration) {
	s.conn.close()
	s.release(grace)
}

func (s *session) release(grace time.Duration) error {
	if s.http != nil {
		s.http.CloseIdleConnections()
	}
	if s.proc != nil {
		return s.proc.stop(grace)
	}
	return nil
}

// isProtocolError reports whether err is a JSON-RPC error from the server.
func isProtocolError(err error) bool {
	var werr *jsonrpc.Error
	return errors.As(err, &werr)
}

// headerTransport adds a server's configured headers to every request. It
// never forwards anything from a downstream client.
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(t.headers) > 0 {
		req = req.Clone(req.Context())
		for k, v := range t.headers {
			req.Header.Set(k, v)
		}
	}
	return t.base.RoundTrip(req)
}

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
