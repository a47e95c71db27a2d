package upstream

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	neturl "net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/oauth"
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
	// Roots, if not nil (even empty), are the roots the upstream offers the
	// server, which it may ask for at any time: the roots of the one client
	// a process per session serves. Nil offers none. See
	// [Upstream.SetRoots].
	//lint:ignore SA1019 roots are forwarded while clients and servers use them.
	Roots []*mcp.Root
	// OnEvent, if set, is called for every event, in order, under the
	// upstream's lock, before anyone waiting for the change it reports
	// wakes up. It must only record or queue the event: it must not block,
	// and it must not call the Upstream.
	OnEvent func(Event)
	// StopGrace bounds each step of a stdio server's shutdown. Default
	// DefaultStopGrace.
	StopGrace time.Duration
	// Rand, if set, replaces the source of jitter: a float in [0, 1).
	Rand func() float64
	// Check, if set, replaces the check of whether a server that is down is
	// back, which the owner makes while requests want the server (see the
	// package documentation). By default an http or sse server that the
	// upstream dials itself is checked with a TCP connect or a plain HTTP
	// request, and a stdio server is not checked.
	Check Check
	// OnSkippedLine, if set, is called for every line a stdio server writes
	// to stdout that is not a JSON-RPC message, which is skipped (and
	// logged, at most once per 10 s). It runs on the goroutine that reads
	// the server's output, and must not block.
	OnSkippedLine func()
	// LogSkippedWith, if set, is the upstream whose log of skipped lines
	// this one's share, with its limit of one log line every 10 s: for a
	// process that stands for another upstream's server.
	LogSkippedWith *Upstream
	// OAuth, if set, logs in to the http and sse servers that ask for it:
	// its store holds their tokens, and what else it sets (a Login for
	// `switchboard login`) applies to each server. A server whose config
	// sets the Authorization header is left to it. Without OAuth, a
	// server that answers 401 fails.
	OAuth *oauth.Options
}

// An Upstream is one configured MCP server, for the server's whole life: it
// owns the server's config, its desired state, its session, its state
// machine, its lists and subscriptions, and its counters. Connecting,
// reconnecting, disconnecting and reconfiguring all reuse it; nothing
// replaces it. Its methods are safe for concurrent use.
type Upstream struct {
	// Set by New, read-only after.
	name   string
	opts   Options
	client *mcp.Client
	// rootsMu guards the roots: those offered (roots), those wanted
	// (wantRoots, set by each SetRoots, which bumps rootsGen), and whether
	// a SetRoots is telling the client of a change (applyingRoots). It is
	// never held while the client notifies the server.
	rootsMu       sync.Mutex
	rootsGen      uint64
	applyingRoots bool
	//lint:ignore SA1019 roots are forwarded while clients and servers use them.
	roots, wantRoots []*mcp.Root
	secrets          *config.Secrets
	prober           func() *mcp.Client // the bare client of modern probes, made on first use
	peers            peers              // the requests in flight on behalf of peers
	notes            noteCount          // see noteCount
	front            frontWatch         // see frontWatch
	noise            *noiseLog          // logs what stdout carries that is not JSON-RPC

	// The lifetime of the owner goroutine: detached from every caller,
	// ended by Close.
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{} // closed when the owner goroutine has returned

	// Signals to the owner goroutine; buffered, sends never block.
	wake    chan struct{} // a command is pending: see takeCommand
	early   chan struct{} // a request waits: an early attempt, if this step has had none
	demand  chan struct{} // a request found no session: check whether the server is back
	refresh chan struct{} // a list changed: reload it

	// listGen counts the list_changed notifications of each list, and
	// fetched is the listGen each list was last fetched at. Only the owner
	// goroutine writes fetched; requests read both.
	listGen [numLists]atomic.Uint64
	fetched [numLists]atomic.Uint64
	// Owned by the owner goroutine.
	expires [numLists]time.Time // when each list's cache hint runs out; zero: never

	// settings holds the config and what it decides for requests. It is
	// replaced whole by Reconfigure; a request reads it once.
	settings atomic.Pointer[settings]

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

	closeOnce sync.Once

	// loaded is closed once the first session has loaded every list (or
	// given up): see Settle.
	loaded     chan struct{}
	loadedOnce sync.Once

	// mu guards the following. Lock order: mu, then what OnEvent locks.
	mu sync.Mutex
	// What is wanted: commands the owner has not taken yet.
	want         bool   // the server should be connected: Start or Reconnect was called, and no Disconnect since
	restart      bool   // a fresh connection is wanted now: a manual reconnect, or a new config
	resetBreaker bool   // a manual reconnect or a new config forgives past crashes
	stopping     *op    // a Disconnect waits for the session to be closed
	interrupt    func() // ends the owner's I/O in progress (an attempt, a list load); nil if none
	started      bool   // the owner goroutine runs
	// What is.
	state      State
	since      time.Time
	lastErr    error         // the last failure, redacted; kept across states, hidden while connected
	changed    chan struct{} // closed and replaced on every change
	sess       *session      // the current session; requests use it only while connected
	next       *op           // the attempt that will answer a request made now
	attempting bool          // next is in progress
	earlyUsed  bool          // this step between scheduled attempts has had its early attempt
	wantedAt   time.Time     // when a request last found no session
	waiting    int           // requests waiting for a connection
	seeded     bool          // tools were seeded from the cache, once
	failedOnce bool          // an attempt has failed, once
	lists      lists
	subs       map[string]bool // the resources the host subscribed to
	logLevel   string          // the logging level the host asked the server to log at; "" if none
	init       *mcp.InitializeResult
	reconnects uint64
	closeErr   error
	url        string          // the last resolved URL, which errors must not show
	pool       *http.Transport // HTTP connections, shared by its sessions; made on first use
}

// settings are a config entry and what it decides for requests.
type settings struct {
	cfg    config.Server // unresolved; never mutated
	slots  chan struct{} // one per call in flight; see config.Server.MaxInFlight
	serial chan struct{} // size 1 when requests are serialized, else nil
}

func newSettings(srv config.Server) *settings {
	s := &settings{cfg: srv.Clone(), slots: make(chan struct{}, srv.InFlightLimit())}
	if srv.SerializeRequests {
		s.serial = make(chan struct{}, 1)
	}
	return s
}

// lists are what the server offers. Each slice is replaced, never mutated.
type lists struct {
	tools     []*mcp.Tool
	toolIndex map[string]*toolInfo
	prompts   []*mcp.Prompt
	resources []*mcp.Resource
	templates []*mcp.ResourceTemplate
	cached    bool // tools came from Seed, not from the server
	listed    bool // the server has listed its tools at least once
}

// An op is something the owner goroutine does for waiters: a connection
// attempt, or a stop. Waiters select on done, then read err.
type op struct {
	done chan struct{}
	err  error // set before done is closed
}

func newOp() *op { return &op{done: make(chan struct{})} }

// finish records err and wakes the waiters. Only the owner goroutine (or
// Close, when there is none) finishes an op, once.
func (o *op) finish(err error) {
	o.err = err
	close(o.done)
}

// New returns an Upstream for srv. It does no I/O: call [Upstream.Start] or
// [Upstream.Connect]. A server that srv disables starts Disabled, and stays
// so until a config enables it.
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
		opts:    o,
		secrets: &config.Secrets{},
		ctx:     ctx,
		cancel:  cancel,
		done:    make(chan struct{}),
		wake:    make(chan struct{}, 1),
		early:   make(chan struct{}, 1),
		demand:  make(chan struct{}, 1),
		refresh: make(chan struct{}, 1),
		kill:    make(chan struct{}),
		subs:    make(map[string]bool),
		changed: make(chan struct{}),
		next:    newOp(),
		loaded:  make(chan struct{}),
		since:   time.Now(),
	}
	u.life, u.endLife = context.WithCancel(context.Background())
	u.noise = u.newNoiseLog()
	u.settings.Store(newSettings(srv))
	if !srv.IsEnabled() {
		u.state = Disabled
	}
	u.prober = sync.OnceValue(u.bareClient)
	u.client = u.newClient()
	return u
}

// bareClient returns a client that offers no roots, sampling or
// elicitation (Switchboard offers none of them) and listens to nothing.
func (u *Upstream) bareClient() *mcp.Client {
	return mcp.NewClient(u.opts.Client, &mcp.ClientOptions{Logger: u.opts.Logger, Capabilities: &mcp.ClientCapabilities{}})
}

// Timeout returns the server's timeout for a connection and for each
// request; 0 means none.
func (u *Upstream) Timeout() time.Duration { return u.settings.Load().cfg.TimeoutDuration() }

// PerSession reports whether the server runs one process per client
// session (config processPerSession).
func (u *Upstream) PerSession() bool { return u.settings.Load().cfg.ProcessPerSession }

// Name returns the configured server name.
func (u *Upstream) Name() string { return u.name }

// Config returns the unresolved config the upstream runs with.
func (u *Upstream) Config() config.Server { return u.settings.Load().cfg.Clone() }

// PublicPrefix is the config's PublicPrefix, without copying the config.
func (u *Upstream) PublicPrefix() string { return u.settings.Load().cfg.PublicPrefix() }

// Snapshot is a copy of an upstream's observable state.
type Snapshot struct {
	Name string
	// Config is the unresolved config, shared: treat it as read-only.
	Config config.Server
	State  State
	Since  time.Time
	// Err is the last failure, redacted; nil while connected.
	Err error
	// Tools is the server's raw, unfiltered tool list, shared: treat it as
	// read-only. Whatever the state, it holds the last list known: stale
	// tools stay listed while the server is down. Cached reports that it
	// came from Seed, and the server has not listed its own yet. Prompts,
	// Resources and Templates are the other lists, likewise shared.
	Tools     []*mcp.Tool
	Cached    bool
	Prompts   []*mcp.Prompt
	Resources []*mcp.Resource
	Templates []*mcp.ResourceTemplate
	// Instructions are the server's initialize instructions.
	Instructions string
	// ServerInfo is the implementation the server reported, if any.
	ServerInfo *mcp.Implementation
	// Capabilities are what the server said it offers, shared: treat them
	// as read-only. Nil before its first session.
	Capabilities *mcp.ServerCapabilities
	// ProtocolVersion is the negotiated protocol version.
	ProtocolVersion string
	// Reconnects counts the connections made after the first.
	Reconnects uint64
	// PID is the process ID of a stdio server's current process, or 0.
	PID int
}

// Snapshot returns the upstream's current state.
func (u *Upstream) Snapshot() Snapshot {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.snapshotLocked()
}

func (u *Upstream) snapshotLocked() Snapshot {
	snap := Snapshot{
		Name: u.name, Config: u.settings.Load().cfg, State: u.state, Since: u.since, Err: u.lastErr,
		Tools: u.lists.tools, Cached: u.lists.cached, Prompts: u.lists.prompts,
		Resources: u.lists.resources, Templates: u.lists.templates, Reconnects: u.reconnects,
	}
	if u.state == Connected {
		snap.Err = nil
		if u.sess != nil && u.sess.proc != nil {
			snap.PID = u.sess.proc.cmd.Process.Pid
		}
	}
	if u.init != nil {
		snap.Instructions = u.init.Instructions
		snap.ProtocolVersion = u.init.ProtocolVersion
		snap.Capabilities = u.init.Capabilities
		if u.init.ServerInfo != nil {
			info := *u.init.ServerInfo
			snap.ServerInfo = &info
		}
	}
	return snap
}

// State returns the current state.
func (u *Upstream) State() State {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.state
}

// setStateLocked records a transition and publishes it. A repeat of the
// current state is no transition, but a new cause is kept. It never leaves
// Closed.
func (u *Upstream) setStateLocked(to State, err error) {
	if u.state == Closed {
		return
	}
	if u.state == to {
		if err != nil {
			u.lastErr = err
			u.bumpLocked()
		}
		return
	}
	from := u.state
	u.state, u.since, u.lastErr = to, time.Now(), err
	u.bumpLocked()
	u.publishLocked(Event{Kind: EventState, From: from})
}

// bumpLocked wakes whoever waits for a change.
func (u *Upstream) bumpLocked() {
	close(u.changed)
	u.changed = make(chan struct{})
}

// publishLocked hands ev, with the state as of now, to OnEvent.
func (u *Upstream) publishLocked(ev Event) {
	if u.opts.OnEvent == nil {
		return
	}
	if ev.At.IsZero() {
		ev.At = time.Now()
	}
	ev.Snapshot = u.snapshotLocked()
	u.opts.OnEvent(ev)
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
