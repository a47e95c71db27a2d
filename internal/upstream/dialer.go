package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	neturl "net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/oauth"
	"github.com/switchboard-mcp/switchboard/internal/ratelog"
)

// A dialer opens and closes the sessions of one server: it resolves the
// config, starts a stdio server's process or reaches an http or sse one
// through the upstream's pool of connections, logs in, and initializes the
// go-sdk session with the upstream's client. It also checks whether a
// server that is down is back. It closes every session in the background,
// and its lock guards only the pool, made on first use: no I/O runs under
// it.
type dialer struct {
	opts     dialOptions
	red      *redactor
	settings *settingsRef
	client   *mcp.Client  // the client of every session
	notes    *noteCount   // what the server says during requests, counted
	noise    *noiseLog    // logs what stdout carries that is not JSON-RPC
	logs     *ratelog.Log // limits the server's log messages (handlers.serverLog)
	front    frontWatch   // see frontWatch

	// closers joins every session being closed. Only the owner goroutine
	// adds to it, and it waits for it before it returns.
	closers sync.WaitGroup
	// kill is closed when Close's deadline nears: every stop in progress
	// skips to SIGKILL, and life, the context of every connection, ends,
	// and with it any I/O of a close (a DELETE that hangs, say).
	kill     chan struct{}
	killOnce sync.Once
	life     context.Context
	endLife  context.CancelFunc

	poolMu sync.Mutex
	pool   *http.Transport // HTTP connections, shared by the sessions; guarded by poolMu
}

// dialOptions are the upstream's Options that concern its dialer.
type dialOptions struct {
	dial          func(ctx context.Context, srv config.Server) (mcp.Transport, error) // Options.Dial
	lookupEnv     func(string) (string, bool)
	oauth         *oauth.Options
	log           *slog.Logger
	stopGrace     time.Duration
	check         Check  // Options.Check
	onSkippedLine func() // Options.OnSkippedLine
	sharedNoise   bool   // the log of skipped lines is another upstream's, which stops it
}

func newDialer(opts dialOptions, red *redactor, settings *settingsRef, client *mcp.Client, notes *noteCount, noise *noiseLog, logs *ratelog.Log) *dialer {
	d := &dialer{opts: opts, red: red, settings: settings, client: client, notes: notes, noise: noise, logs: logs, kill: make(chan struct{})}
	d.life, d.endLife = context.WithCancel(context.Background())
	return d
}

// resolve substitutes ${VAR} in cfg, remembering every value substituted
// and the URL, which errors must not show.
func (d *dialer) resolve(cfg config.Server) (config.Server, error) {
	srv, secrets, err := cfg.Resolve(d.opts.lookupEnv)
	d.red.secrets.Merge(secrets)
	if err != nil {
		return srv, d.red.wrap("connect", err)
	}
	d.red.setURL(srv.URL)
	return srv, nil
}

// dial opens a session on srv, resolved, within ctx.
func (d *dialer) dial(ctx context.Context, srv config.Server) (*session, error) {
	s, err := d.dialSession(ctx, &srv)
	if err != nil {
		return nil, d.red.wrap("connect", err)
	}
	return s, nil
}

// legacyProtocolVersion is the handshake stdio and SSE servers get by
// default: some older stdio servers exit on an unknown first message such as
// server/discover (go-sdk #1177), and the SSE transport predates the
// stateless era altogether.
const legacyProtocolVersion = "2025-11-25"

// dialSession opens a transport for srv, resolved, and initializes an MCP
// session on it. ctx bounds only the handshake. Its errors are explained
// (see explain and describe).
func (d *dialer) dialSession(ctx context.Context, srv *config.Server) (_ *session, err error) {
	s := &session{lost: make(chan struct{}), closed: make(chan struct{}), answered: make(chan struct{}), conn: &trackedConn{}, maxBytes: srv.ResponseLimit()}
	var transport mcp.Transport
	if d.opts.dial != nil {
		transport, err = d.opts.dial(ctx, *srv)
	} else {
		transport, err = d.transport(s, srv)
	}
	if err != nil {
		return nil, explain(ctx, err, srv.TimeoutDuration(), srv.ResponseLimit())
	}
	tracked := &trackingTransport{inner: transport, conn: s.conn, lifetime: d.life}

	version := srv.ProtocolVersion
	if version == "" && srv.TransportType() != config.HTTP {
		version = legacyProtocolVersion
	}
	var step handshakeStep
	cs, err := d.client.Connect(step.within(ctx), tracked, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		err = describe(ctx, s, step.named(explain(ctx, err, srv.TimeoutDuration(), srv.ResponseLimit())))
		d.retire(s)
		return nil, err
	}
	s.cs = cs
	s.touch()
	s.watch.Add(1)
	go d.watch(s)
	return s, nil
}

// transport makes the go-sdk transport of s for srv. HTTP sessions share
// the upstream's connection pool, and log in with its OAuth options.
func (d *dialer) transport(s *session, srv *config.Server) (mcp.Transport, error) {
	switch srv.TransportType() {
	case config.Stdio:
		// The chain names the entry as configured, unresolved, so that it
		// shows no secret. The settings' entry is this attempt's, or a
		// newer one that supersedes the attempt if it changes the process.
		entry := d.settings.Load().cfg
		p, err := startProcess(srv, childEnv(srv, childChain(&entry, d.opts.lookupEnv), d.opts.lookupEnv), d.red.secrets)
		if err != nil {
			return nil, err
		}
		s.proc = p
		maxLine := int(min(srv.ResponseLimit(), math.MaxInt32))
		d.notes.lines.Store(true)
		s.stdout = newStdoutFilter(p.stdout, d.notes, d.skipLine)
		return &mcp.IOTransport{Reader: s.stdout, Writer: p.stdin, MaxLineLength: maxLine}, nil
	case config.HTTP, config.SSE:
		s.http = d.httpPool()
		s.endpoint = srv.URL
		auth, err := d.authorizer(srv)
		if err != nil {
			return nil, err
		}
		s.auth = auth
		home, err := neturl.Parse(srv.URL)
		if err != nil {
			return nil, err
		}
		rt := &roundTripper{base: s.http, home: originOf(home), headers: srv.Headers, maxBytes: srv.ResponseLimit(), life: d.life, notes: d.notes, front: &d.front}
		s.client = &http.Client{Transport: rt, CheckRedirect: checkRedirect(rt.home)}
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
func (d *dialer) authorizer(srv *config.Server) (auth.OAuthHandler, error) {
	if d.opts.oauth == nil || !srv.LogsIn() {
		return nil, nil
	}
	opts := d.opts.oauth.For(srv)
	if opts.Logger == nil {
		opts.Logger = d.opts.log
	}
	h, err := oauth.NewHandler(opts)
	if err != nil {
		return nil, err
	}
	return h, nil
}

// watch waits for s to end, and tells the owner if it ended on its own.
func (d *dialer) watch(s *session) {
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
	s.lostErr = lossCause(s, err)
	close(s.lost)
}

// lossCause says why s ended on its own, given err, the end of its
// connection: what the request that found it dead met (see
// requester.abandon); else a message that broke the stream (over the size
// limit, or a line over 64 KiB that starts like JSON but is not); else, for
// a stdio server, the process's exit, for which it waits briefly unless the
// session is being closed meanwhile; else err. A stream that broke on our
// side ends the process too, by EOF or SIGPIPE: that explains nothing.
func lossCause(s *session, err error) error {
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
		return withStderr(s, s.proc.exitError())
	case err == nil:
		return errors.New("server closed the connection")
	}
	return fmt.Errorf("connection lost: %w", err)
}

// A handshakeStep is the method of the last request that a handshake sent,
// as recordStep, the client's sending middleware, sees it: go-sdk returns
// a handshake that timed out with its context's error alone, which does
// not say whether the answer that did not come was to server/discover or
// to initialize.
type handshakeStep struct{ method atomic.Pointer[string] }

type handshakeStepKey struct{}

// within returns ctx, for a handshake whose steps h records.
func (h *handshakeStep) within(ctx context.Context) context.Context {
	return context.WithValue(ctx, handshakeStepKey{}, h)
}

// named returns err, the error of the handshake, with the step it timed
// out in ahead of it ("initialize: timed out after 30s").
func (h *handshakeStep) named(err error) error {
	if m := h.method.Load(); m != nil && errors.Is(err, ErrTimeout) {
		return fmt.Errorf("%s: %w", *m, err)
	}
	return err
}

// recordStep is the sending middleware of the upstream's client that
// records, in the handshakeStep of the request's context if it has one,
// the method of each request that a handshake sends while it has time:
// go-sdk goes on to initialize after a server/discover that timed out.
func recordStep(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if h, ok := ctx.Value(handshakeStepKey{}).(*handshakeStep); ok && ctx.Err() == nil && !strings.HasPrefix(method, "notifications/") {
			h.method.Store(&method)
		}
		return next(ctx, method, req)
	}
}

// describe adds what is known about a stdio process to a handshake error. A
// process that crashed at start has usually exited by now, or is about to:
// give it a moment, so that the error can say how it ended and what it
// printed. A handshake that ctx ended (a timeout, a command, Close) waits
// for nothing: its process is alive, and whoever ended it is waiting. A
// Switchboard that refused to run inside the gateway fails with
// ErrRecursion, which says more than the handshake's end.
func describe(ctx context.Context, s *session, err error) error {
	if s.proc == nil {
		return err
	}
	// A process that outlived ctx ends because the handshake did: how it
	// ended then says nothing of why the handshake failed.
	if ctx.Err() == nil && s.proc.waitExit(explainWait, ctx.Done()) {
		s.proc.waitStderr(explainWait, ctx.Done())
		if s.proc.refused() {
			err = ErrRecursion
		}
		err = fmt.Errorf("%w (%v)", err, s.proc.exitError())
	} else if s.stdout != nil {
		err = s.stdout.withHint(err)
	}
	return withStderr(s, err)
}

// streamRetries is how many times an HTTP session reconnects a broken SSE
// stream before it is lost.
const streamRetries = 2

// explainWait bounds how long a failed handshake waits for a crashing
// process's exit status and last words.
const explainWait = 500 * time.Millisecond

// withStderr adds to err the lines kept of the stderr of s, a stdio
// server's session (see tail).
func withStderr(s *session, err error) error {
	if s.proc == nil {
		return err
	}
	if t := s.proc.stderr.String(); t != "" {
		return fmt.Errorf("%w"+stderrMark+"%s", err, t)
	}
	return err
}

// retire closes s in the background, so that a slow DELETE or a slow
// process never delays what comes next, and returns the close's result.
// A process that had to be killed is logged. Close waits for every retired
// session. Only the owner goroutine calls it.
func (d *dialer) retire(s *session) <-chan error { return d.retireAs(s, false) }

// retireReported is retire for a session whose close's result the caller
// reports (Close's current session): a kill is not logged too.
func (d *dialer) retireReported(s *session) <-chan error { return d.retireAs(s, true) }

func (d *dialer) retireAs(s *session, reported bool) <-chan error {
	errc := make(chan error, 1)
	d.closers.Go(func() {
		err := s.close(d.opts.stopGrace, d.kill)
		if errors.Is(err, ErrKilled) && !reported {
			d.opts.log.Warn("server process killed", "error", err)
		}
		errc <- err
	})
	return errc
}

// killNow makes every stop in progress skip to SIGKILL, and ends every
// connection's I/O.
func (d *dialer) killNow() {
	d.killOnce.Do(func() {
		close(d.kill)
		d.endLife()
	})
}

// httpPool returns the pool of HTTP connections, shared by the sessions,
// made on first use. It keeps as many idle connections as the server may
// have calls in flight: the default two would have a steady load dial a
// new connection for most calls, and leave the old ones in TIME_WAIT.
func (d *dialer) httpPool() *http.Transport {
	limit := d.settings.Load().cfg.InFlightLimit()
	d.poolMu.Lock()
	defer d.poolMu.Unlock()
	if d.pool == nil {
		d.pool = http.DefaultTransport.(*http.Transport).Clone()
		d.pool.MaxIdleConnsPerHost = limit
		d.pool.MaxIdleConns = max(d.pool.MaxIdleConns, limit)
	}
	return d.pool
}

// closeIdle closes the pool's idle connections, if it has a pool.
func (d *dialer) closeIdle() {
	d.poolMu.Lock()
	pool := d.pool
	d.poolMu.Unlock()
	if pool != nil {
		pool.CloseIdleConnections()
	}
}

// check returns the check of whether the server is back: Options.Check,
// else, for an http or sse server that the upstream reaches itself, a TCP
// connect or a plain HTTP request (see reach); nil for a stdio server,
// whose attempt is the check.
func (d *dialer) check() Check {
	if d.opts.check != nil {
		return d.opts.check
	}
	if d.opts.dial != nil || d.settings.Load().cfg.TransportType() == config.Stdio {
		return nil
	}
	return func(ctx context.Context) error {
		return reach(ctx, d.red.lastURL(), d.httpPool(), d.front.down.Load())
	}
}

// loginStamp identifies the login stored for the server now, as
// oauth.Store.Stamp does ("" if none, or if the upstream does not log in).
func (d *dialer) loginStamp() string {
	if d.opts.oauth == nil || d.opts.oauth.Store == nil {
		return ""
	}
	return d.opts.oauth.Store.Stamp(oauth.Key(d.red.name, d.red.lastURL()))
}

// skipLine counts and logs line, which the server wrote to stdout and which
// is not JSON-RPC (see stdoutFilter).
func (d *dialer) skipLine(line []byte) {
	if d.opts.onSkippedLine != nil {
		d.opts.onSkippedLine()
	}
	d.noise.noted(line, func(line []byte) string { return showLine(d.red.redact, line) })
}

// stopNoise stops the log of skipped lines and the limit on log messages,
// unless they are another upstream's (Options.LogSkippedWith).
func (d *dialer) stopNoise() {
	if !d.opts.sharedNoise {
		d.noise.stop()
		d.logs.Stop()
	}
}
