package gateway

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/hooks"
	"github.com/switchboard-mcp/switchboard/internal/tracing"
)

// A Gateway serves a manager's tools to MCP clients. It is made of parts,
// each with one job: the registry keeps what the go-sdk server registers
// the same as the manager's view; sessions keep each client session's
// view, finds and notifications; the search face serves search_tools and
// call_tool; the forwarder passes requests on to the servers. A Gateway
// wires them to the go-sdk server and to HTTP.
type Gateway struct {
	m         *switchboard.Manager
	server    *mcp.Server
	opts      Options
	stop      func() // stops following the manager
	calls     inflight
	opening   opening
	limitLog  limitLog // the warnings of the limits of Options
	registry  *registry
	sessions  *sessions
	views     *views
	endpoints *endpoints
}

// New returns a Gateway for m that exposes m's current tools and follows its
// changes, and the config's tool search setting and alwaysLoad servers that
// m's New and Reconfigure hand it. m should be connected, or connecting:
// tools that arrive later are added as they come. Call [Gateway.Close] when
// done.
func New(m *switchboard.Manager, opts *Options) *Gateway {
	var o Options
	if opts != nil {
		o = *opts
	}
	o = o.withDefaults()
	h := hooks.Of(m)
	g := &Gateway{m: m, opts: o}
	g.limitLog = limitLog{logger: o.Logger}
	g.calls.init()
	g.sessions = newSessions(m, h, &g.opts)
	fwd := &forwarder{m: m, sessions: g.sessions, stateless: o.Stateless, limitLog: &g.limitLog, audit: o.AuditLog, limits: o.RateLimiter}
	g.sessions.limited = fwd.limited
	serverOpts := &mcp.ServerOptions{
		Logger: slog.New(sdkLog{o.Logger.Handler()}),
		// Tools are always advertised: they may arrive later. Prompts,
		// resources and the rest, as the servers offer them: see describe.
		Capabilities:      &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
		CompletionHandler: fwd.complete,
		// A result for an identity is its own: what a policy lets it
		// read, a shared cache must not give another.
		SetCacheable: func(_ context.Context, req mcp.Request, c *mcp.Cacheable) {
			if g.sessions.query(req) != nil {
				c.CacheScope = "private"
			}
		},
		InitializedHandler: func(ctx context.Context, req *mcp.InitializedRequest) {
			if st := g.sessions.of(req.Session); st != nil && g.views != nil {
				g.views.baseline(ctx, st, req)
			}
		},
		// The session's own processes (processPerSession) get its new
		// roots; the shared ones never had any.
		//lint:ignore SA1019 roots are forwarded while clients and servers use them.
		RootsListChangedHandler: func(_ context.Context, req *mcp.RootsListChangedRequest) {
			h.PeerRootsChanged(downstream{ss: req.Session, ctx: context.Background()})
		},
	}
	if !o.Stateless {
		// A subscription needs a session to send updates on.
		serverOpts.SubscribeHandler = auditedByURI(fwd, "resources/subscribe", func(r *mcp.SubscribeRequest) string { return r.Params.URI }, g.sessions.subscribe)
		serverOpts.UnsubscribeHandler = auditedByURI(fwd, "resources/unsubscribe", func(r *mcp.UnsubscribeRequest) string { return r.Params.URI }, g.sessions.unsubscribe)
	}
	g.server = mcp.NewServer(o.Implementation, serverOpts)
	g.registry = &registry{m: m, hooks: h, server: g.server, logger: o.Logger, override: o.ToolSearch}
	search := &searchFace{m: m, sessions: g.sessions, registry: g.registry, forwarder: fwd, stateless: o.Stateless}
	g.registry.serve = registryHandlers{callTool: fwd.callTool, getPrompt: fwd.getPrompt, readResource: fwd.readResource, search: search.tools(), searchDef: searchToolsDefinition}
	g.views = &views{m: m, registry: g.registry, sessions: g.sessions, stateless: o.Stateless}
	views := g.views
	requests := &requests{m: m, hooks: h, registry: g.registry, sessions: g.sessions, views: views, stateless: o.Stateless}
	g.endpoints = &endpoints{m: m, hooks: h, opts: &g.opts, registry: g.registry, sessions: g.sessions, started: time.Now()}
	g.server.AddReceivingMiddleware(serverSpans(tracing.Tracer(o.TracerProvider)), g.sessions.recordIdentity, requests.intercept, unlisted(g.registry, fwd))
	g.server.AddSendingMiddleware(views.spareUnchanged, g.sessions.queueNotifications)
	stopFollowing := h.Follow(g.registry.sync)
	unsubscribe := m.Subscribe(func(ev switchboard.Event) {
		if ev.Kind == switchboard.EventResourceUpdated {
			g.server.ResourceUpdated(context.Background(), &mcp.ResourceUpdatedNotificationParams{URI: ev.URI})
		}
	})
	g.stop = func() {
		stopFollowing()
		unsubscribe()
	}
	g.registry.sync()
	return g
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
// /readyz, /status, POST /admin/reconnect/{server}, if Options.Metrics is
// set, /metrics, and if Options.OAuth is set, the protected resource
// metadata at /.well-known/oauth-protected-resource (and below it, the
// resource's path).
func (g *Gateway) Handler() http.Handler {
	o := &g.opts
	guard := func(next http.Handler) http.Handler { return guarded(o.AllowOrigins, next) }
	auth := func(next http.Handler) http.Handler { return authorized(o.AuthToken, next) }
	admin := func(_ string, next http.Handler) http.Handler { return auth(next) }
	if o.OAuth != nil {
		auth = o.OAuth.bearer()
		admin = func(path string, next http.Handler) http.Handler { return auth(o.OAuth.adminOnly(path, next)) }
	}
	sdk := mcp.NewStreamableHTTPHandler(
		func(*http.Request) *mcp.Server { return g.server },
		&mcp.StreamableHTTPOptions{
			Stateless:           o.Stateless,
			Logger:              o.Logger,
			SessionTimeout:      o.sessionTimeout(),
			MaxRequestBodyBytes: o.MaxRequestBytes,
		},
	)
	mcpFace := writeBounded(o.streamWriteTimeout(), &g.limitLog, methodNotFound(sdk))
	mcpFace = capSessions(g.server, o, &g.opening, &g.limitLog, mcpFace)
	mcpFace = limitBatch(o.MaxRequestBytes, g.calls.tracked(mcpFace))
	mux := http.NewServeMux()
	mux.Handle("/mcp", guard(auth(mcpFace)))
	mux.HandleFunc("GET /healthz", healthz)
	// /readyz names the servers: not for a page that reached a loopback
	// listener under another host's name (DNS rebinding).
	mux.Handle("GET /readyz", guard(http.HandlerFunc(g.endpoints.readyz)))
	if o.Metrics != nil {
		mux.Handle("GET /metrics", guard(admin("/metrics", o.Metrics)))
	}
	mux.Handle("GET /status", guard(admin("/status", http.HandlerFunc(g.endpoints.status))))
	mux.Handle("POST /admin/reconnect/{server}", guard(admin("/admin", http.HandlerFunc(g.endpoints.adminReconnect))))
	if o.OAuth != nil {
		// Public, for any origin: clients discover the login with it.
		meta, paths := o.OAuth.metadataHandler()
		for _, p := range paths {
			mux.Handle(p, meta)
		}
	}
	return mux
}

// FiltersChanged tells the gateway that the manager's filters
// ([switchboard.Options] Filter, PromptFilter and ResourceFilter) may
// decide differently from now on, as after [switchboard.Policies.Set] on a
// reload: each client session whose tools, prompts or resources changed
// for it is sent list_changed for them, and the others nothing.
func (g *Gateway) FiltersChanged() {
	g.registry.tellAll()
}

// ConfigReloaded records the outcome of a reload of the config, which the
// caller applied to the manager (see [switchboard.Manager.Reconfigure]):
// nil, or the error that refused it or some of its entries. /status shows
// the last one. The error must not carry a secret.
func (g *Gateway) ConfigReloaded(err error) {
	r := &reload{at: time.Now()}
	if err != nil {
		r.err = err.Error()
	}
	g.endpoints.reload.Store(r)
}

// Drain waits until no request to /mcp is in progress, or ctx is done. A
// standalone stream (an HTTP GET, which lasts as long as its session) does
// not count; a POST that carries a call lasts until its response is written.
func (g *Gateway) Drain(ctx context.Context) error {
	return g.calls.wait(ctx)
}

// Close stops following the manager and closes every client session. It
// does not close the manager.
func (g *Gateway) Close() error {
	g.stop()
	g.opening.closeWait()
	var errs []error
	for ss := range g.server.Sessions() {
		errs = append(errs, ss.Close())
	}
	g.sessions.close()
	return errors.Join(errs...)
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

// tracked counts the POSTs in progress for Drain. Counting in the tool
// handler would not do: its response is written after it returns.
func (c *inflight) tracked(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			c.add()
			defer c.done()
		}
		next.ServeHTTP(w, r)
	})
}

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
