package upstream

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	neturl "net/url"
	"sync/atomic"
	"time"
)

// A server that comes back (design §3b). The schedule's attempts grow
// sparse over a long outage: 15 s apart, then up to 5 min. While requests
// want a server that is down, the owner checks cheaply whether it is back,
// at most every checkEvery, and attempts at once when it is. A check opens
// no session. A check that finds the server back while the attempts it
// makes still fail backs off as the schedule does, doubling the time to
// the next check, until a check finds the server down again. Without
// demand there are no checks, and the schedule alone applies.
const (
	// checkEvery is the shortest time between two checks.
	checkEvery = time.Second
	// demandWindow is how long a request that found the server down keeps
	// the checks going.
	demandWindow = 10 * time.Second
)

// A Check tells whether a server that is down is back, cheaply and without
// opening a session: nil if it answers. See Options.Check.
type Check func(ctx context.Context) error

// errGatewayAnswer is a check's answer from whatever answers for a server
// that is down: a 502, 503 or 504.
var errGatewayAnswer = errors.New("answered for the server, which is down")

// isGatewayAnswer reports whether an HTTP status is what a proxy or a load
// balancer answers for a server behind it that is down.
func isGatewayAnswer(code int) bool {
	return code == http.StatusBadGateway || code == http.StatusServiceUnavailable || code == http.StatusGatewayTimeout
}

// frontWatch records whether the last HTTP answer of an upstream came from
// something that answers for its server while the server is down (a 502,
// 503 or 504); then a TCP connect cannot tell whether the server is back.
type frontWatch struct{ down atomic.Bool }

// saw records the status of an answer.
func (f *frontWatch) saw(code int) {
	if down := isGatewayAnswer(code); f.down.Load() != down {
		f.down.Store(down)
	}
}

// reach checks the server at raw, its last resolved URL, through pool: a
// TCP connect to its host and port, or, where that cannot tell (frontDown:
// something answered for the server while it was down, or the requests go
// through an HTTP proxy), a HEAD request, whose answer must not be a 502,
// 503 or 504. Any other answer, even an error, comes from the server.
func reach(ctx context.Context, raw string, pool *http.Transport, frontDown bool) error {
	url, err := neturl.Parse(raw)
	if err != nil || url.Host == "" {
		return errors.New("no URL to check yet")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, raw, nil)
	if err != nil {
		return err
	}
	proxy, err := pool.Proxy(req)
	if err != nil {
		return err
	}
	if proxy == nil && !frontDown {
		conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", hostPort(url))
		if err != nil {
			return err
		}
		return conn.Close()
	}
	resp, err := pool.RoundTrip(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if isGatewayAnswer(resp.StatusCode) {
		return fmt.Errorf("%w: %s", errGatewayAnswer, resp.Status)
	}
	return nil
}

// hostPort returns the address to dial for url, with the scheme's port if
// it names none.
func hostPort(url *neturl.URL) string {
	port := url.Port()
	if port == "" {
		port = "80"
		if url.Scheme == "https" {
			port = "443"
		}
	}
	return net.JoinHostPort(url.Hostname(), port)
}

// checks paces the owner goroutine's checks. Only the owner uses it.
type checks struct {
	check Check          // nil: the server cannot be checked
	rand  func() float64 // the jitter's source
	next  time.Time      // the earliest time of the next check
	// failed counts the attempts that followed a check that found the
	// server back and failed, since a check last found it down.
	failed int
}

// gap is the time from one check to the next: checkEvery, doubling with
// each attempt that failed although a check found the server back, up to
// backgroundMax, and jittered as the schedule is, so that upstreams that
// went down together do not check, nor attempt, in lockstep; but never
// less than checkEvery.
func (c *checks) gap() time.Duration {
	return max(jittered(doubled(checkEvery, c.failed), c.rand), checkEvery)
}

// run checks the server, within probeTimeout and ctx, and reports whether
// it is back.
func (c *checks) run(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	back := c.check(ctx) == nil
	if !back {
		c.failed = 0
	}
	c.next = time.Now().Add(c.gap())
	return back
}

// attemptFailed records that an attempt that a check made failed.
func (c *checks) attemptFailed() {
	c.failed++
	c.next = time.Now().Add(c.gap())
}
