package upstream

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// noteCount orders what a server says during a request before the request's
// end. The go-sdk client hands a response to its caller at once, but queues
// notifications for its handlers: a log message or a progress notification
// sent just before a response would otherwise reach the peer after the
// peer's request ended, too late. The transport counts those notifications
// as they arrive (seen), the handlers as they are done (handled), and a
// request made for a peer waits, briefly, for the handlers to catch up with
// what arrived before its response.
type noteCount struct {
	// lines is set once a stdio transport counts every notification line
	// (see stdoutFilter); otherwise only linked ones count.
	lines   atomic.Bool
	mu      sync.Mutex
	seen    uint64
	handled uint64
	changed chan struct{} // closed and replaced on every handled
}

// noteWait bounds the wait for the handlers: they run in microseconds, but
// one stuck behind a slow request (a sampling request waiting for its
// client) must not hold a response for long.
const noteWait = 500 * time.Millisecond

func (n *noteCount) arrived() {
	n.mu.Lock()
	n.seen++
	n.mu.Unlock()
}

func (n *noteCount) done() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.handled++
	if n.changed != nil {
		close(n.changed)
		n.changed = nil
	}
}

// catchUp waits until the handlers have handled every notification seen so
// far, or noteWait passes, or ctx ends. After noteWait, what is still
// missing is forgiven: a notification the go-sdk dropped (bad params, a
// session that ended) is never handled, and must not hold every later
// request for noteWait.
func (n *noteCount) catchUp(ctx context.Context) {
	n.mu.Lock()
	target, caughtUp := n.seen, n.handled >= n.seen
	n.mu.Unlock()
	if caughtUp {
		return // the usual case: no timer to make
	}
	timer := time.NewTimer(noteWait)
	defer timer.Stop()
	for {
		n.mu.Lock()
		if n.handled >= target {
			n.mu.Unlock()
			return
		}
		if n.changed == nil {
			n.changed = make(chan struct{})
		}
		changed := n.changed
		n.mu.Unlock()
		select {
		case <-changed:
		case <-timer.C:
			n.mu.Lock()
			n.handled = max(n.handled, target)
			n.mu.Unlock()
			return
		case <-ctx.Done():
			return
		}
	}
}
