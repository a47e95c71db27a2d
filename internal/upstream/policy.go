package upstream

import (
	"math/rand/v2"
	"time"
)

// The reconnect policy (design §3). They are constants, not options: they
// are the product's promise, and tests drive them with testing/synctest.
const (
	// jitter spreads each ladder delay by ±20%, so that upstreams lost
	// together do not reconnect in lockstep.
	jitter = 0.2
	// backgroundBase and backgroundMax bound the quiet attempts after the
	// ladder: 15 s, doubling, to 5 min.
	backgroundBase = 15 * time.Second
	backgroundMax  = 5 * time.Minute
	// breakerLimit connection attempts are allowed in any breakerWindow.
	breakerLimit  = 6
	breakerWindow = 30 * time.Second
	// stablePeriod of connection clears the breaker's history.
	stablePeriod = 60 * time.Second
	// idleProbe is how long a session may sit unused before it is probed,
	// with probeTimeout, before its next use.
	idleProbe    = 30 * time.Second
	probeTimeout = time.Second
)

// ladder is the delay before each reconnect attempt after a connection is
// lost: at once, then 0.5, 1, 2 and 4 s.
var ladder = [...]time.Duration{0, 500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second}

// jittered spreads d by ±jitter, drawing from rnd (a float in [0, 1)).
func jittered(d time.Duration, rnd func() float64) time.Duration {
	return time.Duration(float64(d) * (1 - jitter + 2*jitter*rnd()))
}

// reconnectDelay returns the delay before the attempt that follows n failed
// attempts since the connection was lost, and whether it is still on the
// ladder. Past the ladder, quiet background attempts start at
// backgroundBase and double up to backgroundMax. It is a pure function of
// consecutive failures, as backoff should be.
func reconnectDelay(n int, rnd func() float64) (d time.Duration, onLadder bool) {
	if n < len(ladder) {
		return jittered(ladder[n], rnd), true
	}
	return jittered(backgroundDelay(n-len(ladder)), rnd), false
}

// backgroundDelay is the delay before the nth quiet background attempt.
func backgroundDelay(n int) time.Duration {
	d := backgroundBase
	for range n {
		if d >= backgroundMax/2 {
			return backgroundMax
		}
		d *= 2
	}
	return d
}

// breaker limits connection attempts to breakerLimit in any breakerWindow,
// so that a server that crashes as soon as it starts cannot make us spawn
// it without end (oh-my-pi #1592: 66,000 processes). It is owned by the
// owner goroutine and needs no lock.
type breaker struct {
	attempts []time.Time // within the window, oldest first
}

// allow records an attempt at now and reports whether it may go ahead.
func (b *breaker) allow(now time.Time) bool {
	keep := b.attempts[:0]
	for _, t := range b.attempts {
		if now.Sub(t) < breakerWindow {
			keep = append(keep, t)
		}
	}
	b.attempts = keep
	if len(b.attempts) >= breakerLimit {
		return false
	}
	b.attempts = append(b.attempts, now)
	return true
}

// reset forgets every attempt: after a stable connection, or a manual
// reconnect.
func (b *breaker) reset() { b.attempts = b.attempts[:0] }

// defaultRand is the jitter source: math/rand/v2's, safe for concurrent use.
func defaultRand() float64 { return rand.Float64() }
