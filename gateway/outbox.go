package gateway

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultNotifyQueue is how many notifications a client session may have
// waiting to be sent when Options.NotifyQueue is zero.
const DefaultNotifyQueue = 256

// DefaultStreamWriteTimeout bounds each write to a client's standalone
// stream (its HTTP GET) when Options.StreamWriteTimeout is zero.
const DefaultStreamWriteTimeout = 10 * time.Second

// queuedMethods are the notifications the go-sdk sends a client session
// outside of any request of the session's, on its standalone stream, from
// a goroutine that tells every session in turn: the manager's event
// dispatcher (resources/updated) or the go-sdk's debounce timer
// (list_changed). They go through the session's outbox, so that a client
// that does not read holds up no other. What a server sends while serving
// a request (log messages, progress) goes on that request's own response,
// from the goroutine of that server's session, and is bounded by
// Options.StreamWriteTimeout only if the client reads it on a GET (a
// resumed stream).
var queuedMethods = map[string]bool{
	"notifications/resources/updated":      true,
	"notifications/tools/list_changed":     true,
	"notifications/prompts/list_changed":   true,
	"notifications/resources/list_changed": true,
}

// ErrNotifyQueueFull is why a client session was closed: it left more
// notifications unread than Options.NotifyQueue holds.
var ErrNotifyQueueFull = errors.New("the client does not read its notifications: its queue is full")

// A queued notification waits in a session's outbox.
type queued struct {
	ctx    context.Context // without cancel: the sender's ends when it returns
	method string
	req    mcp.Request
	next   mcp.MethodHandler
}

// queueNotifications is sending middleware: the notifications of
// queuedMethods go to the session's outbox, and the sender returns at
// once. A session's outbox is sent in order by a goroutine of its own,
// which runs while the outbox holds anything. A session whose outbox
// overflows is closed (see ErrNotifyQueueFull); the client may start a new
// one.
func (g *Gateway) queueNotifications(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		ss, ok := req.GetSession().(*mcp.ServerSession)
		if !ok || !queuedMethods[method] {
			return next(ctx, method, req)
		}
		g.enqueue(ss, queued{ctx: context.WithoutCancel(ctx), method: method, req: req, next: next})
		return nil, nil
	}
}

// same reports whether n and o tell a client the same thing: the same
// list changed, or the same resource was updated. A client that has one of
// them waiting learns nothing from the other, so that a storm of them,
// however long, takes one place in a slow client's outbox.
func (n queued) same(o queued) bool {
	if n.method != o.method {
		return false
	}
	if n.method != "notifications/resources/updated" {
		return true // a list_changed has no params
	}
	p, ok1 := n.req.GetParams().(*mcp.ResourceUpdatedNotificationParams)
	q, ok2 := o.req.GetParams().(*mcp.ResourceUpdatedNotificationParams)
	return ok1 && ok2 && p.URI == q.URI
}

// enqueue adds n to ss's outbox, unless the same notification waits there
// already, and starts its sender if none runs.
func (g *Gateway) enqueue(ss *mcp.ServerSession, n queued) {
	s := &g.sessions
	s.mu.Lock()
	st := s.trackLocked(g, ss)
	if st == nil || st.overflowed {
		s.mu.Unlock()
		return // the gateway or the session is closing
	}
	if slices.ContainsFunc(st.outbox, n.same) {
		s.mu.Unlock()
		return // the client will be told once: it need not be told twice
	}
	limit := g.notifyQueue()
	if len(st.outbox) < limit {
		st.outbox = append(st.outbox, n)
		if !st.sending {
			st.sending = true
			s.watch.Go(func() { g.send(ss, st) })
		}
		s.mu.Unlock()
		return
	}
	st.overflowed, st.outbox = true, nil
	// Close waits for a write in progress, which the stream's write
	// deadline ends.
	s.watch.Go(func() { ss.Close() })
	s.mu.Unlock()
	g.opts.Logger.Warn("closing a client session that does not read its notifications",
		"session", ss.ID(), "limit", "NotifyQueue", "queued", limit, "error", ErrNotifyQueueFull)
	g.dropped(DropNotifyQueueFull)
}

// send sends ss's outbox in order until it is empty or ss has ended.
func (g *Gateway) send(ss *mcp.ServerSession, st *sessionState) {
	s := &g.sessions
	for {
		s.mu.Lock()
		if len(st.outbox) == 0 || s.byID[ss] != st {
			st.sending, st.outbox = false, nil
			s.mu.Unlock()
			return
		}
		n := st.outbox[0]
		st.outbox[0] = queued{}
		st.outbox = st.outbox[1:]
		s.mu.Unlock()
		ctx, cancel := context.WithTimeout(n.ctx, g.streamWriteTimeout())
		if _, err := n.next(ctx, n.method, n.req); err != nil {
			// Many clients open no stream to be told on: not news for
			// the operator (see sdkLog).
			g.opts.Logger.Debug("calling "+n.method, "session", ss.ID(), "error", err)
		}
		cancel()
	}
}

// notifyQueue is Options.NotifyQueue, or its default.
func (g *Gateway) notifyQueue() int {
	if n := g.opts.NotifyQueue; n > 0 {
		return n
	}
	return DefaultNotifyQueue
}

// streamWriteTimeout is Options.StreamWriteTimeout, or its default.
func (g *Gateway) streamWriteTimeout() time.Duration {
	if d := g.opts.StreamWriteTimeout; d > 0 {
		return d
	}
	return DefaultStreamWriteTimeout
}

// writeBounded bounds each write of a GET to /mcp, a client's standalone
// stream, by Options.StreamWriteTimeout: a client that stops reading,
// once the connection's buffers are full, fails the write, and the
// connection is closed, which ends a session's Close waiting on it. Between
// writes the stream has no deadline: it may be quiet for as long as the
// session lives. Served by NewHTTPServer, whose deadlines bound every
// response, the stream's are StreamWriteTimeout instead of WriteTimeout;
// served by any other server, the stream gets a deadlineWriter of its own.
func (g *Gateway) writeBounded(next http.Handler) http.Handler {
	l := &limits{writeTimeout: g.streamWriteTimeout(), log: &g.limitLog}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			next.ServeHTTP(w, r)
			return
		}
		if dw, ok := r.Context().Value(deadlineWriterKey{}).(*deadlineWriter); ok {
			dw.l = l // no write of the response has begun
			next.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		// The connection may serve another request after the stream:
		// without a deadline left of the stream's.
		defer rc.SetWriteDeadline(time.Time{})
		next.ServeHTTP(&deadlineWriter{ResponseWriter: w, rc: rc, l: l}, r)
	})
}
