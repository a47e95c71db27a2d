package switchboard

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/catalog"
	"github.com/switchboard-mcp/switchboard/internal/upstream"
)

// DefaultCloseTimeout bounds [Manager.Close] when [Options.CloseTimeout] is
// zero.
const DefaultCloseTimeout = 10 * time.Second

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
}

// A Manager connects to many MCP servers and exposes their tools as one
// catalog. Its methods are safe for concurrent use.
type Manager struct {
	// Set by New, read-only after.
	opts    Options
	servers []*managed // configured order
	byName  map[string]*managed
	created time.Time
	events  *dispatcher

	// lifecycle serializes Connect and Close.
	lifecycle sync.Mutex
	closed    bool
	closeErr  error

	// viewMu guards the following.
	viewMu    sync.Mutex
	view_     *catalog.View
	viewGen   uint64
	published map[string]bool // public names in the last ToolsChanged event
}

// managed is one configured server.
type managed struct {
	cfg      config.Server
	rejected error              // non-nil if the config rejected the entry
	up       *upstream.Upstream // nil if disabled or rejected
}

// New returns a Manager for the servers of cfg. It does no I/O: call
// [Manager.Connect]. Entries that cfg rejected are kept, and shown as failed
// with their config error, so that status and readiness account for them.
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
	m := &Manager{
		opts:      o,
		byName:    make(map[string]*managed),
		created:   time.Now(),
		events:    newDispatcher(o.Logger),
		published: make(map[string]bool),
	}
	if cfg == nil {
		cfg = &config.Config{}
	}
	for _, srv := range cfg.Servers {
		s := &managed{cfg: srv.Clone()}
		if err := srv.Validate(); err != nil {
			s.rejected = err
		} else if srv.IsEnabled() {
			s.up = upstream.New(srv, &upstream.Options{
				Client:    o.Client,
				Logger:    o.Logger.With("server", srv.Name),
				LookupEnv: o.LookupEnv,
				Dial:      o.Dial,
				OnEvent:   m.upstreamEvent,
			})
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

// Connect connects every enabled server in parallel and waits until each has
// connected or failed, or until ctx is done. A server that fails does not stop
// the others: its error is kept in [Manager.Status]. Connect returns an error
// only if ctx ends first (the attempts go on in the background) or the
// manager is closed. Calling it again does not reconnect anything.
func (m *Manager) Connect(ctx context.Context) error {
	m.lifecycle.Lock()
	defer m.lifecycle.Unlock()
	if m.closed {
		return fmt.Errorf("connect: %w", ErrClosed)
	}
	var started []*upstream.Upstream
	for _, s := range m.servers {
		if s.up != nil {
			s.up.Start()
			started = append(started, s.up)
		}
	}
	for _, up := range started {
		if err := up.Connect(ctx); err != nil && ctx.Err() != nil {
			return fmt.Errorf("connect: %w", ctx.Err())
		}
	}
	return nil
}

// Close closes every server in reverse configured order, carrying on past
// failures, and returns them joined. It is bounded by Options.CloseTimeout:
// as the deadline nears, stdio servers are signalled sooner. Close is
// idempotent; later calls return the first call's result.
func (m *Manager) Close() error {
	m.lifecycle.Lock()
	defer m.lifecycle.Unlock()
	if m.closed {
		return m.closeErr
	}
	m.closed = true
	deadline := time.Now().Add(m.opts.CloseTimeout)
	var errs []error
	for i := len(m.servers) - 1; i >= 0; i-- {
		if up := m.servers[i].up; up != nil {
			errs = append(errs, up.CloseBy(deadline))
		}
	}
	m.events.close()
	m.closeErr = errors.Join(errs...)
	return m.closeErr
}

// upstreamEvent is every upstream's OnEvent. It runs on the upstream's owner
// goroutine, so it only records and queues.
func (m *Manager) upstreamEvent(ev upstream.Event) {
	m.events.send(Event{Kind: EventState, Server: ev.Server, State: stateOf(ev.To), Err: ev.Err, At: ev.At})
	m.publishToolChanges()
}
