package gateway

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

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

// An outbox holds a session's notifications waiting to be sent, oldest
// first, at most Options.NotifyQueue (see sessions.queueNotifications).
// Guarded by its session's lock.
type outbox struct {
	queue      []queued
	sending    bool // a goroutine sends them
	overflowed bool // the outbox overflowed: the session is being closed
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

// writeBounded bounds each write of a GET to /mcp, a client's standalone
// stream, by Options.StreamWriteTimeout: a client that stops reading,
// once the connection's buffers are full, fails the write, and the
// connection is closed, which ends a session's Close waiting on it. Between
// writes the stream has no deadline: it may be quiet for as long as the
// session lives. Served by NewHTTPServer, whose deadlines bound every
// response, the stream's are StreamWriteTimeout instead of WriteTimeout;
// served by any other server, the stream gets a deadlineWriter of its own.
func writeBounded(timeout time.Duration, log *limitLog, next http.Handler) http.Handler {
	l := &limits{writeTimeout: timeout, log: log}
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
