//lint:file-ignore SA1019 Switchboard forwards logging for as long as servers and clients use it.

package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/hooks"
	"github.com/switchboard-mcp/switchboard/internal/identity"
)

// sessions is the set of client sessions the gateway follows, from the
// first moment it needs one (its handshake, its first list or request)
// until it ends. It holds upstream, for all of them, what they asked for:
// resource subscriptions, held while any session wants them and dropped
// when the last one unsubscribes or goes away, and the most verbose
// logging level any session wants. It sends each session's notifications
// through the session's outbox.
type sessions struct {
	m          *switchboard.Manager
	hooks      hooks.Gateway
	setLevel   func(context.Context, mcp.LoggingLevel) error // asks the servers for a logging level
	logger     *slog.Logger
	queueLimit int           // Options.NotifyQueue
	writeLimit time.Duration // Options.StreamWriteTimeout
	overflowed func()        // called for each session closed for queueLimit
	// limited is the forwarder's: it applies the rate limits to a
	// subscription that reaches a server. Set once, before any request.
	limited func(ctx context.Context, q *switchboard.Query) context.Context

	// uris serializes the subscription changes of each URI, and is held
	// across the upstream requests they make: a subscribe and an
	// unsubscribe of one URI never cross, and a server slow to answer
	// holds up the changes of its own URIs, no other. Lock order: uris,
	// then mu.
	uris uriLocks

	// mu guards the following, and is never held across a request: every
	// handshake and forwarded request takes it. Lock order: mu, then a
	// session's own.
	mu     sync.Mutex
	byID   map[*mcp.ServerSession]*session
	closed bool
	subs   map[*session]map[string]bool // each session's subscriptions
	levels map[*session]mcp.LoggingLevel
	// level is the level the servers were last asked for, and asking
	// whether a goroutine is asking them now: it asks again for the level
	// the sessions want by the time it is done, so that no one waits
	// behind it, and no lock is held while the servers answer.
	level  mcp.LoggingLevel
	asking bool

	// ends holds each session's done channel, for the requests' peers to
	// read without a lock.
	ends  sync.Map       // *mcp.ServerSession → chan struct{}
	watch sync.WaitGroup // a goroutine per session until it ends, and its sender
}

func newSessions(m *switchboard.Manager, h hooks.Gateway, o *Options) *sessions {
	return &sessions{
		m: m, hooks: h, setLevel: h.SetLoggingLevel, logger: o.Logger, queueLimit: o.notifyQueue(), writeLimit: o.streamWriteTimeout(),
		overflowed: func() { o.dropped(DropNotifyQueueFull) },
		byID:       make(map[*mcp.ServerSession]*session),
		subs:       make(map[*session]map[string]bool),
		levels:     make(map[*session]mcp.LoggingLevel),
	}
}

// of returns the session of ss, following it from now on until it ends;
// nil once the gateway is closing.
func (s *sessions) of(ss *mcp.ServerSession) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ofLocked(ss)
}

// identities returns the identity of each session followed that has one.
func (s *sessions) identities() []*identity.Identity {
	s.mu.Lock()
	sts := slices.Collect(maps.Values(s.byID))
	s.mu.Unlock()
	var ids []*identity.Identity
	for _, st := range sts {
		if id := st.Identity(); id != nil {
			ids = append(ids, id)
		}
	}
	return ids
}

// following returns the session of ss if it is followed, else nil.
func (s *sessions) following(ss *mcp.ServerSession) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byID[ss]
}

func (s *sessions) ofLocked(ss *mcp.ServerSession) *session {
	if st := s.byID[ss]; st != nil || s.closed {
		return st
	}
	st := newSession(ss)
	s.byID[ss] = st
	s.ends.Store(ss, st.done)
	s.watch.Go(func() {
		ss.Wait()
		s.ended(st)
	})
	return st
}

// done returns a channel closed when ss ends; nil once the gateway is
// closing.
func (s *sessions) done(ss *mcp.ServerSession) <-chan struct{} {
	if c, ok := s.ends.Load(ss); ok {
		return c.(chan struct{})
	}
	if st := s.of(ss); st != nil {
		return st.done
	}
	return nil
}

// close lets no session be followed any more, and waits for the sessions'
// goroutines, once the sessions are closed.
func (s *sessions) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.watch.Wait()
}

// ended drops what st held: its subscriptions, unless another session
// holds them too, and its logging level. A subscribe of st still in flight
// drops its own (see subscribe).
func (s *sessions) ended(st *session) {
	s.mu.Lock()
	delete(s.byID, st.ss)
	s.ends.Delete(st.ss)
	st.mu.Lock()
	st.ended = true
	st.mu.Unlock()
	close(st.done)
	held := slices.Collect(maps.Keys(s.subs[st]))
	delete(s.subs, st)
	delete(s.levels, st)
	s.mu.Unlock()
	for _, uri := range held {
		unlock, _ := s.uris.lock(context.Background(), uri) // never fails
		s.dropIfUnwanted(uri)
		unlock()
	}
	s.askLevel(context.Background())
}

// dropIfUnwanted ends the upstream subscription to uri if no session
// holds one any more. The caller holds uri's lock.
func (s *sessions) dropIfUnwanted(uri string) {
	s.mu.Lock()
	wanted := s.wantedLocked(uri)
	s.mu.Unlock()
	if wanted {
		return
	}
	if err := s.dropUpstream(context.Background(), uri); err != nil {
		s.logger.Debug("unsubscribe after the last client left", "uri", uri, "error", err)
	}
}

// upstreamWait bounds an upstream request made for the sessions, which
// holds one of their locks.
const upstreamWait = 10 * time.Second

// dropUpstream ends the upstream subscription to uri. It outlives ctx: a
// modern client unsubscribes by cancelling its subscriptions/listen
// request, and the go-sdk calls the unsubscribe handler with that request's
// context, already cancelled.
func (s *sessions) dropUpstream(ctx context.Context, uri string) error {
	ctx, cancel := context.WithTimeout(hooks.Unfiltered(context.WithoutCancel(ctx)), upstreamWait)
	defer cancel()
	return s.m.UnsubscribeResource(ctx, nil, uri)
}

// wantedLocked reports whether any session holds a subscription to uri.
func (s *sessions) wantedLocked(uri string) bool {
	for _, subs := range s.subs {
		if subs[uri] {
			return true
		}
	}
	return false
}

// subscribe subscribes the client's session to a resource: upstream, if no
// other session is subscribed to it yet. The go-sdk then sends the
// session every resources/updated of that URI.
func (s *sessions) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	uri := req.Params.URI
	unlock, err := s.uris.lock(ctx, uri)
	if err != nil {
		return err
	}
	defer unlock()
	q := s.query(req)
	s.mu.Lock()
	st := s.ofLocked(req.Session)
	wanted := s.wantedLocked(uri)
	s.mu.Unlock()
	if st == nil {
		return fmt.Errorf("subscribe %q: the gateway is closing", uri)
	}
	if wanted && !s.hooks.ResourceVisible(ctx, q, uri) {
		// Held upstream for another session: this one must be allowed
		// it too.
		return notPermitted(kindNameResource, uri)
	}
	if !wanted {
		if err := s.m.SubscribeResource(s.limited(ctx, q), q, uri); err != nil {
			if errors.Is(err, switchboard.ErrUnknownResource) && restricted(ctx, s.m, q, kindNameResource) {
				return notPermitted(kindNameResource, uri)
			}
			return protocolError(ctx, err)
		}
	}
	s.mu.Lock()
	// A session that ended while its subscribe was upstream has had its
	// subscriptions dropped already, without this one.
	ended := s.byID[req.Session] != st
	if !ended {
		if s.subs[st] == nil {
			s.subs[st] = make(map[string]bool)
		}
		s.subs[st][uri] = true
	}
	s.mu.Unlock()
	if ended {
		s.dropIfUnwanted(uri)
	}
	return nil
}

// unsubscribe ends the client session's subscription, and the upstream one
// after the last session leaves.
func (s *sessions) unsubscribe(ctx context.Context, req *mcp.UnsubscribeRequest) error {
	uri := req.Params.URI
	// Not with ctx: it may be cancelled already (see dropUpstream).
	unlock, _ := s.uris.lock(context.WithoutCancel(ctx), uri) // never fails
	defer unlock()
	s.mu.Lock()
	st := s.byID[req.Session]
	if st == nil || !s.subs[st][uri] {
		s.mu.Unlock()
		return nil // nothing to undo: unsubscribing is idempotent
	}
	delete(s.subs[st], uri)
	wanted := s.wantedLocked(uri)
	s.mu.Unlock()
	if wanted {
		return nil
	}
	return protocolError(ctx, s.dropUpstream(ctx, uri))
}

// levelOrder ranks the MCP logging levels, most verbose first.
var levelOrder = []mcp.LoggingLevel{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// setLoggingLevel records a session's logging level, and asks the servers
// for the most verbose level any session wants: the go-sdk sends each
// session only what its own level lets through.
func (s *sessions) setLoggingLevel(ctx context.Context, ss *mcp.ServerSession, level mcp.LoggingLevel) {
	s.mu.Lock()
	if st := s.ofLocked(ss); st != nil {
		s.levels[st] = level
	}
	s.mu.Unlock()
	s.askLevel(ctx)
}

// levelLocked returns the most verbose level any session wants, or "".
func (s *sessions) levelLocked() mcp.LoggingLevel {
	var want mcp.LoggingLevel
	for _, level := range s.levels {
		if level != "" && (want == "" || slices.Index(levelOrder, level) < slices.Index(levelOrder, want)) {
			want = level
		}
	}
	return want
}

// askLevel asks the servers for the most verbose level any session wants,
// unless they were asked for it last, or no session wants any. It outlives
// ctx, bounded. While another goroutine is asking, it returns at once: that
// one asks for the latest level before it stops. So a client's
// logging/setLevel may be answered before the servers are asked for it.
func (s *sessions) askLevel(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.asking {
		return // the one asking asks for the latest level before it stops
	}
	for {
		level := s.levelLocked()
		if level == "" || level == s.level {
			return
		}
		s.level, s.asking = level, true
		s.mu.Unlock()
		askCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), upstreamWait)
		if err := s.setLevel(askCtx, level); err != nil {
			s.logger.Info("setting the servers' logging level", "level", level, "error", err)
		}
		cancel()
		s.mu.Lock()
		s.asking = false
	}
}

// queueNotifications is sending middleware: the notifications of
// queuedMethods go to the session's outbox, and the sender returns at
// once. A session's outbox is sent in order by a goroutine of its own,
// which runs while the outbox holds anything. A session whose outbox
// overflows is closed (see ErrNotifyQueueFull); the client may start a new
// one.
func (s *sessions) queueNotifications(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		ss, ok := req.GetSession().(*mcp.ServerSession)
		if !ok || !queuedMethods[method] {
			return next(ctx, method, req)
		}
		s.enqueue(ss, queued{ctx: context.WithoutCancel(ctx), method: method, req: req, next: next})
		return nil, nil
	}
}

// enqueue adds n to ss's outbox, and starts its sender if none runs.
func (s *sessions) enqueue(ss *mcp.ServerSession, n queued) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.ofLocked(ss)
	if st == nil {
		return // the gateway is closing
	}
	start, overflowed := st.push(n, s.queueLimit)
	switch {
	case start:
		s.watch.Go(func() { st.send(s.writeLimit, s.logger) })
	case overflowed:
		// Close waits for a write in progress, which the stream's write
		// deadline ends.
		s.watch.Go(func() { ss.Close() })
		s.logger.Warn("closing a client session that does not read its notifications",
			"session", ss.ID(), "limit", "NotifyQueue", "queued", s.queueLimit, "error", ErrNotifyQueueFull)
		s.overflowed()
	}
}
