//lint:file-ignore SA1019 A process per session is offered its client's roots while clients and servers use them.

package switchboard

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/internal/upstream"
)

// sessionServers holds the processes of servers that run one per peer
// session (config processPerSession). The manager's own upstream of such a
// server lists what it offers and serves requests made for no peer; a
// request made for a peer whose end can be known goes to that peer's own
// upstream, started on its first request and closed when the peer's
// session ends or the manager closes. Nothing the server asks while serving
// a request can then reach another client.
//
// A server's processes follow what the host does to the server: a reload
// that changes its entry changes theirs (or ends them, if it no longer
// runs a process per session), Reconnect restarts them, and Disconnect or
// a reload that removes the server ends them; the session's next request
// starts a new one.
type sessionServers struct {
	mu     sync.Mutex
	byKey  map[sessionKey]*sessionServer
	closed bool
	reaped sync.WaitGroup // one goroutine per upstream, until it is closed or taken
}

// sessionServer is the process of one server for one session.
type sessionServer struct {
	*upstream.Upstream
	taken chan struct{} // closed by take: whoever took it closes it
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
	own, closed := s.byKey[key], s.closed
	s.mu.Unlock()
	switch {
	case closed:
		return nil, fmt.Errorf("server %q: %w", up.Name(), ErrClosed)
	case own != nil:
		return own.Upstream, nil
	}
	// The process is the client's own: it gets the client's roots, which
	// the server may ask for as soon as it starts. Asked before the lock:
	// the client may take its time.
	rootsCtx, cancel := context.WithTimeout(ctx, rootsWait)
	roots := peerRoots(rootsCtx, p)
	cancel()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, fmt.Errorf("server %q: %w", up.Name(), ErrClosed)
	}
	if own := s.byKey[key]; own != nil {
		return own.Upstream, nil // another request of the session was first
	}
	if !m.servesPerSession(up) {
		// Changed since the request looked: the host took the processes
		// of this server meanwhile, and starts no more.
		return up, nil
	}
	own = &sessionServer{taken: make(chan struct{})}
	own.Upstream = upstream.New(up.Config(), &upstream.Options{
		Client:         m.opts.Client,
		Logger:         m.opts.Logger.With("server", up.Name(), "process", "per-session"),
		LookupEnv:      m.opts.LookupEnv,
		Dial:           m.opts.Dial,
		Roots:          roots,
		OnSkippedLine:  m.skipHook(up.Name()),
		LogSkippedWith: up, // one log of them per server
		TracerProvider: m.opts.TracerProvider,
		// No OnEvent: its lists and states are the session's own
		// business, and the manager's view follows the shared upstream.
	})
	if level := up.LoggingLevel(); level != "" {
		_ = own.SetLoggingLevel(ctx, level) // not connected: kept for its session
	}
	if s.byKey == nil {
		s.byKey = make(map[sessionKey]*sessionServer)
	}
	s.byKey[key] = own
	own.Start(nil)
	s.reaped.Go(func() {
		select {
		case <-p.Done():
		case <-m.closing.Done():
		case <-own.taken:
			return
		}
		s.mu.Lock()
		mine := s.byKey[key] == own
		if mine {
			delete(s.byKey, key)
		}
		s.mu.Unlock()
		if mine { // else taken meanwhile, and closed by its taker
			own.Close(time.Now().Add(m.opts.CloseTimeout))
		}
	})
	return own.Upstream, nil
}

// servesPerSession reports whether up is still the upstream of its server,
// a process per session and neither disabled nor disconnected by the host:
// whatever ends the processes of a server (Reconfigure, Disconnect) makes
// it false first, and then takes them, under the same lock as serverFor.
func (m *Manager) servesPerSession(up *upstream.Upstream) bool {
	if m.view.Load().byName[up.Name()] != up || !up.PerSession() {
		return false
	}
	switch up.State() {
	case upstream.Disabled, upstream.Disconnected, upstream.Closed:
		return false
	}
	return true
}

// peerRoots returns the roots of p's client, or nil if it offers none or
// cannot be asked (a client on revision 2026-07-28 or later is not asked
// while it waits for an answer).
func peerRoots(ctx context.Context, p upstream.Peer) []*mcp.Root {
	res, err := p.ListRoots(ctx, &mcp.ListRootsParams{})
	if err != nil || res == nil {
		return nil
	}
	if res.Roots == nil {
		return []*mcp.Root{}
	}
	return res.Roots
}

// peerRootsChanged tells the processes that p's session has of its own
// (see config processPerSession) that its roots changed: each is offered
// the new roots, and told so. It returns at once; the client is asked for
// its roots in the background.
func (m *Manager) peerRootsChanged(p Peer) {
	s := &m.perSession
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	var own []*upstream.Upstream
	for k, u := range s.byKey {
		if k.session == p.Session() {
			own = append(own, u.Upstream)
		}
	}
	if len(own) == 0 {
		return
	}
	s.reaped.Go(func() {
		ctx, cancel := context.WithTimeout(m.closing, rootsWait)
		defer cancel()
		if roots := peerRoots(ctx, p); roots != nil {
			for _, u := range own {
				u.SetRoots(roots)
			}
		}
	})
}

// rootsWait bounds how long a client may take to list its roots.
const rootsWait = 30 * time.Second

// close stops starting processes per session and waits until every one
// started is closed. The manager's closing has begun: their goroutines are
// closing them.
func (s *sessionServers) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.reaped.Wait()
}

// all returns the upstreams of every session.
func (s *sessionServers) all() []*upstream.Upstream {
	return s.of(func(sessionKey) bool { return true })
}

// ofServer returns the upstreams that the sessions have of server.
func (s *sessionServers) ofServer(server string) []*upstream.Upstream {
	return s.of(func(k sessionKey) bool { return k.server == server })
}

func (s *sessionServers) of(keep func(sessionKey) bool) []*upstream.Upstream {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*upstream.Upstream
	for k, own := range s.byKey {
		if keep(k) {
			out = append(out, own.Upstream)
		}
	}
	return out
}

// take removes the upstreams of server from the set and returns them, for
// the caller to close: each session starts another on its next request.
func (s *sessionServers) take(server string) []*upstream.Upstream {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*upstream.Upstream
	for k, own := range s.byKey {
		if k.server == server {
			delete(s.byKey, k)
			close(own.taken)
			out = append(out, own.Upstream)
		}
	}
	return out
}
