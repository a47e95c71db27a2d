package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/gateway"
	"github.com/switchboard-mcp/switchboard/metrics"
)

// defaultShutdownTimeout bounds a graceful shutdown: in-flight calls get
// this long to finish; then the servers are closed, which ends the calls
// still running with an error for their clients.
const defaultShutdownTimeout = 10 * time.Second

// serve runs the gateway until SIGINT or SIGTERM.
func (e *env) serve(ctx context.Context, args []string) error {
	var paths configPaths
	fs := e.flags("serve", "[--config F]... [--listen HOST:PORT | --stdio] [--stateless] [--auth-token-env NAME] [--insecure] [--allow-origin ORIGIN]... [--startup-gate D] [--shutdown-timeout D] [--tool-search MODE] [--max-conns N]")
	fs.Var(&paths, "config", "config `file` (repeatable)")
	listen := fs.String("listen", "127.0.0.1:7777", "serve Streamable HTTP at `HOST:PORT`/mcp")
	stdio := fs.Bool("stdio", false, "serve one client on stdin and stdout instead of HTTP")
	stateless := fs.Bool("stateless", false, "serve Streamable HTTP without sessions (for replicas behind a load balancer)")
	tokenEnv := fs.String("auth-token-env", "", "require 'Authorization: Bearer TOKEN' on /mcp, /metrics, /status and /admin, with TOKEN read from the environment variable `NAME`")
	insecure := fs.Bool("insecure", false, "allow a non-loopback --listen without --auth-token-env or the config's gateway.auth")
	shutdownTimeout := durationFlag(fs, "shutdown-timeout", defaultShutdownTimeout, "on SIGTERM, give calls in flight `D` to finish before the servers are closed")
	gate := durationFlag(fs, "startup-gate", switchboard.DefaultStartupGate, "wait `D` at the start, and in a client's handshake or list, for servers making their first connection (0: not at all); later ones arrive with list_changed")
	var origins originList
	fs.Var(&origins, "allow-origin", "accept browser requests from `ORIGIN` (such as https://app.example.com), besides loopback ones (repeatable)")
	maxConns := fs.Int("max-conns", gateway.DefaultMaxConns, "serve at most `N` connections at once: over it, a new one closes the longest idle one, or is closed if every one is in a request (0: no limit)")
	var toolSearch *config.ToolSearch // nil: the config's
	fs.Func("tool-search", "serve the tools behind search_tools and call_tool: `MODE` off, on, or auto[:N] (on while more than N tools are exposed; N 40 by default); overrides the config's \"toolSearch\"", func(v string) error {
		ts, err := config.ParseToolSearch(v)
		toolSearch = &ts
		if err != nil {
			return errors.New(`want off, on, auto or auto:N (N a whole number of tools)`)
		}
		return nil
	})
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("serve: unexpected argument %q", fs.Arg(0))
	}
	if *gate < 0 {
		return usageErrorf("serve: --startup-gate %v: must not be negative", *gate)
	}
	if *maxConns < 0 {
		return usageErrorf("serve: --max-conns %d: must not be negative", *maxConns)
	}
	if *stdio && given(fs)["listen"] {
		return usageErrorf("serve: --stdio and --listen exclude each other")
	}

	var token string
	if *tokenEnv != "" {
		token = os.Getenv(*tokenEnv)
		if token == "" {
			return fmt.Errorf("serve: --auth-token-env %s: the variable is unset or empty", *tokenEnv)
		}
	}

	logger := e.logger(slog.LevelInfo)
	cfg, err := e.loadConfig(paths, false, logger)
	if err != nil {
		return err
	}
	authCfg := cfg.Gateway.Auth
	if authCfg != nil && token != "" {
		return fmt.Errorf("serve: --auth-token-env and the config's gateway.auth exclude each other: use one (gateway.auth for OAuth tokens of %s, --auth-token-env for one shared token)", authCfg.Issuer)
	}
	if !*stdio && token == "" && authCfg == nil && !*insecure && !isLoopback(*listen) {
		return fmt.Errorf("serve: refusing to listen on %s, which is not a loopback address, without --auth-token-env NAME or the config's gateway.auth (or --insecure)", *listen)
	}
	var oauth *gateway.OAuth
	if authCfg != nil && *stdio {
		logger.Info("the config's gateway.auth applies to HTTP; serving stdio without it")
	} else if authCfg != nil {
		if oauth, err = oauthFor(ctx, authCfg, logger); err != nil {
			return fmt.Errorf("serve: %w", err)
		}
	}
	// Traces, if the OTEL_* variables ask for them: flushed last, once the
	// servers are closed and every span has ended.
	tp, flushTraces, err := startTracing(ctx, *stdio, logger)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	defer flushTraces()
	defer tuneServeGC(logger)()
	stats := metrics.New()
	mopts := &switchboard.Options{Client: implementation(), Logger: logger, Observer: stats.Observer(), StartupGate: startupGate(*gate), TracerProvider: tp, Pinning: commandPinning}
	// The gateway's policies decide, for each client's identity, what it
	// sees and may use (none: everything); a reload replaces them for the
	// requests that follow.
	policies, err := switchboard.NewPolicies(cfg.Gateway.Policies, logger)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	mopts.Filter, mopts.PromptFilter, mopts.ResourceFilter = policies.Filters()
	// The audit log, if the config asks for one, outlives the gateway:
	// it is closed last, with what is queued written.
	var auditLog *gateway.AuditLog
	if a := cfg.Gateway.Audit; a != nil {
		if a.File == "-" && *stdio {
			return fmt.Errorf(`serve: gateway.audit.file "-" (standard output) and --stdio exclude each other: standard output carries the protocol; name a file`)
		}
		if auditLog, err = gateway.OpenAuditLog(a.File, &gateway.AuditLogOptions{Logger: logger, MaxBytes: a.MaxSizeMB << 20, MaxFiles: a.MaxFiles}); err != nil {
			return fmt.Errorf("serve: gateway.audit.file: %w", err)
		}
		defer auditLog.Close()
	}
	// The rate limits, if the config sets any, or none (until a reload
	// sets some): in memory, or in the Redis the config names.
	limiter, err := rateLimiterFor(cfg.Gateway.Limits, stats, logger)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	defer limiter.Close()
	m := switchboard.New(cfg, mopts)
	m.Subscribe(func(ev switchboard.Event) { logState(logger, ev) })
	stats.Follow(m)
	toolSearchOverridden(logger, toolSearch, cfg)
	g := gateway.New(m, &gateway.Options{
		Implementation: implementation(),
		Logger:         logger,
		Stateless:      *stateless,
		AuthToken:      token,
		OAuth:          oauth,
		Metrics:        stats.Handler(),
		Latency:        stats.Latency,
		SessionDropped: stats.SessionDropped,
		AllowOrigins:   origins,
		ToolSearch:     toolSearch, // nil: the config's, as reloads bring it
		AuditLog:       auditLog,
		Policies:       policies,
		RateLimiter:    limiter,
		TracerProvider: tp,
	})
	defer e.watchConfig(ctx, paths, m, logger, func(reloaded *config.Config, err error) {
		stats.ConfigReloaded(reloadOutcome(err))
		g.ConfigReloaded(err)
		if reloaded != nil {
			toolSearchOverridden(logger, toolSearch, reloaded)
			changed := !reflect.DeepEqual(policies.Rules(), slices.Clone(reloaded.Gateway.Policies))
			if err := policies.Set(reloaded.Gateway.Policies); err != nil {
				logger.Warn("the reloaded config's gateway.policies were not applied; the previous ones stay", "error", err)
			} else if changed {
				logger.Info("gateway.policies changed: applied to every request from now on", "rules", len(reloaded.Gateway.Policies))
				g.FiltersChanged()
			}
			if a := reloaded.Gateway.Audit; (a == nil) != (cfg.Gateway.Audit == nil) || a != nil && *a != *cfg.Gateway.Audit {
				logger.Warn("the config's gateway.audit changed; it applies from the next start of switchboard serve, and the gateway keeps the log it started with")
			}
			limiter.Set(reloaded.Gateway.Limits)
			if !sameRedis(reloaded.Gateway.Limits, cfg.Gateway.Limits) {
				logger.Warn("the config's gateway.limits.redis changed; it applies from the next start of switchboard serve, and the gateway keeps the store it started with (the new rates apply now)")
			}
			if !*stdio && !reloaded.Gateway.Auth.Equal(authCfg) {
				logger.Warn("the config's gateway.auth changed; it applies from the next start of switchboard serve, and the gateway keeps the one it started with")
			}
		}
	})()
	if *stdio {
		return e.serveStdio(ctx, m, g, logger)
	}
	limits := &gateway.HTTPOptions{MaxConns: *maxConns, Logger: logger}
	if *maxConns == 0 {
		limits.MaxConns = -1 // no limit
	}
	return e.serveHTTP(ctx, *listen, *shutdownTimeout, limits, m, g, logger)
}

// startupGate is the manager's gate for --startup-gate d: the manager
// takes 0 for its default, so no gate at all is the shortest one.
func startupGate(d time.Duration) time.Duration {
	if d == 0 {
		return time.Nanosecond
	}
	return d
}

// serveStdio connects every server, behind the startup gate, then serves
// one client on stdin and stdout until it disconnects or a signal arrives.
func (e *env) serveStdio(ctx context.Context, m *switchboard.Manager, g *gateway.Gateway, logger *slog.Logger) error {
	err := connectAtStart(ctx, m, g, logger)
	if err == nil {
		err = g.ServeStdio(ctx)
		lingerForTheCache(ctx, m, cacheLinger)
	}
	e.stopSignals()
	g.Close()
	if cerr := m.Close(); cerr != nil {
		fmt.Fprintf(e.stderr, "switchboard: close: %v\n", cerr)
	}
	if ctx.Err() != nil {
		return nil // a signal: a normal way to stop
	}
	return err
}

// cacheLinger bounds how long serve --stdio stays after its client left,
// for the servers still making their first connection: the TypeScript
// SDK's clients, the Inspector's among them, wait 2 s for the process to
// exit before they send SIGTERM, which ends the wait at once.
const cacheLinger = 2 * time.Second

// lingerForTheCache waits, at most d and within ctx, while a server is
// making its first connection with nothing listed or cached. A client that
// starts the gateway, lists once and leaves (the Inspector's CLI, say)
// would otherwise end it before such a server lists its tools, and the
// next run would find them in the persistent cache no more than this one
// did.
func lingerForTheCache(ctx context.Context, m *switchboard.Manager, d time.Duration) {
	changed := make(chan struct{}, 1)
	unsubscribe := m.Subscribe(func(switchboard.Event) {
		select {
		case changed <- struct{}{}:
		default:
		}
	})
	defer unsubscribe()
	timer := time.NewTimer(d)
	defer timer.Stop()
	for slices.ContainsFunc(m.Status(), listsNothingYet) {
		select {
		case <-changed:
		case <-timer.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// listsNothingYet reports whether a server is making its first connection
// with nothing listed or cached.
func listsNothingYet(s switchboard.ServerStatus) bool {
	return s.State == switchboard.StateConnecting && s.Tools == 0 && !s.Deferred
}

// serveHTTP serves at once, so that /healthz answers while the servers
// connect, and holds the requests to /mcp until every server has connected
// or the startup gate has passed; it shuts down gracefully on a signal:
// the listener stops, in-flight calls get shutdownTimeout to finish, and
// every server is closed.
func (e *env) serveHTTP(ctx context.Context, addr string, shutdownTimeout time.Duration, limits *gateway.HTTPOptions, m *switchboard.Manager, g *gateway.Gateway, logger *slog.Logger) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		g.Close()
		m.Close()
		return fmt.Errorf("serve: %w", err)
	}
	if url, all := openableURL(addr, ln.Addr()); all {
		logger.Info("serving MCP", "url", url, "interfaces", "all")
	} else {
		logger.Info("serving MCP", "url", url)
	}
	// What the servers show by the gate (their own tools, or those they had
	// last time) is exposed before the first request to /mcp is served.
	started := make(chan struct{})
	srv := gateway.NewHTTPServer(g.Handler(), limits)
	// A request held is not yet under its body and write deadlines.
	srv.Handler = heldUntil(started, srv.Handler)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	connectAtStart(ctx, m, g, logger)
	close(started)

	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-served:
	}
	e.stopSignals()
	logger.Info("shutting down")

	shutdownCtx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	shutdown := make(chan error, 1)
	go func() { shutdown <- srv.Shutdown(shutdownCtx) }()
	closed := false
	if err := g.Drain(shutdownCtx); err != nil {
		logger.Warn("in-flight calls did not finish in time; closing the servers", "timeout", shutdownTimeout)
		// The calls still running end with an error for their clients:
		// closing a client session waits for its calls.
		closeManager(m, logger)
		closed = true
		answered, cancel := context.WithTimeout(context.Background(), time.Second)
		g.Drain(answered) // the calls' error answers are written
		cancel()
	}
	g.Close() // ends the clients' streams, so that Shutdown can finish
	if err := <-shutdown; err != nil {
		srv.Close()
	}
	if !closed {
		closeManager(m, logger)
	}
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", serveErr)
	}
	return nil
}

// heldUntil holds the requests to /mcp until started is closed; the other
// endpoints (health, readiness, status, metrics) answer at once.
func heldUntil(started <-chan struct{}, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/mcp" {
			select {
			case <-started:
			case <-r.Context().Done():
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

func closeManager(m *switchboard.Manager, logger *slog.Logger) {
	if err := m.Close(); err != nil {
		logger.Warn("close", "error", err)
	}
}

// connectAtStart connects every server and returns at the startup gate,
// with the tools so far exposed; it fails only if ctx ends first. Once no
// server is connecting any more, it exposes them again and logs "servers
// settled", with the count of each outcome.
func connectAtStart(ctx context.Context, m *switchboard.Manager, g *gateway.Gateway, logger *slog.Logger) error {
	var (
		returned    atomic.Bool
		once        sync.Once
		unsubscribe func()
	)
	settle := func() {
		if ctx.Err() != nil {
			return // shutting down: the servers close, and nothing settled
		}
		for _, s := range m.Status() {
			if s.State == switchboard.StateConnecting {
				return
			}
		}
		once.Do(func() {
			unsubscribe()
			// Failed counts the servers waiting for a login too; they are
			// not broken, and a login brings them up.
			status := m.Status()
			// Tools counts what the servers expose, whatever the policies
			// let an anonymous caller see.
			failed, needsAuth, tools := status.Failed(), 0, 0
			for _, s := range status {
				if s.State == switchboard.StateNeedsAuth && slices.Contains(failed, s.Name) {
					needsAuth++
				}
				tools += s.Tools
			}
			logger.Info("servers settled", "connected", len(status.Connected()), "failed", len(failed)-needsAuth, "needs_auth", needsAuth, "tools", tools)
		})
	}
	unsubscribe = m.Subscribe(func(ev switchboard.Event) {
		if ev.Kind == switchboard.EventState && returned.Load() {
			settle()
		}
	})
	if err := m.Connect(ctx); err != nil {
		unsubscribe()
		return err
	}
	returned.Store(true)
	settle()
	return nil
}

// logStderrLines is how many of the last lines of a stdio server's stderr
// its log lines show; its status and errors carry more.
const logStderrLines = 5

// logState logs a server's change of state, once: when it connects, goes
// down (with the cause, redacted), is retried in the background, enters
// crash-loop, comes back, or is disconnected. Closing at shutdown is not
// news.
func logState(logger *slog.Logger, ev switchboard.Event) {
	if ev.Kind != switchboard.EventState {
		return
	}
	attrs := []any{"server", ev.Server}
	if ev.Err != nil {
		attrs = append(attrs, "error", switchboard.ShortStderr(ev.Err.Error(), logStderrLines))
	}
	switch ev.State {
	case switchboard.StateConnected:
		if ev.From == switchboard.StateConnecting {
			logger.Info("server connected", attrs...)
		} else {
			logger.Info("server back", attrs...)
		}
	case switchboard.StateReconnecting:
		logger.Warn("server down; reconnecting", attrs...)
	case switchboard.StateFailed:
		if errors.Is(ev.Err, switchboard.ErrRecursion) {
			logger.Error("server is Switchboard inside itself (the error says how to fix the config); not retried until its config changes or a reconnect", attrs...)
		} else {
			logger.Warn("server not connected; retrying in the background", attrs...)
		}
	case switchboard.StateCrashLoop:
		logger.Error("server crashed too often (crash-loop); retrying every 5 min", attrs...)
	case switchboard.StateNeedsAuth:
		logger.Warn("server needs a login (the error says how)", attrs...)
	case switchboard.StateDisconnected, switchboard.StateDisabled:
		logger.Info("server "+ev.State.String(), attrs...)
	}
}

// isLoopback reports whether addr (HOST:PORT) names a loopback address. An
// empty host or a name other than localhost binds more than loopback.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// originList is the repeatable --allow-origin flag.
type originList []string

func (o *originList) String() string { return strings.Join(*o, ",") }

func (o *originList) Set(v string) error {
	origin, err := gateway.CheckOrigin(v)
	if err != nil {
		return err
	}
	*o = append(*o, origin)
	return nil
}

// toolSearchOverridden says so when flag, the --tool-search setting, if
// any, overrides a different toolSearch in cfg.
func toolSearchOverridden(logger *slog.Logger, flag *config.ToolSearch, cfg *config.Config) {
	if flag != nil && cfg.ToolSearch != *flag {
		logger.Info("the config's toolSearch is overridden by --tool-search", "config", cfg.ToolSearch.String(), "flag", flag.String())
	}
}

// discoveryAtStart bounds the issuer's discovery at the start of serve: an
// issuer that does not answer by then is tried again at the first token.
const discoveryAtStart = 5 * time.Second

// oauthFor returns the gateway's OAuth for the config's gateway.auth. It
// looks the issuer up once, and only warns if that fails: the first token
// tries again.
func oauthFor(ctx context.Context, a *config.GatewayAuth, logger *slog.Logger) (*gateway.OAuth, error) {
	o, err := gateway.NewOAuth(a, logger)
	if err != nil {
		return nil, err
	}
	dctx, cancel := context.WithTimeout(ctx, discoveryAtStart)
	defer cancel()
	if err := o.Discover(dctx); err != nil {
		logger.Warn("OAuth issuer discovery failed; tokens are refused until it succeeds (retried at the next token)", "error", err)
	} else {
		logger.Info("OAuth protected resource", "issuer", a.Issuer, "resource", a.Audience, "scopes", strings.Join(a.Scopes, " "))
	}
	if a.Introspection != nil {
		logger.Info("OAuth opaque tokens checked by introspection", "endpoint", a.Introspection.URL)
	}
	return o, nil
}

// rateLimiterFor returns the gateway's rate limiter for limits (nil: none,
// until a reload sets some), counted in stats, with Redis's password from
// the environment variable the config names.
func rateLimiterFor(limits *config.GatewayLimits, stats *metrics.Metrics, logger *slog.Logger) (*gateway.RateLimiter, error) {
	if limits == nil {
		limits = &config.GatewayLimits{}
	}
	o := &gateway.RateLimiterOptions{Logger: logger, Limited: stats.RateLimited, LocalFallback: stats.RateLimitLocalFallback}
	if r := limits.Redis; r != nil && r.PasswordEnv != "" {
		if o.Password = os.Getenv(r.PasswordEnv); o.Password == "" {
			return nil, fmt.Errorf("gateway.limits.redis.passwordEnv %s: the variable is unset or empty", r.PasswordEnv)
		}
	}
	return gateway.NewRateLimiter(limits, o)
}

// sameRedis reports whether a and b name the same Redis for the limits.
func sameRedis(a, b *config.GatewayLimits) bool {
	var ra, rb *config.LimitsRedis
	if a != nil {
		ra = a.Redis
	}
	if b != nil {
		rb = b.Redis
	}
	return ra == nil && rb == nil || ra != nil && rb != nil && *ra == *rb
}
