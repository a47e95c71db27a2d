package upstream

import (
	"context"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/oauth"
	"github.com/switchboard-mcp/switchboard/internal/tracing"
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
	// QuietNoise, if set, reports whether the skipped lines were reported
	// before (the persistent cache says so, for this config): they are
	// then logged at Info instead of Warn, so that a command run again
	// does not warn again.
	QuietNoise func() bool
	// LogSkippedWith, if set, is the upstream whose log of skipped lines
	// this one's share, with its limit of one log line every 10 s, and
	// whose limit on the server's log messages this one's share: for a
	// process that stands for another upstream's server.
	LogSkippedWith *Upstream
	// OAuth, if set, logs in to the http and sse servers that ask for it:
	// its store holds their tokens, and what else it sets (a Login for
	// `switchboard login`) applies to each server. A server whose config
	// sets the Authorization header is left to it. Without OAuth, a
	// server that answers 401 fails.
	OAuth *oauth.Options
	// TracerProvider makes the spans of the requests' attempts, and their
	// trace context goes to the server (see tracing.go). Default:
	// otel.GetTracerProvider().
	TracerProvider trace.TracerProvider
}

// An Upstream is one configured MCP server, for the server's whole life: it
// owns the server's config, its desired state, its session, its state
// machine, its lists and subscriptions, and its counters. Connecting,
// reconnecting, disconnecting and reconfiguring all reuse it; nothing
// replaces it. Its methods are safe for concurrent use.
//
// It is a front over parts with one job each (see the package
// documentation): the supervisor, the dialer, the list set and the
// requester. It holds no lock of its own.
type Upstream struct {
	name     string
	opts     Options
	settings settingsRef // the config and what it decides for requests
	red      *redactor
	peers    *peers
	roots    *rootSet
	dial     *dialer
	lists    *listSet
	sup      *supervisor
	calls    *requester

	closeOnce sync.Once
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
	u := &Upstream{name: srv.Name, opts: o, red: &redactor{name: srv.Name, secrets: &config.Secrets{}}}
	u.settings.Store(newSettings(srv))
	notes := &noteCount{}
	u.peers = &peers{notes: notes}
	u.lists = newListSet(&u.settings, u.red, o.Logger)
	noise, logs := newNoiseLog(o.Logger, o.QuietNoise), newServerLogLimit(o.Logger, srv.Name)
	if o.LogSkippedWith != nil {
		noise, logs = o.LogSkippedWith.dial.noise, o.LogSkippedWith.dial.logs
	}
	client := (&handlers{
		name: srv.Name, impl: o.Client, log: o.Logger, redact: u.red.redact,
		peers: u.peers, notes: notes, roots: o.Roots, logs: logs,
		listChanged: u.lists.listChanged, resourceUpdated: u.lists.resourceUpdated,
	}).newClient()
	u.roots = &rootSet{client: client, roots: o.Roots}
	u.dial = newDialer(dialOptions{
		dial: o.Dial, lookupEnv: o.LookupEnv, oauth: o.OAuth, log: o.Logger, stopGrace: o.StopGrace,
		check: o.Check, onSkippedLine: o.OnSkippedLine, sharedNoise: o.LogSkippedWith != nil,
	}, u.red, &u.settings, client, notes, noise, logs)
	u.sup = newSupervisor(u.red, o.OnEvent, o.Rand, &u.settings, u.dial, u.lists)
	u.lists.publish, u.lists.commit = u.sup.publish, u.sup.commit
	u.calls = &requester{
		name: srv.Name, settings: &u.settings, log: o.Logger, redact: u.red.redact,
		prober: sync.OnceValue(func() *mcp.Client {
			// A client that offers no roots, sampling or elicitation
			// (Switchboard offers none of them) and listens to nothing.
			return mcp.NewClient(o.Client, &mcp.ClientOptions{Logger: o.Logger, Capabilities: &mcp.ClientCapabilities{}})
		}),
		session: u.sup.session,
		detach:  u.sup.detach,
		tracer:  tracing.Tracer(o.TracerProvider),
		onBehalf: func(ctx context.Context, meta mcp.Meta) (context.Context, mcp.Meta, func()) {
			return u.peers.begin(ctx, meta, u.lists.level())
		},
	}
	return u
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

// Snapshot returns the upstream's current state.
func (u *Upstream) Snapshot() Snapshot { return u.sup.snapshot() }

// State returns the current state.
func (u *Upstream) State() State { return u.sup.stateNow() }

// Redact removes from s every value substituted from the environment for
// this server, and the parts of its URL that are not shown.
func (u *Upstream) Redact(s string) string { return u.red.redact(s) }

// LoginStamp identifies the login stored for the server now, as
// oauth.Store.Stamp does ("" if none, or if the upstream does not log in).
func (u *Upstream) LoginStamp() string { return u.dial.loginStamp() }
