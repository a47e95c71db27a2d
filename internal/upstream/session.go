package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/oauth"
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
	dead     atomic.Bool           // a request or a probe found it dead
	deadErr  atomic.Pointer[error] // what it found
	subs     map[string]bool       // the resources subscribed on it; guarded by Upstream.mu

	probeMu sync.Mutex
	probing chan struct{} // closed when the probe in progress ends; nil if none. Guarded by probeMu.

	lost    chan struct{} // closed when the session ended on its own
	lostErr error         // why; read only after lost is closed
	closed  chan struct{} // closed when we start closing it
	watch   sync.WaitGroup
}

// dialSession opens a transport for the resolved server and initializes an MCP
// session on it. ctx bounds only the handshake.
func (u *Upstream) dialSession(ctx context.Context, srv *config.Server) (_ *session, err error) {
	s := &session{lost: make(chan struct{}), closed: make(chan struct{}), answered: make(chan struct{}), conn: &trackedConn{}, maxBytes: srv.ResponseLimit()}
	var transport mcp.Transport
	if u.opts.Dial != nil {
		transport, err = u.opts.Dial(ctx, *srv)
	} else {
		transport, err = u.transport(s, srv)
	}
	if err != nil {
		return nil, err
	}
	tracked := &trackingTransport{inner: transport, conn: s.conn, lifetime: u.life}

	version := srv.ProtocolVersion
	if version == "" && srv.TransportType() != config.HTTP {
		version = legacyProtocolVersion
	}
	cs, err := u.client.Connect(ctx, tracked, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		err = s.describe(ctx, err)
		u.retire(s)
		return nil, err
	}
	s.cs = cs
	s.touch()
	s.watch.Add(1)
	go s.watchSession()
	return s, nil
}

// transport makes the go-sdk transport of s for srv. HTTP sessions share
// the upstream's connection pool, and log in with its OAuth options.
func (u *Upstream) transport(s *session, srv *config.Server) (mcp.Transport, error) {
	switch srv.TransportType() {
	case config.Stdio:
		p, err := startProcess(srv, u.opts.LookupEnv)
		if err != nil {
			return nil, err
		}
		s.proc = p
		maxLine := int(min(srv.ResponseLimit(), math.MaxInt32))
		u.notes.lines.Store(true)
		s.stdout = newStdoutFilter(p.stdout, &u.notes, u.skipLine)
		return &mcp.IOTransport{Reader: s.stdout, Writer: p.stdin, MaxLineLength: maxLine}, nil
	case config.HTTP, config.SSE:
		s.http = u.httpPool()
		s.endpoint = srv.URL
		auth, err := u.authorizer(srv)
		if err != nil {
			return nil, err
		}
		s.auth = auth
		rt := &roundTripper{base: s.http, headers: srv.Headers, maxBytes: srv.ResponseLimit(), life: u.life, notes: &u.notes, front: &u.front}
		s.client = &http.Client{Transport: rt}
		maxEvent := int(min(srv.ResponseLimit(), math.MaxInt32))
		if srv.TransportType() == config.SSE {
			// The SSE transport has no hook for a login: the round
			// tripper carries the token and answers the 401s.
			rt.auth = auth
			return &mcp.SSEClientTransport{Endpoint: srv.URL, HTTPClient: s.client, MaxEventSize: maxEvent}, nil
		}
		// Two retries of a broken stream, not go-sdk's five: a server that
		// died is then seen within about 5 s rather than 25, and our own
		// schedule, which keeps the tools listed, takes over from there.
		return &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: s.client, MaxEventSize: maxEvent, MaxRetries: streamRetries,
			OAuthHandler: auth}, nil
	default:
		return nil, fmt.Errorf("unknown transport type %q", srv.Type)
	}
}

// authorizer returns the OAuth handler of srv, an http or sse server, or
// nil if it does not log in: the upstream has no OAuth options, or the
// config sets the Authorization header itself.
func (u *Upstream) authorizer(srv *config.Server) (auth.OAuthHandler, error) {
	if u.opts.OAuth == nil || !srv.LogsIn() {
		return nil, nil
	}
	opts := u.opts.OAuth.For(srv)
	if opts.Logger == nil {
		opts.Logger = u.opts.Logger
	}
	h, err := oauth.NewHandler(opts)
	if err != nil {
		return nil, err
	}
	return h, nil
}

// watchSession waits for the session to end, and tells the owner if it ended
// on its own.
func (s *session) watchSession() {
	defer s.watch.Done()
	if s.proc != nil {
		// A grandchild may hold stdout open after the child exits: end the
		// session ourselves when the child does.
		stop := make(chan struct{})
		defer close(stop)
		s.watch.Go(func() {
			select {
			case <-s.proc.exited:
				s.conn.close()
			case <-stop:
			}
		})
	}
	err := s.cs.Wait()
	select {
	case <-s.closed:
		return // we closed it: not a loss
	default:
	}
	s.lostErr = s.lossCause(err)
	close(s.lost)
}

// lossCause says why a session ended on its own, given err, the end of its
// connection: what the request that found it dead met (see abandon); else
// a message that broke the stream (over the size limit, or a line over 64
// KiB that starts like JSON but is not); else, for a stdio server, the
// process's exit, for which it waits briefly unless the session is being
// closed meanwhile; else err. A stream that broke on our side ends the
// process too, by EOF or SIGPIPE: that explains nothing.
func (s *session) lossCause(err error) error {
	if found := s.deadErr.Load(); found != nil {
		return fmt.Errorf("connection lost: %w", *found)
	}
	var syntax *json.SyntaxError
	switch {
	case isFrameTooLarge(err):
		return tooLarge(s.maxBytes)
	case errors.As(err, &syntax):
		return fmt.Errorf("server wrote something that is not JSON-RPC: %w", err)
	case s.proc != nil && s.proc.waitExit(explainWait, s.closed):
		s.proc.waitStderr(explainWait, s.closed)
		return s.withStderr(s.proc.exitError())
	case err == nil:
		return errors.New("server closed the connection")
	}
	return fmt.Errorf("connection lost: %w", err)
}

// describe adds what is known about a stdio process to a handshake error. A
// process that crashed at start has usually exited by now, or is about to:
// give it a moment, so that the error can say how it ended and what it
// printed. A handshake that ctx ended (a timeout, a command, Close) waits
// for nothing: its process is alive, and whoever ended it is waiting.
func (s *session) describe(ctx context.Context, err error) error {
	if s.proc == nil {
		return err
	}
	if s.proc.waitExit(explainWait, ctx.Done()) {
		s.proc.waitStderr(explainWait, ctx.Done())
		err = fmt.Errorf("%w (%v)", err, s.proc.exitError())
	} else if s.stdout != nil {
		err = s.stdout.explain(err)
	}
	return s.withStderr(err)
}

// streamRetries is how many times an HTTP session reconnects a broken SSE
// stream before it is lost.
const streamRetries = 2

// explainWait bounds how long a failed handshake waits for a crashing
// process's exit status and last words.
const explainWait = 500 * time.Millisecond

func (s *session) withStderr(err error) error {
	if s.proc == nil {
		return err
	}
	if t := s.proc.stderr.String(); t != "" {
		return fmt.Errorf("%w"+stderrMark+"%s", err, t)
	}
	return err
}

// close ends the session and releases everything it holds, whether its
// handshake succeeded or not. grace bounds each step of a stdio server's
// shutdown; once kill is closed, the shutdown skips to SIGKILL.
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
		return s.proc.stop(grace, kill)
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

// request sends one request with send, holding serial (if not nil) around
// it, and notes an answer: the session is alive.
func (s *session) request(ctx context.Context, serial chan struct{}, send func(context.Context, *session) error) error {
	err := serially(ctx, serial, func() error { return send(ctx, s) })
	if err == nil || isProtocolError(err) {
		s.touch()
		s.answer.Do(func() { close(s.answered) })
	}
	return err
}

// serially runs f holding serial, a server's size-1 semaphore when its
// requests are serialized (else nil: f runs at once). The slot is held for
// one request, never through a retry's backoff.
func serially(ctx context.Context, serial chan struct{}, f func() error) error {
	if serial != nil {
		release, err := acquire(ctx, serial)
		if err != nil {
			return err
		}
		defer release()
	}
	return f()
}

// probe checks, before its next use, a session that sat idle past
// idleProbe: a legacy session with ping (a 1 s timeout; "method not found"
// counts as alive), a modern HTTP one with server/discover. It reports false,
// after abandoning the session, if the session is dead. One caller probes;
// the others wait for its answer, each within its own deadline: a caller
// that cannot wait goes ahead and lets its request find out.
func (u *Upstream) probe(ctx context.Context, s *session, serial chan struct{}) bool {
	for s.idle() && !s.dead.Load() {
		s.probeMu.Lock()
		if wait := s.probing; wait != nil {
			s.probeMu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return true
			}
		}
		done := make(chan struct{})
		s.probing = done
		s.probeMu.Unlock()
		alive := u.ping(ctx, s, serial)
		s.probeMu.Lock()
		s.probing = nil
		s.probeMu.Unlock()
		close(done)
		return alive
	}
	return !s.dead.Load()
}

// ping sends the probe of an idle session and abandons the session if it
// fails. A probe that gets no answer either way (the caller gave up, or the
// slot of a serialized server stayed taken) lets the request find out.
func (u *Upstream) ping(parent context.Context, s *session, serial chan struct{}) bool {
	ctx, cancel := context.WithTimeout(parent, probeTimeout)
	defer cancel()
	var err error
	switch {
	case !s.modern():
		sent := false
		err = serially(ctx, serial, func() error {
			sent = true
			return s.cs.Ping(ctx, nil)
		})
		var rpcErr *jsonrpc.Error
		switch {
		case !sent || parent.Err() != nil:
			return true
		case errors.As(err, &rpcErr) && rpcErr.Code == jsonrpc.CodeMethodNotFound:
			err = nil // a server without ping is alive
		}
	case s.client != nil:
		err = s.discover(ctx, u.prober())
		if parent.Err() != nil {
			return true
		}
	}
	if err != nil {
		u.opts.Logger.Info("idle session failed its probe; reconnecting", "error", u.redact(err.Error()))
		u.abandon(s, fmt.Errorf("probe of an idle session: %w", err))
		return false
	}
	s.touch()
	return true
}

// discover probes a modern HTTP server with server/discover: a fresh
// client connection, which in the stateless era is that one request.
func (s *session) discover(ctx context.Context, c *mcp.Client) error {
	t := &mcp.StreamableClientTransport{Endpoint: s.endpoint, HTTPClient: s.client, DisableStandaloneSSE: true, OAuthHandler: s.auth}
	cs, err := c.Connect(ctx, t,
		&mcp.ClientSessionOptions{ProtocolVersion: modernProtocolVersion})
	if err != nil {
		return err
	}
	return cs.Close()
}

// isProtocolError reports whether err is a JSON-RPC error from the server.
func isProtocolError(err error) bool {
	var werr *jsonrpc.Error
	return errors.As(err, &werr)
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
