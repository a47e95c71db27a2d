package switchboard

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/switchboard-mcp/switchboard/internal/upstream"
)

// sessionServers holds the processes of servers that run one per peer
// session (config processPerSession). The manager's own upstream of such a
// server lists what it offers and serves requests made for no peer; a
// request made for a peer whose end can be known goes to that peer's own
// upstream, started on its first request and closed when the peer's
// session ends or the manager closes. Nothing the server asks while serving
// a request can then reach another client.
type sessionServers struct {
	mu     sync.Mutex
	byKey  map[sessionKey]*upstream.Upstream
	closed bool
	reaped sync.WaitGroup // one goroutine per upstream, until it is closed
}

type sessionKey struct {
	server  string
	session any
}

// serverFor returns the upstream that serves a request made with ctx to
// up's server: up itself, unless the server runs a process per session and
// ctx carries a peer whose end can be known.
func (m *Manager) serverFor(ctx context.Context, up *upstream.Upstream) (*upstream.Upstream, error) {
	if !up.PerSession() {
		return up, nil
	}
	p := upstream.PeerOf(ctx)
	if p == nil || p.Done() == nil {
		return up, nil
	}
	s := &m.perSession
	key := sessionKey{up.Name(), p.Session()}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, fmt.Errorf("server %q: %w", up.Name(), ErrClosed)
	}
	if own := s.byKey[key]; own != nil {
		return own, nil
	}
	own := upstream.New(up.Config(), &upstream.Options{
		Client:    m.opts.Client,
		Logger:    m.opts.Logger.With("server", up.Name(), "process", "per-session"),
		LookupEnv: m.opts.LookupEnv,
		Dial:      m.opts.Dial,
		// No OnEvent: its lists and states are the session's own
		// business, and the manager's view follows the shared upstream.
	})
	if level := up.LoggingLevel(); level != "" {
		_ = own.SetLoggingLevel(ctx, level) // not connected: kept for its session
	}
	if s.byKey == nil {
		s.byKey = make(map[sessionKey]*upstream.Upstream)
	}
	s.byKey[key] = own
	own.Start()
	s.reaped.Go(func() {
		select {
		case <-p.Done():
		case <-m.closing.Done():
		}
		s.mu.Lock()
		delete(s.byKey, key)
		s.mu.Unlock()
		own.CloseBy(time.Now().Add(m.opts.CloseTimeout))
	})
	return own, nil
}

// close stops starting processes per session and waits until every one
// started is closed. The manager's closing has begun: their goroutines are
// closing them.
func (s *sessionServers) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.reaped.Wait()
}

// count returns how many upstreams per session server has, for tests.
func (s *sessionServers) count(server string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for k := range s.byKey {
		if k.server == server {
			n++
		}
	}
	return n
}
