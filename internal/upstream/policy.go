package upstream

import (
	"math/rand/v2"
	"time"
)

// The reconnect policy (design §3 and §3b). They are constants, not options:
// they are the product's promise, and tests drive them with
// testing/synctest.
const (
	// jitter spreads each delay by ±20%, so that upstreams lost together do
	// not reconnect in lockstep.
	jitter = 0.2
	// backgroundBase and backgroundMax bound the quiet attempts after the
	// ladder: 15 s, doubling, to 5 min. A server in crash-loop is tried at
	// backgroundMax.
	backgroundBase = 15 * time.Second
	backgroundMax  = 5 * time.Minute
	// breakerLimit crashes in any breakerWindow open the breaker: the
	// server is in crash-loop. A crash is a session that was established
	// and lost before stablePeriod.
	breakerLimit  = 6
	breakerWindow = 30 * time.Second
	// stablePeriod of connection clears the breaker's history, and closes
	// it.
	stablePeriod = 60 * time.Second
	// idleProbe is how long a session may sit unused before it is probed,
	// with probeTimeout, before its next use.
	idleProbe    = 30 * time.Second
	probeTimeout = time.Second
)

// ladder is the delay before each attempt after a failed one: the first
// attempt is at once (after a loss too), then 0.5, 1, 2 and 4 s.
var ladder = [...]time.Duration{0, 500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second}

// jittered spreads d by ±jitter, drawing from rnd (a float in [0, 1)).
func jittered(d time.Duration, rnd func() float64) time.Duration {
	return time.Duration(float64(d) * (1 - jitter + 2*jitter*rnd()))
}

// reconnectDelay returns the delay before the attempt that follows n
// consecutive failed attempts, and whether it is still on the ladder. Past
// the ladder, quiet background attempts start at backgroundBase and double
// up to backgroundMax, for ever. It is a pure function of consecutive
// failures, as backoff should be.
func reconnectDelay(n int, rnd func() float64) (d time.Duration, onLadder bool) {
	if n < len(ladder) {
		return jittered(ladder[n], rnd), true
	}
	return jittered(backgroundDelay(n-len(ladder)), rnd), false
}

// backgroundDelay is the delay before the nth quiet background attempt.
func backgroundDelay(n int) time.Duration { return doubled(backgroundBase, n) }

// doubled is d doubled n times, up to backgroundMax.
func doubled(d time.Duration, n int) time.Duration {
	for range n {
		if d >= backgroundMax/2 {
			return backgroundMax
		}
		d *= 2
	}
	return d
}

// breaker counts crashes, not failed attempts: sessions that were
// established and lost before stablePeriod, as oh-my-pi counts reconnects.
// Past breakerLimit in any breakerWindow it opens, so that a server that
// crashes as soon as it starts cannot make us spawn it without end
// (oh-my-pi #1592: 66,000 processes). While open, the server is tried at
// backgroundMax, and any crash keeps it open; a stable connection or a
// manual reconnect closes it. A server that is merely down never opens it:
// its failed attempts follow the schedule. It is owned by the owner
// goroutine and needs no lock.
type breaker struct {
	crashes []time.Time // within the window, oldest first
	open    bool
}

// lost records the loss, at now, of a session established at since, and
// reports whether the breaker is open.
func (b *breaker) lost(since, now time.Time) bool {
	if now.Sub(since) >= stablePeriod {
		b.reset()
		return false
	}
	keep := b.crashes[:0]
	for _, t := range b.crashes {
		if now.Sub(t) < breakerWindow {
			keep = append(keep, t)
		}
	}
	b.crashes = append(keep, now)
	if len(b.crashes) >= breakerLimit {
		b.open = true
	}
	return b.open
}

// reset forgets every crash and closes the breaker: after a stable
// connection, a manual reconnect or a new config.
func (b *breaker) reset() {
	b.crashes = b.crashes[:0]
	b.open = false
}

// defaultRand is the jitter source: math/rand/v2's, safe for concurrent use.
func defaultRand() float64 { return rand.Float64() }
