package upstream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	neturl "net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/config"
)

// DefaultStopGrace is how long each step of a stdio server's shutdown waits:
// after closing stdin, and after SIGTERM.
const DefaultStopGrace = 2 * time.Second

// Options configure an [Upstream]. A nil *Options means all defaults.
type Options struct {
	// Client identifies Switchboard to the server. Default: name
	// "switchboard", version "dev".
	Client *mcp.Implementation
	// Logger receives diagnostics. Default: discard.
	Logger *slog.Logger
	// LookupEnv resolves ${VAR} in the config and the minimal environment of
	// stdio children. Default: os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// Dial, if set, replaces the transport the config asks for. Tests use it to
	// connect to in-memory servers.
	Dial func(ctx context.Context, srv config.Server) (mcp.Transport, error)
	// OnEvent, if set, is called for every transition, in order, never
	// concurrently with itself. It must not block or call back into the
	// Upstream.
	OnEvent func(Event)
	// StopGrace bounds each step of a stdio server's shutdown. Default
	// DefaultStopGrace.
	StopGrace time.Duration
}

// An Upstream is the connection to one MCP server. Its methods are safe for
// concurrent use.
type Upstream struct {
	// Set by New, read-only after.
	name    string
	cfg     config.Server // unresolved
	opts    Options
	client  *mcp.Client
	secrets *config.Secrets

	// The lifetime of the owner goroutine: detached from every caller.
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{} // closed when the owner goroutine has returned

	startOnce sync.Once
	closeOnce sync.Once

	// version counts changes to the observable state; it moves before
	// waiters wake, so that whoever they tell sees the change.
	version atomic.Uint64

	// deliverMu serializes event delivery. Lock order: deliverMu, then mu.
	deliverMu sync.Mutex

	// mu guards the following.
	mu       sync.Mutex
	started  bool
	state    State
	changed  chan struct{} // closed and replaced on every transition
	since    time.Time
	lastErr  error
	sess     *session
	tools    []*mcp.Tool // replaced, never mutated
	init     *mcp.InitializeResult
	pending  []Event // transitions not yet delivered
	closeErr error
	closeBy  time.Time // when Close must be done; zero means no hurry
	url      string    // the last resolved URL, which errors must not show
}

// New returns an Upstream for srv. It does no I/O: call [Upstream.Start] or
// [Upstream.Connect].
func New(srv config.Server, opts *Options) *Upstream {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Client == nil {
		o.Client = &mcp.Implementation{Name: "switchboard", Version: "dev"}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.LookupEnv == nil {
		o.LookupEnv = os.LookupEnv
	}
	if o.StopGrace <= 0 {
		o.StopGrace = DefaultStopGrace
	}
	ctx, cancel := context.WithCancel(context.Background())
	u := &Upstream{
		name:    srv.Name,
		cfg:     srv.Clone(),
		opts:    o,
		secrets: &config.Secrets{},
		ctx:     ctx,
		cancel:  cancel,
		done:    make(chan struct{}),
		changed: make(chan struct{}),
		since:   time.Now(),
	}
	u.client = mcp.NewClient(o.Client, &mcp.ClientOptions{
		Logger:       o.Logger,
		Capabilities: &mcp.ClientCapabilities{},
	})
	return u
}

// Name returns the configured server name.
func (u *Upstream) Name() string { return u.name }

// Config returns the unresolved config the upstream was created with.
func (u *Upstream) Config() config.Server { return u.cfg.Clone() }

// Start launches the owner goroutine, which connects. It returns at once and
// is idempotent; after Close it does nothing.
func (u *Upstream) Start() {
	u.startOnce.Do(func() {
		u.mu.Lock()
		defer u.mu.Unlock()
		if u.state == Closed {
			return
		}
		u.started = true
		go u.run()
	})
}

// Connect starts the upstream if needed and waits until its first connection
// attempt settles or ctx is done. It returns the attempt's error, if any. The
// attempt itself is not bound to ctx: it goes on in the background.
func (u *Upstream) Connect(ctx context.Context) error {
	u.Start()
	for {
		u.mu.Lock()
		state, changed, err := u.state, u.changed, u.lastErr
		u.mu.Unlock()
		switch {
		case state == Connected:
			return nil
		case state == Closed:
			return u.errorf("connect", ErrClosed)
		case state.Settled():
			return err
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return u.errorf("connect", ctx.Err())
		}
	}
}

// run is the owner goroutine: the only one that connects, closes sessions,
// and moves the state away from Closed's predecessors.
func (u *Upstream) run() {
	defer close(u.done)
	s, err := u.connect()
	if err != nil {
		u.transition(Failed, err)
		<-u.ctx.Done()
		return
	}
	if !u.attach(s) {
		s.close(u.closeGrace()) // closed while connecting: never resurrect
		return
	}
	select {
	case <-s.lost:
		u.lose(s, u.wrap("session", s.lostErr))
		s.close(u.opts.StopGrace)
		<-u.ctx.Done()
	case <-u.ctx.Done():
		u.detach(s)
		if err := s.close(u.closeGrace()); err != nil {
			u.mu.Lock()
			u.closeErr = &Error{Server: u.name, Op: "close", Err: err}
			u.mu.Unlock()
		}
	}
}

// connect makes one connection attempt: resolve the config, open a session,
// list the tools.
func (u *Upstream) connect() (*session, error) {
	srv, secrets, err := u.cfg.Resolve(u.opts.LookupEnv)
	u.secrets.Merge(secrets)
	if err != nil {
		return nil, u.wrap("connect", err)
	}
	u.mu.Lock()
	u.url = srv.URL
	u.mu.Unlock()
	ctx := u.ctx
	if d := srv.TimeoutDuration(); d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	s, err := u.dialSession(ctx, &srv)
	if err != nil {
		return nil, u.wrap("connect", u.timeoutCause(ctx, err, srv.TimeoutDuration()))
	}
	tools, err := listTools(ctx, s.cs)
	if err != nil {
		s.close(u.opts.StopGrace)
		return nil, u.wrap("list tools", u.timeoutCause(ctx, err, srv.TimeoutDuration()))
	}
	s.tools = tools
	return s, nil
}

// listTools fetches every page of the server's tools. A server that does not
// offer tools has none.
func listTools(ctx context.Context, cs *mcp.ClientSession) ([]*mcp.Tool, error) {
	if res := cs.InitializeResult(); res != nil && res.Capabilities != nil && res.Capabilities.Tools == nil {
		return nil, nil
	}
	var tools []*mcp.Tool
	seen := make(map[string]bool)
	params := &mcp.ListToolsParams{}
	for {
		res, err := cs.ListTools(ctx, params)
		if err != nil {
			return nil, err
		}
		tools = append(tools, res.Tools...)
		if res.NextCursor == "" {
			return tools, nil
		}
		if seen[res.NextCursor] {
			// The cursor is opaque and may be secret: never show it.
			return nil, errors.New("server returned a repeated cursor")
		}
		seen[res.NextCursor] = true
		params = &mcp.ListToolsParams{Cursor: res.NextCursor}
	}
}

// attach makes s the current session. It reports false if the upstream was
// closed meanwhile.
func (u *Upstream) attach(s *session) bool {
	u.mu.Lock()
	if u.state == Closed {
		u.mu.Unlock()
		return false
	}
	u.sess = s
	u.tools = s.tools
	u.init = s.cs.InitializeResult()
	u.transitionLocked(Connected, nil)
	u.mu.Unlock()
	u.deliver()
	return true
}

// detach forgets s, so that no new request uses it.
func (u *Upstream) detach(s *session) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.sess == s {
		u.sess = nil
		u.tools = nil
	}
}

// lose forgets s, which ended on its own, and fails with err: in one step, so
// that no request sees a connected upstream without a session.
func (u *Upstream) lose(s *session, err error) {
	u.mu.Lock()
	if u.sess == s {
		u.sess = nil
		u.tools = nil
	}
	u.transitionLocked(Failed, err)
	u.mu.Unlock()
	u.deliver()
}

// transition moves to state to, with cause err, and delivers the event.
func (u *Upstream) transition(to State, err error) {
	u.mu.Lock()
	u.transitionLocked(to, err)
	u.mu.Unlock()
	u.deliver()
}

// transitionLocked records a transition. It ignores repeats of the current
// state without a new cause, and never leaves Closed.
func (u *Upstream) transitionLocked(to State, err error) {
	if u.state == Closed || (u.state == to && err == nil) {
		return
	}
	from := u.state
	u.state = to
	u.lastErr = err
	u.since = time.Now()
	u.version.Add(1)
	close(u.changed)
	u.changed = make(chan struct{})
	u.pending = append(u.pending, Event{Server: u.name, From: from, To: to, At: u.since, Err: err})
}

// deliver hands pending events to OnEvent, in order.
func (u *Upstream) deliver() {
	u.deliverMu.Lock()
	defer u.deliverMu.Unlock()
	for {
		u.mu.Lock()
		if len(u.pending) == 0 {
			u.mu.Unlock()
			return
		}
		ev := u.pending[0]
		u.pending = u.pending[1:]
		u.mu.Unlock()
		if u.opts.OnEvent != nil {
			u.opts.OnEvent(ev)
		}
	}
}

// Close closes the session, ends a stdio server's process group and stops
// the owner goroutine. It is idempotent and safe for concurrent use; every
// call waits for the teardown and returns its result.
func (u *Upstream) Close() error { return u.CloseBy(time.Time{}) }

// CloseBy is [Upstream.Close] with a deadline: the steps of a stdio server's
// shutdown are shortened so that the teardown ends close to it. A zero
// deadline means each step gets the full StopGrace. Only the first call's
// deadline counts.
func (u *Upstream) CloseBy(deadline time.Time) error {
	u.closeOnce.Do(func() {
		u.mu.Lock()
		started := u.started
		u.closeBy = deadline
		u.transitionLocked(Closed, nil)
		u.mu.Unlock()
		u.deliver()
		u.cancel()
		if started {
			<-u.done
		} else {
			close(u.done)
		}
	})
	<-u.done
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.closeErr
}

// closeGrace is how long each step of the final shutdown may take.
func (u *Upstream) closeGrace() time.Duration {
	u.mu.Lock()
	deadline := u.closeBy
	u.mu.Unlock()
	if deadline.IsZero() {
		return u.opts.StopGrace
	}
	// Three steps may each wait: after stdin close, SIGTERM and SIGKILL.
	return max(0, min(u.opts.StopGrace, time.Until(deadline)/3))
}

// Snapshot is a copy of an upstream's observable state.
type Snapshot struct {
	Name  string
	State State
	Since time.Time
	// Err is the last failure, redacted; nil while connected.
	Err error
	// Tools is the server's raw, unfiltered tool list, shared: treat it as
	// read-only.
	Tools []*mcp.Tool
	// Instructions are the server's initialize instructions.
	Instructions string
	// ServerInfo is the implementation the server reported, if any.
	ServerInfo *mcp.Implementation
	// ProtocolVersion is the negotiated protocol version.
	ProtocolVersion string
}

// Snapshot returns the upstream's current state.
func (u *Upstream) Snapshot() Snapshot {
	u.mu.Lock()
	defer u.mu.Unlock()
	snap := Snapshot{Name: u.name, State: u.state, Since: u.since, Err: u.lastErr, Tools: u.tools}
	if u.init != nil {
		snap.Instructions = u.init.Instructions
		snap.ProtocolVersion = u.init.ProtocolVersion
		if u.init.ServerInfo != nil {
			info := *u.init.ServerInfo
			snap.ServerInfo = &info
		}
	}
	return snap
}

// Version returns a number that grows whenever the state or the tools
// change, so that callers can cache what they derive from snapshots.
func (u *Upstream) Version() uint64 { return u.version.Load() }

// State returns the current state.
func (u *Upstream) State() State {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.state
}

// current returns the session requests should use, or why there is none.
func (u *Upstream) current() (*session, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	switch {
	case u.sess != nil:
		return u.sess, nil
	case u.state == Closed:
		return nil, ErrClosed
	case u.lastErr != nil:
		return nil, fmt.Errorf("%w (%v: %w)", ErrNotConnected, u.state, errors.Unwrap(u.lastErr))
	default:
		return nil, fmt.Errorf("%w (%v)", ErrNotConnected, u.state)
	}
}

// CallTool calls the tool named name, as the server knows it. Nil arguments
// are sent as {}. The call is bounded by ctx and by the server's timeout.
func (u *Upstream) CallTool(ctx context.Context, name string, args map[string]any) (*mcp.CallToolResult, error) {
	s, err := u.current()
	if err != nil {
		return nil, u.errorf(callOp(name), err)
	}
	if args == nil {
		args = map[string]any{} // JavaScript servers reject "arguments": null
	}
	callCtx := ctx
	timeout := u.cfg.TimeoutDuration()
	if timeout > 0 {
		var cancel context.CancelFunc
		callCtx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	res, err := s.cs.CallTool(callCtx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		if ctx.Err() != nil {
			return nil, u.errorf(callOp(name), ctx.Err())
		}
		return nil, u.wrap(callOp(name), u.timeoutCause(callCtx, err, timeout))
	}
	return res, nil
}

// callOp names a call in errors; only error paths format it.
func callOp(name string) string { return fmt.Sprintf("call tool %q", name) }

// timeoutCause turns an error caused by our own deadline into ErrTimeout.
func (u *Upstream) timeoutCause(ctx context.Context, err error, d time.Duration) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) && !isProtocolError(err) {
		return fmt.Errorf("%w after %v", ErrTimeout, d)
	}
	return err
}

// errorf returns an *Error for op with a cause that carries no secret.
func (u *Upstream) errorf(op string, err error) error {
	return &Error{Server: u.name, Op: op, Err: err}
}

// wrap returns an *Error for op, redacting err's message: substituted values
// and the server's URL beyond its host and path never appear in it.
func (u *Upstream) wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) && e.Server == u.name {
		return err
	}
	return &Error{Server: u.name, Op: op, Err: &redacted{err: err, msg: u.redact(err.Error())}}
}

// redact removes secrets from a message.
func (u *Upstream) redact(msg string) string {
	u.mu.Lock()
	url := u.url
	u.mu.Unlock()
	if url != "" {
		display := config.RedactURL(url)
		msg = strings.ReplaceAll(msg, url, display)
		// net/http quotes URLs with the password masked as "***", and
		// url.URL.Redacted as "xxxxx", but both keep the rest.
		if parsed, err := neturl.Parse(url); err == nil && parsed.User != nil {
			masked := parsed.User.Username() + ":***@"
			msg = strings.ReplaceAll(msg, strings.Replace(parsed.String(), parsed.User.String()+"@", masked, 1), display)
			msg = strings.ReplaceAll(msg, parsed.Redacted(), display)
		}
	}
	return u.secrets.Redact(msg)
}

// redacted is an error with a scrubbed message that still unwraps to its
// cause, so that errors.Is keeps working.
type redacted struct {
	err error
	msg string
}

func (r *redacted) Error() string { return r.msg }
func (r *redacted) Unwrap() error { return r.err }
