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

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/toolcache"
	"github.com/switchboard-mcp/switchboard/internal/upstream"
)

// DefaultCloseTimeout bounds [Manager.Close] when [Options.CloseTimeout] is
// zero.
const DefaultCloseTimeout = 10 * time.Second

// DefaultStartupGate is how long [Manager.Connect] waits for servers when
// [Options.StartupGate] is zero.
const DefaultStartupGate = 250 * time.Millisecond

// Options configure a [Manager]. A nil *Options means all defaults; a zero
// field means that field's default.
type Options struct {
	// Client identifies Switchboard to every server. Default: name
	// "switchboard", version "dev".
	Client *mcp.Implementation
	// Logger receives diagnostics. Default: discard.
	Logger *slog.Logger
	// LookupEnv resolves ${VAR} in server configs, at connect time. Default:
	// os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// CloseTimeout bounds Close. Default: DefaultCloseTimeout.
	CloseTimeout time.Duration
	// Dial, if set, opens the transport for a server instead of the one its
	// config asks for: for servers that run in the same process, and tests.
	Dial func(ctx context.Context, srv config.Server) (mcp.Transport, error)

	// Sequential connects the servers one at a time, in configured order,
	// each waited for in full, instead of all at once behind the startup
	// gate.
	Sequential bool
	// Strict makes Connect and Reconnect fail when a server fails: the
	// servers connected by that call are closed again, in reverse order, the
	// ones connected before are left as they were, and the failures are
	// returned. Strict waits for every server, without the startup gate.
	Strict bool
	// KeepFailed keeps failed servers in [Manager.Active]; by default they
	// are dropped from it.
	KeepFailed bool
	// StartupGate is how long Connect waits for servers to connect before it
	// returns, in parallel mode. Servers still connecting then go on in the
	// background, exposing the tools they had last time (see CacheDir)
	// until they connect. Default: DefaultStartupGate; negative: wait for
	// every server.
	StartupGate time.Duration
	// CacheDir is the directory of the persistent tool cache. Default: the
	// user cache directory (see os.UserCacheDir), under switchboard/tools.
	CacheDir string
	// NoCache disables the persistent tool cache.
	NoCache bool

	// Filter, if set, decides per query which tools Tools returns. It sees a
	// copy of each tool, under its original name; an error or a panic
	// excludes the tool and is logged.
	Filter DynamicFilter
	// Approval says which tools need a human's approval; see
	// [Manager.RequiresApproval]. Build it with [NewApprovalPolicy].
	Approval *ApprovalPolicy
	// StrictSchemas converts the input schemas Tools returns for providers'
	// strict structured output, where it can; a schema it cannot convert is
	// returned unchanged.
	StrictSchemas bool
	// FormatError, if set, turns an error of CallTool into a result for the
	// model (see DefaultErrorFormatter). If it is nil, or returns nil, the
	// error is returned.
	FormatError ErrorFormatter
}

// A Manager connects to many MCP servers and exposes their tools, prompts
// and resources as one catalog. Its methods are safe for concurrent use.
type Manager struct {
	// Set by New, read-only after.
	opts    Options
	servers []*managed // configured order
	byName  map[string]*managed
	created time.Time
	events  *dispatcher
	cache   *toolcache.Cache // nil when disabled
	writes  *cacheWriter
	// closeUpstream closes one upstream by a deadline; tests replace it to
	// make a close fail.
	closeUpstream func(*upstream.Upstream, time.Time) error

	// lifecycle serializes Connect, Reconnect, Disconnect and Close: a
	// semaphore, so that a caller can stop waiting.
	lifecycle chan struct{}
	closed    atomic.Bool
	closeErr  error // set by the first Close, under lifecycle
	// closing ends when Close begins: it stops the lifecycle operation in
	// progress, so that Close does not wait for a long Connect.
	closing      context.Context
	beginClosing context.CancelFunc

	// epoch moves whenever a server's upstream is replaced, so that views
	// built from the old one are rebuilt (see generation).
	epoch atomic.Uint64

	// mu guards the upstream of each managed server, and the views.
	mu        sync.Mutex
	view      *views // immutable once built: readers keep it outside mu
	published published
}

// managed is one configured server.
type managed struct {
	cfg      config.Server
	rejected error // non-nil if the config rejected the entry

	// Guarded by Manager.mu.
	up           *upstream.Upstream // nil if disabled or rejected
	started      bool               // Connect started up
	disconnected bool               // Disconnect closed it
	deferred     []*mcp.Tool        // cached tools, shown while up first connects
	cleanupErr   error              // the last failure to close it
	failure      error              // why it failed, kept when a cleanup replaced up
}

// New returns a Manager for the servers of cfg. It does no I/O: call
// [Manager.Connect]. Entries that cfg rejected are kept, and shown as failed
// with their config error, so that status and readiness account for them.
// Call [Manager.Close] when done: it also stops the event goroutine.
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
	m := &Manager{
		opts:      o,
		byName:    make(map[string]*managed),
		created:   time.Now(),
		events:    newDispatcher(o.Logger),
		lifecycle: make(chan struct{}, 1),
		closeUpstream: func(up *upstream.Upstream, deadline time.Time) error {
			return up.CloseBy(deadline)
		},
	}
	m.closing, m.beginClosing = context.WithCancel(context.Background())
	if !o.NoCache {
		m.cache = toolcache.Open(o.CacheDir, &toolcache.Options{Logger: o.Logger})
		m.writes = newCacheWriter(m)
	}
	if cfg == nil {
		cfg = &config.Config{}
	}
	for _, srv := range cfg.Servers {
		s := &managed{cfg: srv.Clone()}
		if err := srv.Validate(); err != nil {
			s.rejected = err
		} else if srv.IsEnabled() {
			s.up = m.newUpstream(s)
		}
		m.add(s)
	}
	for _, r := range cfg.Rejected {
		m.add(&managed{cfg: config.Server{Name: r.Name, Source: r.Source, Required: r.Required}, rejected: r.Err})
	}
	return m
}

func (m *Manager) add(s *managed) {
	if _, dup := m.byName[s.cfg.Name]; dup {
		return // names are unique in a loaded config; keep the first in code-built ones
	}
	m.byName[s.cfg.Name] = s
	m.servers = append(m.servers, s)
}

// newUpstream makes a fresh upstream for s, whose events are heard while it
// is s's current one.
func (m *Manager) newUpstream(s *managed) *upstream.Upstream {
	var up *upstream.Upstream
	up = upstream.New(s.cfg, &upstream.Options{
		Client:    m.opts.Client,
		Logger:    m.opts.Logger.With("server", s.cfg.Name),
		LookupEnv: m.opts.LookupEnv,
		Dial:      m.opts.Dial,
		OnEvent:   func(ev upstream.Event) { m.upstreamEvent(s, up, ev) },
	})
	return up
}

// upstreamOf returns s's current upstream.
func (m *Manager) upstreamOf(s *managed) *upstream.Upstream {
	m.mu.Lock()
	defer m.mu.Unlock()
	return s.up
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
// never started, and those that failed or were disconnected (a server
// already connecting is not started twice).
//
// In parallel mode (the default) it starts them all at once and returns
// when all have connected or failed, or when the startup gate
// (Options.StartupGate, 250 ms by default) has passed, whichever comes
// first. A server still connecting then exposes the tools it had last time,
// from the persistent cache, and calls to them wait for it; a server with
// nothing cached adds its tools when it connects, with an EventChanged. In
// sequential mode it connects them one at a time, in configured order.
//
// A server that fails does not stop the others: its error is kept, and
// [Manager.Failed] and [Manager.Status] show it. In strict mode
// (Options.Strict) Connect waits for every server, and if any failed it
// closes the ones this call connected, in reverse order, and returns the
// failures joined. Connect also fails if ctx ends first, or if the manager
// is closed; the servers already started go on connecting in the
// background.
//
// Connect, Reconnect, Disconnect and Close are serialized. A caller whose
// ctx ends while another is in progress gets ctx's error, and nothing is
// done.
func (m *Manager) Connect(ctx context.Context) error {
	ctx, unlock, err := m.lock(ctx, "connect")
	if err != nil {
		return err
	}
	defer unlock()
	var pass, failed []*managed
	for _, s := range m.servers {
		switch m.connectNeed(s) {
		case needStart:
			pass = append(pass, s)
		case needFresh:
			failed = append(failed, s)
		}
	}
	// A failed server gets a fresh upstream, and with it a fresh breaker.
	pass = append(pass, m.cleanup(failed)...)
	slices.SortFunc(pass, func(a, b *managed) int { return m.index(a) - m.index(b) })
	return m.connectPass(ctx, "connect", pass, m.opts.StartupGate)
}

// What Connect must do for a server.
type need int

const (
	needNothing need = iota // disabled, rejected, connected or connecting
	needStart               // never started, or disconnected (and made afresh)
	needFresh               // failed: close it and start a fresh one
)

// connectNeed says what Connect must do for s. It gives a disconnected
// server a fresh upstream.
func (m *Manager) connectNeed(s *managed) need {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case s.up == nil:
		return needNothing
	case s.disconnected:
		m.replaceLocked(s)
		return needStart
	case !s.started:
		return needStart
	}
	switch s.up.State() {
	case upstream.Failed, upstream.CrashLoop:
		return needFresh
	}
	return needNothing
}

// connectPass connects pass, as Connect describes, with the given startup
// gate (negative: none).
func (m *Manager) connectPass(ctx context.Context, op string, pass []*managed, gate time.Duration) error {
	for _, s := range pass {
		m.emit(Event{Kind: EventState, Server: s.cfg.Name, State: StateConnecting})
	}
	var err error
	switch {
	case m.opts.Sequential:
		err = m.connectSequential(ctx, pass)
	case m.opts.Strict:
		err = m.connectParallel(ctx, pass, -1)
	default:
		err = m.connectParallel(ctx, pass, gate)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if !m.opts.Strict {
		return nil
	}
	var failed []error
	for _, s := range pass {
		if up := m.upstreamOf(s); up != nil && up.State() != upstream.Connected {
			failed = append(failed, up.Snapshot().Err)
		}
	}
	if len(failed) == 0 {
		return nil
	}
	m.cleanup(slices.Clone(pass))
	return fmt.Errorf("%s: %w", op, errors.Join(failed...))
}

// start starts s's upstream.
func (m *Manager) start(s *managed) *upstream.Upstream {
	m.mu.Lock()
	up := s.up
	s.started, s.failure = true, nil
	m.mu.Unlock()
	up.Start()
	return up
}

// connectSequential connects pass one server at a time.
func (m *Manager) connectSequential(ctx context.Context, pass []*managed) error {
	for _, s := range pass {
		up := m.start(s)
		if err := up.Connect(ctx); err != nil && ctx.Err() != nil {
			return context.Cause(ctx)
		}
	}
	return nil
}

// connectParallel starts pass at once and waits for it to settle, for the
// gate (negative: none), or for ctx. Servers still connecting at the gate
// get their cached tools.
func (m *Manager) connectParallel(ctx context.Context, pass []*managed, gateAfter time.Duration) error {
	waitCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for _, s := range pass {
		up := m.start(s)
		wg.Go(func() { up.Connect(waitCtx) })
	}
	// The cache is read while the servers connect, so that the gate is not
	// followed by a wait for the disk.
	var cached [][]*mcp.Tool
	read := make(chan struct{})
	go func() {
		defer close(read)
		if gateAfter > 0 {
			cached = m.readCache(pass)
		}
	}()
	settled := make(chan struct{})
	go func() {
		wg.Wait()
		close(settled)
	}()
	var gate <-chan time.Time
	if gateAfter > 0 {
		t := time.NewTimer(gateAfter)
		defer t.Stop()
		gate = t.C
	}
	var err error
	select {
	case <-settled:
	case <-gate:
	case <-ctx.Done():
		err = context.Cause(ctx)
	}
	cancel()
	<-settled
	<-read
	if err == nil && cached != nil {
		m.deferPending(pass, cached)
	}
	return err
}

// readCache returns the cached tools of each server of pass (nil: none).
func (m *Manager) readCache(pass []*managed) [][]*mcp.Tool {
	if m.cache == nil {
		return nil
	}
	cached := make([][]*mcp.Tool, len(pass))
	for i, s := range pass {
		cached[i], _, _ = m.cache.Get(s.cfg.Name, s.cfg.Fingerprint())
	}
	return cached
}

// deferPending gives the servers of pass that are still connecting for the
// first time the tools they had last time: cached[i] for pass[i].
func (m *Manager) deferPending(pass []*managed, cached [][]*mcp.Tool) {
	changed := false
	for i, s := range pass {
		up := m.upstreamOf(s)
		tools := cached[i]
		if up == nil || len(tools) == 0 || up.State() != upstream.Connecting {
			continue
		}
		m.mu.Lock()
		if s.up == up {
			s.deferred = tools
			changed = true
		}
		m.mu.Unlock()
	}
	if changed {
		m.epoch.Add(1)
		m.publish()
	}
}

// Reconnect reconnects servers. With failedOnly, it takes the servers that
// failed: it closes them first, in reverse configured order, then connects
// again those whose close succeeded (one whose close failed stays failed,
// with that error); the others are not touched. Without failedOnly it
// closes every server, in reverse order, and connects them all afresh. It
// waits for the servers it connects (no startup gate), and in strict mode
// returns their failures. It is serialized with Connect, Disconnect and
// Close.
func (m *Manager) Reconnect(ctx context.Context, failedOnly bool) error {
	ctx, unlock, err := m.lock(ctx, "reconnect")
	if err != nil {
		return err
	}
	defer unlock()
	var targets []*managed
	for _, s := range m.servers {
		up := m.upstreamOf(s)
		if up == nil {
			continue
		}
		if !failedOnly {
			targets = append(targets, s)
			continue
		}
		switch up.State() {
		case upstream.Failed, upstream.CrashLoop:
			targets = append(targets, s)
		}
	}
	return m.connectPass(ctx, "reconnect", m.cleanup(targets), -1)
}

// cleanup closes the upstreams of servers in reverse configured order,
// carrying on past failures, and gives each that closed a fresh, unstarted
// upstream. It returns those, in configured order. A stdio server that had
// to be killed counts as closed.
func (m *Manager) cleanup(servers []*managed) []*managed {
	slices.SortFunc(servers, func(a, b *managed) int { return m.index(a) - m.index(b) })
	deadline := time.Now().Add(m.opts.CloseTimeout)
	ok := make([]bool, len(servers))
	for i := len(servers) - 1; i >= 0; i-- {
		s := servers[i]
		up := m.upstreamOf(s)
		var failure error
		if snap := up.Snapshot(); snap.State == upstream.Failed || snap.State == upstream.CrashLoop {
			failure = snap.Err
		}
		err := m.closeUpstream(up, deadline)
		m.mu.Lock()
		if err != nil && !errors.Is(err, upstream.ErrKilled) {
			s.cleanupErr = err
		} else {
			s.cleanupErr = nil
			m.replaceLocked(s)
			s.failure = failure
			ok[i] = true
		}
		m.mu.Unlock()
	}
	var cleaned []*managed
	for i, s := range servers {
		if ok[i] {
			cleaned = append(cleaned, s)
		}
	}
	m.epoch.Add(1)
	m.publish()
	return cleaned
}

// replaceLocked gives s a fresh, unstarted upstream. m.mu must be held.
func (m *Manager) replaceLocked(s *managed) {
	s.up = m.newUpstream(s)
	s.started, s.disconnected, s.deferred = false, false, nil
	m.epoch.Add(1)
}

// index returns s's position in configured order.
func (m *Manager) index(s *managed) int { return slices.Index(m.servers, s) }

// Disconnect closes the server called name and removes its tools, prompts
// and resources, with one EventChanged. It stays configured: Connect
// connects it again. It is serialized with Connect, Reconnect and Close.
func (m *Manager) Disconnect(ctx context.Context, name string) error {
	s, ok := m.byName[name]
	if !ok {
		return fmt.Errorf("disconnect %q: %w", name, ErrUnknownServer)
	}
	_, unlock, err := m.lock(ctx, "disconnect")
	if err != nil {
		return err
	}
	defer unlock()
	m.mu.Lock()
	up := s.up
	if up != nil {
		s.disconnected, s.deferred = true, nil
	}
	m.mu.Unlock()
	if up == nil {
		return nil
	}
	err = m.closeUpstream(up, time.Now().Add(m.opts.CloseTimeout))
	m.epoch.Add(1)
	m.publish()
	if err != nil && !errors.Is(err, upstream.ErrKilled) {
		return fmt.Errorf("disconnect %q: %w", name, err)
	}
	return nil
}

// Close closes every server in reverse configured order, carrying on past
// failures, and returns them joined. It is bounded by Options.CloseTimeout,
// counted from the call: as the deadline nears, stdio servers are signalled
// sooner. A Connect or Reconnect in progress is stopped (it returns
// ErrClosed) and Close waits for it to return. Close is idempotent (later
// calls return the first call's result), and stops the event and cache
// goroutines after the last event is delivered.
func (m *Manager) Close() error {
	deadline := time.Now().Add(m.opts.CloseTimeout)
	m.beginClosing()
	m.lifecycle <- struct{}{}
	defer func() { <-m.lifecycle }()
	if m.closed.Swap(true) {
		return m.closeErr
	}
	var errs []error
	for i := len(m.servers) - 1; i >= 0; i-- {
		if up := m.upstreamOf(m.servers[i]); up != nil {
			errs = append(errs, up.CloseBy(deadline))
		}
	}
	if m.writes != nil {
		m.writes.close()
	}
	m.events.close()
	m.closeErr = errors.Join(errs...)
	return m.closeErr
}

// upstreamEvent is every upstream's OnEvent. It runs on the upstream's owner
// goroutine, so it only records and queues. Events of an upstream that was
// replaced are not heard.
func (m *Manager) upstreamEvent(s *managed, up *upstream.Upstream, ev upstream.Event) {
	m.mu.Lock()
	current := s.up == up
	m.mu.Unlock()
	if !current {
		return
	}
	switch ev.Kind {
	case upstream.EventState:
		out := Event{Kind: EventState, Server: ev.Server, State: stateOf(ev.To), Err: ev.Err, At: ev.At}
		m.mu.Lock()
		if s.disconnected && ev.To == upstream.Closed {
			out.State = StateDisconnected
		}
		m.mu.Unlock()
		if out.State == StateFailed || out.State == StateCrashLoop {
			out.Source = s.cfg.Source
		}
		m.emit(out)
		if ev.To == upstream.Connected {
			m.writes.put(s, up)
		}
	case upstream.EventList:
		if ev.List == upstream.Tools {
			m.writes.put(s, up)
		}
	case upstream.EventReloadFailed:
		m.emit(Event{Kind: EventReloadFailed, Server: ev.Server, List: ev.List.String(), Err: ev.Err, At: ev.At})
	case upstream.EventResourceUpdated:
		m.emit(Event{Kind: EventResourceUpdated, Server: ev.Server, URI: ev.URI, At: ev.At})
	}
	m.publish()
}
