package gateway

import (
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultMaxSessions is how many client sessions the gateway holds at once
// when Options.MaxSessions is zero.
const DefaultMaxSessions = 1000

// sessionRetryAfter is the Retry-After of a new session refused for
// MaxSessions: idle sessions expire in minutes, busy ones may end sooner.
const sessionRetryAfter = 30 * time.Second

// Why the gateway dropped a client session, or refused one, for
// Options.SessionDropped.
const (
	// DropNotifyQueueFull: the session left more notifications unread than
	// Options.NotifyQueue holds, and was closed.
	DropNotifyQueueFull = "notify_queue_full"
	// DropMaxSessions: a new session was refused, for the gateway held
	// Options.MaxSessions already.
	DropMaxSessions = "max_sessions"
)

// dropped tells Options.SessionDropped, if set.
func (g *Gateway) dropped(reason string) {
	if g.opts.SessionDropped != nil {
		g.opts.SessionDropped(reason)
	}
}

// maxSessions is Options.MaxSessions, its default, or 0 for no limit.
func (g *Gateway) maxSessions() int {
	switch n := g.opts.MaxSessions; {
	case n == 0:
		return DefaultMaxSessions
	case n < 0:
		return 0
	default:
		return n
	}
}

// opening counts the requests that may open a Streamable HTTP session,
// which the go-sdk's session list does not hold yet.
type opening struct {
	mu sync.Mutex
	n  int
}

// capSessions refuses a request that would open a Streamable HTTP session
// (a POST without Mcp-Session-Id) while the gateway holds
// Options.MaxSessions, counting those being opened: 503, with Retry-After
// and a JSON-RPC error naming the limit. Sessions of every transport
// count. Requests of existing sessions go through. A stateless gateway
// holds no session.
func (g *Gateway) capSessions(next http.Handler) http.Handler {
	limit := g.maxSessions()
	if g.opts.Stateless || limit == 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Header.Get("Mcp-Session-Id") != "" {
			next.ServeHTTP(w, r)
			return
		}
		if !g.opening.begin(g.server, limit) {
			g.refuseSession(w, limit)
			return
		}
		defer g.opening.end()
		next.ServeHTTP(w, r)
	})
}

// begin counts a session being opened, unless the sessions held and being
// opened are limit already.
func (o *opening) begin(server *mcp.Server, limit int) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := o.n
	for range server.Sessions() {
		n++
	}
	if n >= limit {
		return false
	}
	o.n++
	return true
}

// end uncounts a session being opened: the go-sdk holds it by now, or
// refused it.
func (o *opening) end() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.n--
}

// refuseSession answers a request for a new session over the limit, and
// warns (see limitLog).
func (g *Gateway) refuseSession(w http.ResponseWriter, limit int) {
	g.dropped(DropMaxSessions)
	g.limitLog.hit("sessions", "refusing new client sessions: the gateway holds its limit", "limit", "MaxSessions", "sessions", limit)
	msg := fmt.Sprintf("too many sessions: the gateway holds %d, its limit (MaxSessions); retry later", limit)
	w.Header().Set("Retry-After", strconv.Itoa(int(sessionRetryAfter/time.Second)))
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusServiceUnavailable)
	fmt.Fprintf(w, `{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":%q}}`+"\n", msg)
}
