package switchboard

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/oauth"
	"github.com/switchboard-mcp/switchboard/internal/toolcache"
	"github.com/switchboard-mcp/switchboard/internal/upstream"
)

// DefaultCloseTimeout bounds [Manager.Close] when [Options.CloseTimeout] is
// zero.
const DefaultCloseTimeout = 10 * time.Second

// DefaultStartupGate is how long [Manager.Connect] waits for servers when
// [Options.StartupGate] is zero.
const DefaultStartupGate = 250 * time.Millisecond

// A Manager connects to many MCP servers and exposes their tools, prompts
// and resources as one catalog. Its methods are safe for concurrent use.
//
// Each configured server is one upstream for the manager's whole life; the
// manager only combines them. Their events are applied, in order, by one
// goroutine that swaps in a new view; calls and queries read the view with
// one atomic load and take no lock.
type Manager struct {
	// Set by New, read-only after.
	opts    Options
	created time.Time
	subs    *dispatcher
	events  *events
	search  *searchIndex     // written by the events goroutine (and New)
	cache   *toolcache.Cache // nil when disabled
	writes  *cacheWriter     // nil when the cache is disabled
	oauth   *oauth.Options   // nil when the login is disabled

	view atomic.Pointer[view]

	// lifecycle serializes Connect, Reconnect, Disconnect, Reconfigure and
	// Close: a
	// semaphore, so that a caller can stop waiting.
	lifecycle chan struct{}
	closed    atomic.Bool
	closeErr  error // set by the first Close, under lifecycle
	// held are the servers the host disconnected, under lifecycle: a
	// Reconnect of every server and ReconnectFailed leave them alone until
	// Connect, or a Reconnect that names them, brings them back.
	held map[*upstream.Upstream]bool
	// closing ends when Close begins: it stops the lifecycle operation in
	// progress, so that Close does not wait for a long Connect.
	closing      context.Context
	beginClosing context.CancelFunc
	perSession   sessionServers
	notes        serverNotes
	pins         *pinner
}

// New returns a Manager for the servers of cfg. It does no I/O: call
// [Manager.Connect]. Entries that cfg rejected, or that do not validate,
// are kept and shown as failed with their config error, so that status and
// readiness account for them. Call [Manager.Close] when done: it also stops
// the manager's goroutines.
func New(cfg *config.Config, opts *Options) *Manager {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.LookupEnv == nil {
		o.LookupEnv = os.LookupEnv
	}
	if o.CloseTimeout <= 0 {
		o.CloseTimeout = DefaultCloseTimeout
	}
	if o.StartupGate == 0 {
		o.StartupGate = DefaultStartupGate
	}
	o.WaitFor = slices.Clone(o.WaitFor)
	m := &Manager{
		opts:      o,
		created:   time.Now(),
		subs:      newDispatcher(o.Logger),
		search:    newSearchIndex(o.Logger, o.LookupEnv, vectorDir(o)),
		lifecycle: make(chan struct{}, 1),
		held:      make(map[*upstream.Upstream]bool),
	}
	m.closing, m.beginClosing = context.WithCancel(context.Background())
	if o.Cache != CacheOff {
		m.cache = toolcache.Open(o.CacheDir, &toolcache.Options{Logger: o.Logger})
		m.writes = newCacheWriter(m.cache, o.Logger)
	}
	m.oauth = oauthOptions(o)
	if cfg == nil {
		cfg = &config.Config{}
	}
	m.events = newEvents(m)
	m.pins = newPinner(o.Logger)
	m.pins.changed = func() { m.events.Push(queued{pins: true}) }
	m.pins.configure(cfg, o.Pinning, o.LookupEnv)
	v := &view{byName: make(map[string]*upstream.Upstream), toolSearch: cfg.ToolSearch}
	seen := make(map[string]bool)
	snaps := make(map[string]upstream.Snapshot)
	for _, srv := range cfg.Servers {
		if seen[srv.Name] {
			continue // names are unique in a loaded config; keep the first in code-built ones
		}
		seen[srv.Name] = true
		if err := srv.Validate(); err != nil {
			v.rejected = append(v.rejected, config.Rejected{Name: srv.Name, Source: srv.Source, Required: srv.Required, Err: err})
			continue
		}
		up := m.newUpstream(srv)
		v.servers = append(v.servers, up)
		v.byName[srv.Name] = up
		snaps[srv.Name] = up.Snapshot()
	}
	for _, r := range cfg.Rejected {
		if !seen[r.Name] {
			seen[r.Name] = true
			v.rejected = append(v.rejected, r)
		}
	}
	first := m.build(v, snaps, true)
	m.search.follow(first)
	m.view.Store(first)
	m.events.start(snaps)
	return m
}

// newUpstream makes the upstream of srv. Its events name it: those of an
// upstream that a reconfiguration replaced are dropped.
func (m *Manager) newUpstream(srv config.Server) *upstream.Upstream {
	var up *upstream.Upstream
	up = upstream.New(srv, &upstream.Options{
		Client:        m.opts.Client,
		Logger:        m.opts.Logger.With("server", srv.Name),
		LookupEnv:     m.opts.LookupEnv,
		Dial:          m.opts.Dial,
		OnEvent:       func(ev upstream.Event) { m.events.add(up, ev) },
		OAuth:         m.oauth,
		OnSkippedLine: m.skipHook(srv.Name),
		QuietNoise:    m.quietNoise(srv.Name),
		// Attempt spans: see Options.TracerProvider.
		TracerProvider: m.opts.TracerProvider,
	})
	if level := m.opts.LoggingLevel; level != "" {
		up.SetLoggingLevel(context.Background(), level) // not started: kept for its sessions
	}
	return up
}

// oauthOptions are the login options the upstreams share: the store of
// o.OAuthDir, or of the default directory; nil if o disables the login, or
// there is no directory for it (which is logged).
func oauthOptions(o Options) *oauth.Options {
	if o.Login == LoginRefused {
		return nil
	}
	dir := o.OAuthDir
	if dir == "" {
		var err error
		if dir, err = oauth.DefaultDir(); err != nil {
			o.Logger.Warn("servers that require a login will fail", "error", err)
			return nil
		}
	}
	return &oauth.Options{Store: &oauth.Store{Dir: dir}, Logger: o.Logger}
}

// redactor returns the redaction of the server called name.
func (m *Manager) redactor(name string) func(string) string {
	if up := m.view.Load().byName[name]; up != nil {
		return up.Redact
	}
	return func(s string) string { return s }
}

// lock takes the lifecycle lock, or gives up when ctx ends: a caller that
// stops waiting gets ctx's error and nothing is done. The returned context
// is ctx, also cancelled with ErrClosed when Close begins; unlock releases
// both.
func (m *Manager) lock(ctx context.Context, op string) (_ context.Context, unlock func(), _ error) {
	select {
	case m.lifecycle <- struct{}{}:
	case <-ctx.Done():
		return nil, nil, fmt.Errorf("%s: waiting for another lifecycle operation: %w", op, ctx.Err())
	case <-m.closing.Done():
		return nil, nil, fmt.Errorf("%s: %w", op, ErrClosed)
	}
	if m.closed.Load() {
		<-m.lifecycle
		return nil, nil, fmt.Errorf("%s: %w", op, ErrClosed)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(m.closing, func() { cancel(ErrClosed) })
	return ctx, func() {
		stop()
		cancel(nil)
		<-m.lifecycle
	}, nil
}

// open fails with ErrClosed once Close has begun, so that a request for what
// a closed server had says why it is gone.
func (m *Manager) open(op, name string) error {
	if m.closed.Load() {
		return fmt.Errorf("%s %q: %w", op, name, ErrClosed)
	}
	return nil
}

// Connect connects the enabled servers that are not connected yet: those
// not started, those disconnected, and those that failed or are in
// crash-loop (for which it is a manual reconnect: it forgives their past
// crashes). A server already connecting or connected is left alone.
//
// In parallel mode (the default) it starts them all at once and returns
// when all have connected or failed, or when the startup gate
// (Options.StartupGate, 250 ms by default) has passed, whichever comes
// first. A server still connecting then exposes the tools it had last time,
// from the persistent cache, and calls to them wait for it; a server with
// nothing cached adds its tools when it connects, with an EventChanged, and
// a call to one of its tools (by prefix) waits for it meanwhile. In
// sequential mode it connects them one at a time, in configured order.
//
// A server that fails does not stop the others: its error is kept,
// [Manager.Status] shows it, and it is retried on its
// schedule. In strict mode (Options.Strict) Connect waits for every server,
// and if any failed it disconnects the ones this call started, in reverse
// order, and returns the failures joined. Connect also fails if ctx ends
// first, or if the manager is closed; the servers already started go on
// connecting in the background.
//
// Connect, Reconnect, ReconnectFailed, Disconnect, Reconfigure and Close
// are serialized. A caller whose ctx ends while another is in progress gets
// ctx's error, and nothing is done.
//
// Connect returns once every subscriber (see [Manager.Subscribe]) has been
// told of what settled; when the startup gate ends the wait, of the
// servers' starts and the tools they had last time, and the rest follows
// as events. So do Reconnect, ReconnectFailed, Disconnect and Reconfigure.
// They wait for the subscribers within ctx and at most
// Options.CloseTimeout.
func (m *Manager) Connect(ctx context.Context) error {
	ctx, unlock, err := m.lock(ctx, "connect")
	if err != nil {
		return err
	}
	defer unlock()
	var pass []*upstream.Upstream
	for _, up := range m.view.Load().servers {
		switch up.State() {
		case upstream.Disconnected, upstream.Failed, upstream.CrashLoop, upstream.NeedsAuth:
			pass = append(pass, up)
			delete(m.held, up)
		}
	}
	gate := m.opts.StartupGate
	if m.opts.Strict {
		gate = -1
	}
	gated, err := m.connect(ctx, pass, gate)
	if err == nil && len(m.opts.WaitFor) > 0 {
		err = m.awaitNeeded(ctx)
		gated = false // what settled is in the views when Connect returns
	}
	if err == nil && m.opts.Strict {
		if err = failures(pass); err != nil {
			m.disconnect(ctx, pass)
		}
	}
	if !gated {
		// What settled is in the views when Connect returns. At the gate,
		// the seeds and starts are (connect flushed them early), and the
		// rest follows: on a machine busy starting the servers, the events
		// behind could take the events goroutine well past the gate.
		m.told(ctx)
	}
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	return nil
}

// connect starts pass (a manual reconnect for those that failed) and waits
// for it to settle, one at a time in sequential mode, or at once for at
// most gate (negative: no gate). With a gate, each server exposes its
// cached tools until it lists its own. It reports whether the gate ended
// the wait.
func (m *Manager) connect(ctx context.Context, pass []*upstream.Upstream, gate time.Duration) (gated bool, err error) {
	start := func(up *upstream.Upstream, begin <-chan struct{}) <-chan struct{} {
		if up.State() == upstream.Disconnected {
			return up.Start(begin)
		}
		return up.Restart()
	}
	// The cache is read first: once the servers start, on a busy machine, a
	// read could take the whole gate. What it noted of each server counts
	// whatever the gate; its tools, only behind one.
	cached := m.readCache(pass)
	if m.opts.Sequential {
		for _, up := range pass {
			select {
			case <-start(up, nil):
			case <-ctx.Done():
				return false, context.Cause(ctx)
			}
		}
		return false, nil
	}
	var timer <-chan time.Time
	gateCtx := ctx // told within the gate
	if gate > 0 {
		t := time.NewTimer(gate)
		defer t.Stop()
		timer = t.C
		var cancel context.CancelFunc
		gateCtx, cancel = context.WithTimeout(ctx, gate)
		defer cancel()
	} else {
		cached = nil // no gate: nothing to show while the servers connect
	}
	// Each server exposes the tools it had last time until it lists its
	// own; the seeds and the starts make one new view, not one each. With
	// tools from the cache, that view is made before the first attempts of
	// the servers started here for the first time: once their processes
	// start, on a busy machine, making it could take the whole gate.
	var begin chan struct{}
	open := func() {}
	if slices.ContainsFunc(cached, func(e toolcache.Entry) bool { return len(e.Tools) > 0 }) {
		begin = make(chan struct{})
		open = sync.OnceFunc(func() { close(begin) })
		defer open() // after a panic too: no server waits for it forever
	}
	release := m.events.Hold()
	defer release()
	settled := make([]<-chan struct{}, len(pass))
	for i, up := range pass {
		if cached != nil {
			e := cached[i]
			up.Seed(e.Tools, e.About.ServerInfo, e.About.Instructions) // a server that has listed its own keeps them
		}
		settled[i] = start(up, begin)
	}
	release()
	if timer != nil {
		m.told(gateCtx) // the seeds and starts, in the views and told within the gate
	}
	open()
	for _, done := range settled {
		select {
		case <-done:
		case <-timer:
			return true, nil
		case <-ctx.Done():
			return false, context.Cause(ctx)
		}
	}
	return false, nil
}

// awaitNeeded waits, within ctx, for the servers named in Options.WaitFor
// that are connecting or loading their first lists, each within its
// timeout.
func (m *Manager) awaitNeeded(ctx context.Context) error {
	v := m.view.Load()
	for _, name := range m.opts.WaitFor {
		up := v.byName[name]
		if up == nil || up.State() == upstream.Disabled {
			m.opts.Logger.Warn("Options.WaitFor names no enabled server", "server", name)
			continue
		}
		up.Settle(ctx, up.Timeout())
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
	}
	return nil
}

// failedBeforeFor is how long a server's failure, kept in the cache, tells
// that it may fail again (ServerStatus.FailedBefore): long enough for the
// runs of a one-shot command in a session of work, short enough that a
// server that failed once and was fixed outside its config (a token in the
// environment) is waited for again soon, and lists its tools.
const failedBeforeFor = time.Hour

// readCache returns the cache's entry of each server of pass (nil: none):
// its tools, and what the server said of itself with them.
func (m *Manager) readCache(pass []*upstream.Upstream) []toolcache.Entry {
	if m.cache == nil {
		return nil
	}
	cached := make([]toolcache.Entry, len(pass))
	for i, up := range pass {
		cfg := up.Config()
		cached[i] = m.cache.Read(cfg.Name, cfg.Fingerprint())
		m.takeNotes(cfg.Name, cached[i].Notes, len(cached[i].Tools) > 0)
	}
	return cached
}

// failures joins the errors of the servers of pass that are not connected.
func failures(pass []*upstream.Upstream) error {
	var errs []error
	for _, up := range pass {
		if snap := up.Snapshot(); snap.State != upstream.Connected {
			errs = append(errs, snap.Err)
		}
	}
	return errors.Join(errs...)
}

// closeAll closes ups at once, each by deadline, so that each gets its
// grace before a kill, and returns the error of each that failed.
func closeAll(ups []*upstream.Upstream, deadline time.Time) []error {
	errs := make([]error, len(ups))
	var wg sync.WaitGroup
	for i, up := range ups {
		wg.Go(func() { errs[i] = up.Close(deadline) })
	}
	wg.Wait()
	return slices.DeleteFunc(errs, func(err error) bool { return err == nil })
}

// disconnect disconnects servers in reverse configured order, each within
// CloseTimeout.
func (m *Manager) disconnect(ctx context.Context, servers []*upstream.Upstream) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.opts.CloseTimeout)
	defer cancel()
	for i := len(servers) - 1; i >= 0; i-- {
		servers[i].Disconnect(ctx)
	}
}

// settle waits while servers are making their first connection with
// nothing to show for it yet (no tools from the persistent cache, no
// failed attempt): each one still connecting, or loading its first lists,
// at most for the startup gate (Options.StartupGate) from when it began, or,
// with a negative gate, within its timeout; and within ctx. The views are
// then up to date with every change the servers made so far.
//
// The gateway settles before it answers a handshake or a list, so that a
// client that lists once, at start, sees every server that connects within
// the gate; a server that takes longer reaches the client later, with a
// list_changed notification, and a server that has cached tools or has
// failed once is never waited for.
func (m *Manager) settle(ctx context.Context) {
	settleEach(ctx, m.view.Load().servers, func(up *upstream.Upstream) (time.Duration, bool) {
		since, ok := up.Unproven()
		if !ok {
			return 0, false
		}
		wait := up.Timeout()
		if gate := m.opts.StartupGate; gate >= 0 {
			if wait = time.Until(since.Add(gate)); wait <= 0 {
				return 0, false // its gate has passed
			}
		}
		return wait, true
	})
	m.events.Flush(ctx)
}

// settleEach settles each of ups at once, each for as long as within says
// (0: no limit; false: not at all), and within ctx.
func settleEach(ctx context.Context, ups []*upstream.Upstream, within func(*upstream.Upstream) (time.Duration, bool)) {
	var wg sync.WaitGroup
	for _, up := range ups {
		if d, ok := within(up); ok {
			wg.Go(func() { up.Settle(ctx, d) })
		}
	}
	wg.Wait()
}

// WaitSettled waits until each server called names (every configured
// server, with none) has settled: it has connected and listed its tools,
// prompts and resources, or it is down (failed, crash-loop, needs-auth), or
// it is disabled, disconnected or not started. It starts nothing and
// forgives nothing: it only waits, each server at most for ctx. When it
// returns, the views ([Manager.Status], [Manager.Tools]) show what
// settled.
//
// A host that must not wait for every server at once waits for some: after
// [Manager.Connect] returns at the startup gate, say, for the servers that
// have nothing to show yet (connecting, and not [ServerStatus.Deferred]),
// within a deadline of its own, as the command's verbs do. It returns
// ctx's error if ctx ends first; [Manager.Status] then tells which servers
// are still connecting. A name that no server has is an error
// ([ErrUnknownServer]), and nothing is waited for.
func (m *Manager) WaitSettled(ctx context.Context, names ...string) error {
	v := m.view.Load()
	ups := v.servers
	if len(names) > 0 {
		ups = make([]*upstream.Upstream, 0, len(names))
		for _, name := range names {
			up, ok := v.byName[name]
			if !ok {
				if slices.ContainsFunc(v.rejected, func(r config.Rejected) bool { return r.Name == name }) {
					continue // a rejected entry never starts: it has settled
				}
				return v.unknownServer("wait", name)
			}
			ups = append(ups, up)
		}
	}
	settleEach(ctx, ups, func(*upstream.Upstream) (time.Duration, bool) { return 0, true })
	// What settled before ctx ended is in the views too.
	flush, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.opts.CloseTimeout)
	defer cancel()
	m.events.Flush(flush)
	if ctx.Err() != nil {
		return fmt.Errorf("wait: %w", context.Cause(ctx))
	}
	return nil
}

// Reconnect reconnects the servers called names, or, when no name is
// given, every enabled server but those the host disconnected (Connect
// brings those back): each drops its session, has its past crashes
// forgiven, and connects afresh, keeping its resource subscriptions, and
// so do the processes its client sessions have of it (config
// processPerSession). It waits for all of them (no startup gate). In
// strict mode it returns their failures; otherwise it returns nil, and
// [Manager.Status] tells. A name that is not configured, or whose server
// is disabled or rejected, is an error, and nothing is done.
func (m *Manager) Reconnect(ctx context.Context, names ...string) error {
	return m.reconnect(ctx, func(v *view) ([]*upstream.Upstream, error) {
		if len(names) == 0 {
			var all []*upstream.Upstream
			for _, up := range v.servers {
				if up.State() != upstream.Disabled && !m.held[up] {
					all = append(all, up)
				}
			}
			return all, nil
		}
		var named []*upstream.Upstream
		for _, name := range names {
			up, ok := v.byName[name]
			if !ok {
				return nil, v.unknownServer("reconnect", name)
			}
			if up.State() == upstream.Disabled {
				return nil, fmt.Errorf("reconnect %q: %w", name, &UnavailableError{State: StateDisabled})
			}
			named = append(named, up)
		}
		for _, up := range named {
			delete(m.held, up)
		}
		return named, nil
	})
}

// ReconnectFailed reconnects the servers that [Status.Failed] reports
// (but for the entries the config rejected, and the servers the host
// disconnected), as Reconnect does; the others are not touched.
func (m *Manager) ReconnectFailed(ctx context.Context) error {
	return m.reconnect(ctx, func(v *view) (pass []*upstream.Upstream, _ error) {
		for i, up := range v.servers {
			if v.statuses[i].failed() && !m.held[up] {
				pass = append(pass, up)
			}
		}
		return pass, nil
	})
}

// reconnect makes a manual reconnect of each server that choose returns,
// under the lifecycle lock, at once, and waits for them.
func (m *Manager) reconnect(ctx context.Context, choose func(*view) ([]*upstream.Upstream, error)) error {
	ctx, unlock, err := m.lock(ctx, "reconnect")
	if err != nil {
		return err
	}
	defer unlock()
	pass, err := choose(m.view.Load())
	if err != nil {
		return err
	}
	var settled []<-chan struct{}
	for _, up := range pass {
		settled = append(settled, up.Restart())
		for _, own := range m.perSession.ofServer(up.Name()) {
			settled = append(settled, own.Restart())
		}
	}
	for _, done := range settled {
		select {
		case <-done:
		case <-ctx.Done():
		}
	}
	m.told(ctx)
	if ctx.Err() != nil {
		return fmt.Errorf("reconnect: %w", context.Cause(ctx))
	}
	if m.opts.Strict {
		if err := failures(pass); err != nil {
			return fmt.Errorf("reconnect: %w", err)
		}
	}
	return nil
}

// Disconnect stops the server called name: its session is closed (a stdio
// server's whole process tree ends, and so do the processes its client
// sessions have of it), nothing is attempted any more, and
// its tools, prompts and resources are removed, with one EventChanged. It
// stays configured, with its subscriptions: Connect connects it again. It
// is serialized with Connect, Reconnect, Reconfigure and Close, and
// returns once the subscribers have been told (see [Manager.Connect]).
func (m *Manager) Disconnect(ctx context.Context, name string) error {
	ctx, unlock, err := m.lock(ctx, "disconnect")
	if err != nil {
		return err
	}
	defer unlock()
	v := m.view.Load() // under the lock: a Reconfigure may have replaced it
	up, ok := v.byName[name]
	if !ok {
		return v.unknownServer("disconnect", name)
	}
	m.held[up] = true
	ctx, cancel := context.WithTimeout(ctx, m.opts.CloseTimeout)
	defer cancel()
	errs := []error{up.Disconnect(ctx)}
	// Its sessions' processes end too, whatever became of the shared one,
	// with a grace of their own. Taken after the shared one stopped: no
	// request starts another since (see servesPerSession).
	errs = append(errs, closeAll(m.perSession.take(name), time.Now().Add(m.opts.CloseTimeout))...)
	m.told(ctx)
	// A process that had to be killed is disconnected all the same.
	errs = slices.DeleteFunc(errs, func(err error) bool { return errors.Is(err, upstream.ErrKilled) })
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("disconnect %q: %w", name, err)
	}
	return nil
}

// Close closes every server in reverse configured order, carrying on past
// failures, and returns them joined. It is bounded by Options.CloseTimeout,
// counted from the call: as the deadline nears, what is left of every stdio
// server is killed, and every connection's I/O ends. A Connect or Reconnect
// in progress is stopped (it returns ErrClosed) and Close waits for it to
// return. Close is idempotent (later calls return the first call's result),
// and stops the manager's goroutines after the last event is delivered.
func (m *Manager) Close() error {
	deadline := time.Now().Add(m.opts.CloseTimeout)
	m.beginClosing()
	m.lifecycle <- struct{}{}
	defer func() { <-m.lifecycle }()
	if m.closed.Swap(true) {
		return m.closeErr
	}
	servers := m.view.Load().servers
	var errs []error
	for i := len(servers) - 1; i >= 0; i-- {
		if err := servers[i].Close(deadline); err != nil {
			errs = append(errs, err)
		}
	}
	m.perSession.close()
	m.events.Close()
	m.pins.close()   // after the events goroutine, which pins on first use
	m.search.close() // after the events goroutine, which follows the views into it
	if m.writes != nil {
		m.writes.close()
	}
	m.subs.close()
	m.closeErr = errors.Join(errs...)
	return m.closeErr
}
