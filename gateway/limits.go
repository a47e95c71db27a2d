package gateway

import (
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sessionRetryAfter is the Retry-After of a new session refused for
// MaxSessions: idle sessions expire in minutes, busy ones may end sooner.
const sessionRetryAfter = 30 * time.Second

// opening counts the requests that may open a Streamable HTTP session,
// which the go-sdk's session list does not hold yet, or not wholly: the
// go-sdk lists a session a moment before it can be closed (v1.8.0 panics
// closing one then), so Gateway.Close waits for them (see closeWait).
type opening struct {
	mu     sync.Mutex
	n      int
	closed bool       // the gateway is closing: no session opens
	none   *sync.Cond // signalled when n falls to 0; on mu
}

// capSessions refuses a request that would open a Streamable HTTP session
// (a POST without Mcp-Session-Id) while the gateway holds
// Options.MaxSessions, counting those being opened, or is closing: 503,
// with Retry-After and a JSON-RPC error naming the limit. Sessions of every
// transport count. Requests of existing sessions go through. A stateless
// gateway holds no session.
func capSessions(server *mcp.Server, o *Options, open *opening, log *limitLog, next http.Handler) http.Handler {
	if o.Stateless {
		return next
	}
	limit, maxBytes := o.maxSessions(), bodyLimit(o.MaxRequestBytes)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Header.Get("Mcp-Session-Id") != "" {
			next.ServeHTTP(w, r)
			return
		}
		// Read before counting: Close waits for the sessions being
		// opened, and a client may never finish its body.
		if r.Body != nil {
			readBody(r, maxBytes)
		}
		switch ok, closed := open.begin(server, limit); {
		case closed:
			refuseJSONRPC(w, "the gateway is closing; retry later")
			return
		case !ok:
			o.dropped(DropMaxSessions)
			log.hit("sessions", "refusing new client sessions: the gateway holds its limit", "limit", "MaxSessions", "sessions", limit)
			refuseJSONRPC(w, fmt.Sprintf("too many sessions: the gateway holds %d, its limit (MaxSessions); retry later", limit))
			return
		}
		defer open.end()
		next.ServeHTTP(w, r)
	})
}

// begin counts a session being opened, unless the sessions held and being
// opened are limit (if not 0) already, or the gateway is closing.
func (o *opening) begin(server *mcp.Server, limit int) (ok, closed bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return false, true
	}
	n := o.n
	for range server.Sessions() {
		n++
	}
	if limit > 0 && n >= limit {
		return false, false
	}
	o.n++
	return true, false
}

// end uncounts a session being opened: the go-sdk holds it by now, or
// refused it.
func (o *opening) end() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.n--; o.n == 0 && o.none != nil {
		o.none.Broadcast()
	}
}

// closeWait lets no more sessions open, and waits until those being opened
// are, or were refused.
func (o *opening) closeWait() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.closed = true
	if o.none == nil {
		o.none = sync.NewCond(&o.mu)
	}
	for o.n > 0 {
		o.none.Wait()
	}
}

// refuseJSONRPC answers a request for a new session with 503, Retry-After
// and a JSON-RPC error that says msg.
func refuseJSONRPC(w http.ResponseWriter, msg string) {
	w.Header().Set("Retry-After", strconv.Itoa(int(sessionRetryAfter/time.Second)))
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusServiceUnavailable)
	fmt.Fprintf(w, `{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":%q}}`+"\n", msg)
}
