package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/hooks"
)

// Options configure a [Gateway]. A nil *Options means all defaults.
type Options struct {
	// Implementation is how the gateway introduces itself to its clients.
	// Default: name "switchboard", version "dev".
	Implementation *mcp.Implementation
	// Logger receives diagnostics. Default: discard.
	Logger *slog.Logger
	// Stateless serves Streamable HTTP without sessions, for replicas behind
	// a load balancer.
	Stateless bool
	// SessionTimeout closes a Streamable HTTP session that sent no request
	// for that long: a client that went away without ending its session
	// (and the processes it had, see config processPerSession) is let go.
	// The client, if it comes back, starts a new session, as the protocol
	// asks. Default DefaultSessionTimeout; negative: never.
	SessionTimeout time.Duration
	// MaxSessions bounds the client sessions the gateway holds at once: a
	// request for a new Streamable HTTP session beyond it gets 503, with
	// Retry-After, naming the limit, while the sessions held go on.
	// Default DefaultMaxSessions; negative: no limit.
	MaxSessions int
	// NotifyQueue bounds the notifications (resources/updated,
	// list_changed) a client session may have waiting to be sent: a
	// session that leaves more unread is closed, with a warning, and its
	// client may start a new one. A notification the same as one waiting
	// (the same list, the same resource) is not queued again, so that only
	// a client that leaves this many different ones unread is closed.
	// Default DefaultNotifyQueue.
	NotifyQueue int
	// StreamWriteTimeout bounds each write to a client's standalone stream
	// (its HTTP GET to /mcp): a client that stops reading loses the
	// stream's connection. Default DefaultStreamWriteTimeout.
	StreamWriteTimeout time.Duration
	// SessionDropped, if set, is called with DropNotifyQueueFull for each
	// session closed for NotifyQueue, and with DropMaxSessions for each
	// session refused for MaxSessions, for a metric. It must not block.
	SessionDropped func(reason string)
	// AuthToken, if set, is required as "Authorization: Bearer AuthToken" on
	// /mcp, /metrics, /status and /admin. /healthz and /readyz never require it:
	// orchestrator probes carry no token.
	AuthToken string
	// Metrics, if set, is served at /metrics: the handler of package
	// github.com/switchboard-mcp/switchboard/metrics, say.
	Metrics http.Handler
	// Latency, if set, gives the median and 99th percentile of a server's
	// call durations, and how many calls they cover, for /status.
	Latency func(server string) (p50, p99 time.Duration, calls uint64)
	// AllowOrigins are the browser origins, besides loopback ones, whose
	// requests the gateway accepts (see CheckOrigin for the form). A
	// request from any other origin gets 403.
	AllowOrigins []string
	// MaxRequestBytes bounds the body of a request to /mcp; a larger one
	// gets 413. Default: the go-sdk's, 4 MiB.
	MaxRequestBytes int64
	// ToolSearch serves the tools behind search_tools and call_tool:
	// while it is on, tools/list holds those two, the tools of the
	// servers marked alwaysLoad, and the tools the client session found,
	// up to MaxFoundPerSession (with Stateless, no session keeps its
	// finds: call them with call_tool). Every tool stays callable.
	// Default: off. [Gateway.SetToolSearch] changes it.
	ToolSearch config.ToolSearch
}

// A Gateway serves a manager's tools to MCP clients.
type Gateway struct {
	// Set by New, read-only after.
	m           *switchboard.Manager
	hooks       hooks.Gateway // m's hooks for gateways only
	server      *mcp.Server
	opts        Options
	unsubscribe func()
	started     time.Time
	calls       inflight
	sessions    sessions
	progress    progressTokens
	opening     opening
	limitLog    limitLog // the warnings of the limits of Options

	// mu serializes syncs and guards the following. Lock order: mu, then
	// sessions.mu.
	mu        sync.Mutex
	exposed   [numKinds]map[string]string // per kind, name or URI → JSON of the registered definition
	tools     map[string]exposedTool      // the servers' tools registered, by public name
	toolOrder []string                    // the keys of tools, sorted
	search    config.ToolSearch
	searchOn  bool // search_tools and call_tool are registered
	// exposedTools counts the servers' tools at the last sync, listed or
	// behind search_tools.
	exposedTools int

	reload atomic.Pointer[reload] // the last config reload, if any
}

// New returns a Gateway for m that exposes m's current tools and follows its
// changes. m should be connected, or connecting: tools that arrive later are
// added as they come. Call [Gateway.Close] when done.
func New(m *switchboard.Manager, opts *Options) *Gateway {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Implementation == nil {
		o.Implementation = &mcp.Implementation{Name: "switchboard", Version: "dev"}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	g := &Gateway{m: m, hooks: hooks.Of(m), opts: o, started: time.Now(), search: o.ToolSearch}
	g.limitLog = limitLog{logger: o.Logger}
	for k := range g.exposed {
		g.exposed[k] = make(map[string]string)
	}
	serverOpts := &mcp.ServerOptions{
		Logger: slog.New(sdkLog{o.Logger.Handler()}),
		// Tools are always advertised: they may arrive later. Prompts,
		// resources and the rest, as the servers offer them: see describe.
		Capabilities:       &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
		CompletionHandler:  g.complete,
		InitializedHandler: func(_ context.Context, req *mcp.InitializedRequest) { g.sessions.track(g, req.Session) },
		// The session's own processes (processPerSession) get its new
		// roots; the shared ones never had any.
		//lint:ignore SA1019 roots are forwarded while clients and servers use them.
		RootsListChangedHandler: func(_ context.Context, req *mcp.RootsListChangedRequest) {
			g.hooks.PeerRootsChanged(downstream{ss: req.Session, ctx: context.Background()})
		},
	}
	if !o.Stateless {
		// A subscription needs a session to send updates on.
		serverOpts.SubscribeHandler = g.subscribe
		serverOpts.UnsubscribeHandler = g.unsubscribeResource
	}
	g.server = mcp.NewServer(o.Implementation, serverOpts)
	g.server.AddReceivingMiddleware(g.intercept, g.unlisted)
	g.server.AddSendingMiddleware(g.toolsListChanged, g.queueNotifications)
	g.sessions.init()
	g.calls.init()
	g.unsubscribe = m.Subscribe(func(ev switchboard.Event) {
		switch ev.Kind {
		case switchboard.EventChanged:
			g.syncExposed()
		case switchboard.EventResourceUpdated:
			g.server.ResourceUpdated(context.Background(), &mcp.ResourceUpdatedNotificationParams{URI: ev.URI})
		}
	})
	g.syncExposed()
	return g
}

// SetToolSearch changes the tool search setting (see Options.ToolSearch).
// A reload of the config calls it, changed or not: while search is on,
// every session is told list_changed, for a server's alwaysLoad may have
// changed too.
func (g *Gateway) SetToolSearch(ts config.ToolSearch) {
	g.mu.Lock()
	g.search = ts
	g.mu.Unlock()
	g.syncExposed()
	g.sessions.markAllStale()
	g.notifyToolsChanged()
}

// Server returns the go-sdk server, for transports this package does not
// wrap.
func (g *Gateway) Server() *mcp.Server { return g.server }

// ServeStdio serves one client on stdin and stdout until it disconnects or
// ctx is done.
func (g *Gateway) ServeStdio(ctx context.Context) error {
	return g.server.Run(ctx, &mcp.StdioTransport{})
}

// Handler returns the HTTP face: /mcp (Streamable HTTP), /healthz,
// /readyz, /status, POST /admin/reconnect/{server} and, if Options.Metrics
// is set, /metrics.
func (g *Gateway) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/mcp", g.guarded(g.authorized(limitBatch(g.opts.MaxRequestBytes, g.tracked(g.capSessions(g.writeBounded(methodNotFound(mcp.NewStreamableHTTPHandler(
		func(*http.Request) *mcp.Server { return g.server },
		&mcp.StreamableHTTPOptions{
			Stateless:           g.opts.Stateless,
			Logger:              g.opts.Logger,
			SessionTimeout:      g.sessionTimeout(),
			MaxRequestBodyBytes: g.opts.MaxRequestBytes,
		},
	)))))))))
	mux.HandleFunc("GET /healthz", g.healthz)
	// /readyz names the servers: not for a page that reached a loopback
	// listener under another host's name (DNS rebinding).
	mux.Handle("GET /readyz", g.guarded(http.HandlerFunc(g.readyz)))
	if g.opts.Metrics != nil {
		mux.Handle("GET /metrics", g.guarded(g.authorized(g.opts.Metrics)))
	}
	mux.Handle("GET /status", g.guarded(g.authorized(http.HandlerFunc(g.status))))
	mux.Handle("POST /admin/reconnect/{server}", g.guarded(g.authorized(http.HandlerFunc(g.adminReconnect))))
	return mux
}

// DefaultSessionTimeout is how long an idle Streamable HTTP session lives
// when Options.SessionTimeout is zero.
const DefaultSessionTimeout = 10 * time.Minute

// sessionTimeout is the go-sdk's SessionTimeout for o.SessionTimeout.
func (g *Gateway) sessionTimeout() time.Duration {
	switch t := g.opts.SessionTimeout; {
	case t == 0:
		return DefaultSessionTimeout
	case t < 0:
		return 0 // never
	default:
		return t
	}
}

// Drain waits until no request to /mcp is in progress, or ctx is done. A
// standalone stream (an HTTP GET, which lasts as long as its session) does
// not count; a POST that carries a call lasts until its response is written.
func (g *Gateway) Drain(ctx context.Context) error {
	return g.calls.wait(ctx)
}

// tracked counts the POSTs in progress for Drain. Counting in the tool
// handler would not do: its response is written after it returns.
func (g *Gateway) tracked(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			g.calls.add()
			defer g.calls.done()
		}
		next.ServeHTTP(w, r)
	})
}

// Close stops following the manager and closes every client session. It
// does not close the manager.
func (g *Gateway) Close() error {
	g.unsubscribe()
	g.opening.closeWait()
	var errs []error
	for ss := range g.server.Sessions() {
		errs = append(errs, ss.Close())
	}
	g.sessions.wait()
	return errors.Join(errs...)
}

// checkArguments checks that a tools/call's arguments, which the SDK has
// already read as JSON, are an object or absent.
func checkArguments(raw json.RawMessage) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" || raw[0] == '{' {
		return nil
	}
	return fmt.Errorf("%w: arguments must be a JSON object", switchboard.ErrInvalidArguments)
}

// sdkLog is the go-sdk server's log handler. The SDK logs every client
// session's coming and going at info level, and warns, on every list
// change, about each client session that has no stream to receive the
// notification on (many clients never open one, and some go away without
// ending their session). None of it is news for a gateway's operator: it
// is logged at debug level.
type sdkLog struct{ slog.Handler }

func (h sdkLog) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < slog.LevelWarn || r.Level == slog.LevelWarn && strings.HasPrefix(r.Message, "calling notifications/") {
		if !h.Handler.Enabled(ctx, slog.LevelDebug) {
			return nil
		}
		r.Level = slog.LevelDebug
	}
	return h.Handler.Handle(ctx, r)
}

func (h sdkLog) WithAttrs(attrs []slog.Attr) slog.Handler { return sdkLog{h.Handler.WithAttrs(attrs)} }

func (h sdkLog) WithGroup(name string) slog.Handler { return sdkLog{h.Handler.WithGroup(name)} }

// inflight counts requests in progress.
type inflight struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed while n == 0
}

func (c *inflight) init() {
	c.idle = make(chan struct{})
	close(c.idle)
}

func (c *inflight) add() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == 0 {
		c.idle = make(chan struct{})
	}
	c.n++
}

func (c *inflight) done() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n--
	if c.n == 0 {
		close(c.idle)
	}
}

func (c *inflight) wait(ctx context.Context) error {
	c.mu.Lock()
	idle := c.idle
	c.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
