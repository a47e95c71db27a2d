package upstream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	neturl "net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
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
	// Rand, if set, replaces the source of jitter: a float in [0, 1).
	Rand func() float64
}

// An Upstream is the connection to one MCP server. Its methods are safe for
// concurrent use.
type Upstream struct {
	// Set by New, read-only after.
	name    string
	cfg     config.Server // unresolved
	opts    Options
	client  *mcp.Client
	pool    *http.Transport // HTTP connections, shared by its sessions
	secrets *config.Secrets
	slots   chan struct{} // one per call in flight; see config.Server.MaxInFlight
	serial  chan struct{} // size 1 when requests are serialized, else nil

	// The lifetime of the owner goroutine: detached from every caller.
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{} // closed when the owner goroutine has returned

	// Signals to the owner goroutine; buffered, sends never block.
	nudge   chan struct{} // a request waits for a connection: attempt now
	manual  chan struct{} // a manual reconnect: reset the breaker, attempt now
	refresh chan struct{} // a list changed: reload it

	// listGen counts the list_changed notifications of each list.
	listGen [numLists]atomic.Uint64

	// Owned by the owner goroutine.
	fetched [numLists]atomic.Uint64 // the listGen each list was last fetched at; written by the owner
	expires [numLists]time.Time     // when each list's cache hint runs out; zero: never

	startOnce sync.Once
	closeOnce sync.Once

	proberOnce sync.Once
	prober     *mcp.Client // a bare client, whose handshake is the modern probe

	// version counts changes to the observable state; it moves before
	// waiters wake, so that whoever they tell sees the change.
	version atomic.Uint64

	// deliverMu serializes event delivery. Lock order: deliverMu, then mu.
	deliverMu sync.Mutex

	// mu guards the following.
	mu         sync.Mutex
	started    bool
	state      State
	changed    chan struct{} // closed and replaced on every change
	since      time.Time
	lastErr    error
	sess       *session
	tools      []*mcp.Tool // replaced, never mutated; kept while reconnecting
	toolIndex  map[string]*toolInfo
	prompts    []*mcp.Prompt           // replaced, never mutated
	resources  []*mcp.Resource         // replaced, never mutated
	templates  []*mcp.ResourceTemplate // replaced, never mutated
	subs       map[string]bool         // the resources the host subscribed to
	init       *mcp.InitializeResult
	pending    []Event // transitions not yet delivered
	attempting bool    // a connection attempt is in progress
	attemptSeq uint64  // attempts started
	attemptEnd uint64  // attempts finished
	lastWin    uint64  // the last attempt that connected
	manualReq  uint64  // manual reconnects asked for
	manualSeen uint64  // manual reconnects the owner has acted on
	epoch      uint64  // bumped by Close: a connection from an older epoch is never attached
	reconnects uint64  // successful connections after the first
	closeErr   error
	closeBy    time.Time // when Close must be done; zero means no hurry
	url        string    // the last resolved URL, which errors must not show
}

// toolInfo is what a call needs to know of a tool before sending it.
type toolInfo struct {
	replayable bool     // readOnlyHint or idempotentHint
	required   []string // the input schema's required properties

	once     sync.Once
	resolved *jsonschema.Resolved // see validator
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
	if o.Rand == nil {
		o.Rand = defaultRand
	}
	ctx, cancel := context.WithCancel(context.Background())
	u := &Upstream{
		name:    srv.Name,
		cfg:     srv.Clone(),
		opts:    o,
		secrets: &config.Secrets{},
		slots:   make(chan struct{}, srv.InFlightLimit()),
		ctx:     ctx,
		cancel:  cancel,
		done:    make(chan struct{}),
		nudge:   make(chan struct{}, 1),
		manual:  make(chan struct{}, 1),
		refresh: make(chan struct{}, 1),
		subs:    make(map[string]bool),
		changed: make(chan struct{}),
		since:   time.Now(),
	}
	if srv.SerializeRequests {
		u.serial = make(chan struct{}, 1)
	}
	if t := srv.TransportType(); t == config.HTTP || t == config.SSE {
		u.pool = http.DefaultTransport.(*http.Transport).Clone()
	}
	// The handlers are set before the first session, so that no
	// notification is missed, even during the first list.
	u.client = mcp.NewClient(o.Client, &mcp.ClientOptions{
		Logger:                     o.Logger,
		Capabilities:               &mcp.ClientCapabilities{},
		ToolListChangedHandler:     func(context.Context, *mcp.ToolListChangedRequest) { u.listChanged(Tools) },
		PromptListChangedHandler:   func(context.Context, *mcp.PromptListChangedRequest) { u.listChanged(Prompts) },
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { u.listChanged(Resources) },
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			if req.Params != nil {
				u.resourceUpdated(req.Params.URI)
			}
		},
	})
	return u
}

// bareClient returns a client that offers no roots, sampling or
// elicitation (Switchboard offers none of them) and listens to nothing.
func (u *Upstream) bareClient() *mcp.Client {
	return mcp.NewClient(u.opts.Client, &mcp.ClientOptions{Logger: u.opts.Logger, Capabilities: &mcp.ClientCapabilities{}})
}

// probeClient returns the client of modern probes, made on first use.
func (u *Upstream) probeClient() *mcp.Client {
	u.proberOnce.Do(func() { u.prober = u.bareClient() })
	return u.prober
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
		state, changed, err, ended := u.state, u.changed, u.lastErr, u.attemptEnd
		u.mu.Unlock()
		switch {
		case state == Connected:
			return nil
		case state == Closed:
			return u.errorf("connect", ErrClosed)
		case ended > 0 && err != nil:
			return err
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return u.errorf("connect", ctx.Err())
		}
	}
}

// Reconnect drops the current session, if any, resets the crash-loop
// breaker, and waits for a fresh connection attempt to end, or for ctx.
// Concurrent calls share one attempt, as does a call made while an attempt
// is in progress. It returns the attempt's error.
func (u *Upstream) Reconnect(ctx context.Context) error {
	u.Start()
	u.mu.Lock()
	if u.state == Closed {
		u.mu.Unlock()
		return u.errorf("reconnect", ErrClosed)
	}
	want := u.nextAttemptLocked()
	if !u.attempting {
		u.manualReq++
		signal(u.manual)
	}
	u.mu.Unlock()
	for {
		u.mu.Lock()
		state, changed, err, ended, won := u.state, u.changed, u.lastErr, u.attemptEnd, u.lastWin
		u.mu.Unlock()
		switch {
		case state == Closed:
			return u.errorf("reconnect", ErrClosed)
		case won >= want:
			return nil
		case ended >= want:
			return err
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return u.errorf("reconnect", ctx.Err())
		}
	}
}

// nextAttemptLocked returns the number of the attempt that a request made now
// will be answered by: the one in progress, or the next.
func (u *Upstream) nextAttemptLocked() uint64 {
	if u.attempting {
		return u.attemptSeq
	}
	return u.attemptSeq + 1
}

// signal sends on a buffered channel of size 1 without blocking: a signal
// already pending covers this one.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
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
		u.epoch++
		u.transitionLocked(Closed, nil)
		u.mu.Unlock()
		u.deliver()
		u.cancel()
		if started {
			<-u.done
		} else {
			close(u.done)
		}
		if u.pool != nil {
			u.pool.CloseIdleConnections()
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
	// read-only. While the server reconnects, or after the reconnect ladder
	// failed, it still holds the last list (stale tools stay listed); in
	// the crash-loop state it is empty. Prompts, Resources and Templates
	// are the other lists, likewise shared.
	Tools     []*mcp.Tool
	Prompts   []*mcp.Prompt
	Resources []*mcp.Resource
	Templates []*mcp.ResourceTemplate
	// Instructions are the server's initialize instructions.
	Instructions string
	// ServerInfo is the implementation the server reported, if any.
	ServerInfo *mcp.Implementation
	// ProtocolVersion is the negotiated protocol version.
	ProtocolVersion string
	// Reconnects counts the connections made after the first.
	Reconnects uint64
}

// Snapshot returns the upstream's current state.
func (u *Upstream) Snapshot() Snapshot {
	u.mu.Lock()
	defer u.mu.Unlock()
	snap := Snapshot{
		Name: u.name, State: u.state, Since: u.since, Err: u.lastErr, Reconnects: u.reconnects,
		Tools: u.tools, Prompts: u.prompts, Resources: u.resources, Templates: u.templates,
	}
	if u.state == Connected {
		snap.Err = nil
	}
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

// Redact removes from s every value substituted from the environment for
// this server, and the parts of its URL that are not shown.
func (u *Upstream) Redact(s string) string { return u.redact(s) }

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

// callOp names a call in errors; only error paths format it.
func callOp(name string) string { return fmt.Sprintf("call tool %q", name) }
