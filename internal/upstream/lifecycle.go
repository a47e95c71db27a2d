package upstream

import (
	"context"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/config"
)

// Start asks for the server to be connected, and returns at once, with a
// channel closed when the connection attempt in progress or due ends; it
// is closed already when there is none (the server is connected, or waits
// for a later attempt, or is disabled or closed). It launches the owner
// goroutine on first use. A running upstream is left alone.
func (u *Upstream) Start() <-chan struct{} { return u.StartAfter(nil) }

// StartAfter is Start, except that the owner goroutine, if this call
// launches it, makes its first attempt only once begin is closed (nil: at
// once). The server is connecting from the call. It is for a caller that
// starts many servers at once and must first publish what they expose:
// once their processes start, they could starve that work of the CPU.
func (u *Upstream) StartAfter(begin <-chan struct{}) <-chan struct{} {
	u.mu.Lock()
	defer u.mu.Unlock()
	return doneOf(u.startLocked(begin))
}

// startLocked asks for the server to be connected, and returns the attempt
// in progress or due, or nil. An owner goroutine it launches waits for
// begin first, unless begin is nil.
func (u *Upstream) startLocked(begin <-chan struct{}) *op {
	switch u.state {
	case Closed, Disabled:
		return nil
	case Disconnected:
		u.setStateLocked(Connecting, nil)
	}
	u.want = true
	signal(u.wake)
	if !u.started {
		u.started = true
		go u.run(begin)
	}
	if u.attempting || u.state == Connecting || u.state == Reconnecting {
		return u.next
	}
	return nil
}

// doneOf returns the channel closed when a ends, or a closed one for nil.
func doneOf(a *op) <-chan struct{} {
	if a == nil {
		return closed
	}
	return a.done
}

// closed is a channel closed from the start.
var closed = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// Connect starts the upstream if needed and waits until its connection
// attempt in progress or due settles, or ctx is done. It returns the
// attempt's error. A server that failed and waits for a later attempt
// returns its last error at once. The attempt itself is not bound to ctx:
// it goes on in the background.
func (u *Upstream) Connect(ctx context.Context) error {
	u.mu.Lock()
	a := u.startLocked(nil)
	state, cause := u.state, u.lastErr
	u.mu.Unlock()
	switch {
	case state == Connected:
		return nil
	case a == nil:
		return u.errorf("connect", &UnavailableError{State: state, Err: cause})
	}
	select {
	case <-a.done:
		return u.wrap("connect", a.err)
	case <-ctx.Done():
		return u.errorf("connect", ctx.Err())
	}
}

// Settle waits while the upstream is connecting, for the attempt in
// progress or due, and, once its first session is up, for that session's
// first lists, at most for d (0: no limit) and for ctx. It starts nothing,
// and returns at once when there is nothing to wait for.
func (u *Upstream) Settle(ctx context.Context, d time.Duration) {
	if !u.Settling() {
		return
	}
	if d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	u.mu.Lock()
	a, connecting := u.next, u.state == Connecting
	u.mu.Unlock()
	if connecting {
		select {
		case <-a.done:
		case <-ctx.Done():
			return
		}
	}
	if u.State() == Connected {
		select {
		case <-u.loaded:
		case <-ctx.Done():
		}
	}
}

// Settling reports whether Settle would wait: the upstream is connecting,
// or its first session has not loaded its lists yet.
func (u *Upstream) Settling() bool {
	u.mu.Lock()
	state := u.state
	u.mu.Unlock()
	if state == Connecting {
		return true
	}
	select {
	case <-u.loaded:
		return false
	default:
		return state == Connected
	}
}

// Unproven reports whether the upstream is making its first connection
// (see Settling) with nothing to show for it yet: no tools seeded from the
// cache, no failed attempt, and no session that loaded its lists, ever.
// Only such a server is worth a wait before a client's first lists; since
// is when its current state began, which the wait counts from.
func (u *Upstream) Unproven() (since time.Time, ok bool) {
	select {
	case <-u.loaded:
		return time.Time{}, false // a reconnect, or a new config
	default:
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.seeded || u.failedOnce || u.state != Connecting && u.state != Connected {
		return time.Time{}, false
	}
	return u.since, true
}

// Reconnect asks for a fresh connection now: it drops the current session,
// if any, forgives past crashes (the breaker, and crash-loop), starts the
// upstream if it is not running, and waits for the attempt to end, or for
// ctx. Concurrent calls share one attempt, as does a call made while the
// upstream is connecting (started, and not yet connected or failed). A
// scheduled attempt in progress, whose failure would keep the old
// schedule, is superseded by a fresh one. It returns the attempt's error.
func (u *Upstream) Reconnect(ctx context.Context) error {
	u.mu.Lock()
	a, err := u.reconnectLocked()
	u.mu.Unlock()
	if err != nil {
		return err
	}
	select {
	case <-a.done:
		return u.wrap("reconnect", a.err)
	case <-ctx.Done():
		return u.errorf("reconnect", ctx.Err())
	}
}

// Restart is Reconnect without the wait: it returns at once, with a
// channel closed when the attempt ends (closed already if the upstream is
// disabled or closed).
func (u *Upstream) Restart() <-chan struct{} {
	u.mu.Lock()
	defer u.mu.Unlock()
	a, _ := u.reconnectLocked()
	return doneOf(a)
}

// reconnectLocked asks for a fresh connection now, unless one is in
// progress or due while connecting, and returns the attempt that answers
// it.
func (u *Upstream) reconnectLocked() (*op, error) {
	switch u.state {
	case Closed, Disabled:
		return nil, u.errorf("reconnect", &UnavailableError{State: u.state})
	}
	u.resetBreaker = true
	if u.state != Connecting {
		u.restartLocked()
	}
	return u.next, nil
}

// restartLocked asks the owner for a fresh connection now.
func (u *Upstream) restartLocked() {
	u.restart = true
	u.interruptLocked()
	u.setStateLocked(Connecting, nil)
	u.startLocked(nil)
}

// interruptLocked ends the owner's I/O in progress, if any.
func (u *Upstream) interruptLocked() {
	if u.interrupt != nil {
		u.interrupt()
	}
}

// Disconnect stops the server: it stops every attempt, closes the session
// (ending a stdio server's process group) and leaves the upstream
// Disconnected until Start, Connect or Reconnect. A server that was down
// keeps its last error. Disconnect waits for the session to be closed, or
// for ctx, and returns the close's error. It is idempotent.
func (u *Upstream) Disconnect(ctx context.Context) error {
	u.mu.Lock()
	if u.state == Closed || u.state == Disabled || !u.started {
		u.want = false
		u.mu.Unlock()
		return nil
	}
	stop := u.stopLocked(Disconnected)
	u.mu.Unlock()
	select {
	case <-stop.done:
		if stop.err != nil {
			return u.errorf("disconnect", stop.err)
		}
		return nil
	case <-ctx.Done():
		return u.errorf("disconnect", ctx.Err())
	}
}

// stopLocked asks the owner to stop and close the session, and moves to
// state (Disconnected or Disabled) at once, so that no new request uses
// the session. It returns the op that ends when the session is closed.
func (u *Upstream) stopLocked(state State) *op {
	u.want, u.restart = false, false
	u.interruptLocked()
	var keep error
	if u.state.Down() {
		keep = u.lastErr
	}
	u.setStateLocked(state, keep)
	if u.stopping == nil {
		u.stopping = newOp()
	}
	signal(u.wake)
	return u.stopping
}

// Reconfigure applies a changed config. A config that differs only in what
// the manager decides (prefix, tool filters, required) is taken as is. Any
// other change makes a clean reconnect with the new config, which keeps the
// resource subscriptions and forgives past crashes. A config that disables
// the server stops it (Disabled); one that enables a disabled server leaves
// it Disconnected, to be started. The name never changes.
func (u *Upstream) Reconfigure(srv config.Server) {
	srv.Name = u.name
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.state == Closed {
		return
	}
	cur := u.settings.Load()
	old := cur.cfg
	if old.InFlightLimit() == srv.InFlightLimit() && old.SerializeRequests == srv.SerializeRequests {
		// Keep the slots of the calls in flight, so that their limits hold
		// across the change.
		s := *cur
		s.cfg = srv.Clone()
		u.settings.Store(&s)
	} else {
		u.settings.Store(newSettings(srv))
	}
	if old.Fingerprint() == srv.Fingerprint() {
		return // only the source moved
	}
	same := connectionKey(old) == connectionKey(srv)
	switch {
	case !srv.IsEnabled():
		if u.state != Disabled {
			u.stopLocked(Disabled)
		}
	case u.state == Disabled:
		u.setStateLocked(Disconnected, nil)
	case !same && u.want:
		u.resetBreaker = true
		u.restartLocked()
	}
	u.publishLocked(Event{Kind: EventConfig})
}

// connectionKey is the fingerprint of what the connection depends on: the
// config without what only the manager uses.
func connectionKey(srv config.Server) string {
	srv.Prefix, srv.Tools, srv.Required, srv.Enabled, srv.Source = nil, config.ToolFilter{}, false, nil, ""
	return srv.Fingerprint()
}

// Seed offers the tools the server had last time (from a persistent cache),
// to be listed until the server lists its own. It does nothing once the
// server has listed its tools, or after Close.
func (u *Upstream) Seed(tools []*mcp.Tool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.lists.listed || u.state == Closed || len(tools) == 0 {
		return
	}
	u.lists.tools, u.lists.toolIndex, u.lists.cached = tools, indexTools(tools), true
	u.seeded = true
	u.bumpLocked()
	u.publishLocked(Event{Kind: EventList, List: Tools})
}

// signal sends on a buffered channel of size 1 without blocking: a signal
// already pending covers this one.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// Close stops the server for good: it closes the session, ends a stdio
// server's process group and stops the owner goroutine, and returns when
// every session it opened is closed. It is idempotent and safe for
// concurrent use; every call waits for the teardown and returns its result.
func (u *Upstream) Close() error { return u.CloseBy(time.Time{}) }

// killMargin is how long before Close's deadline the stops in progress skip
// to SIGKILL, so that the processes are gone by the deadline: a Close whose
// deadline is nearer than that kills at once.
const killMargin = 250 * time.Millisecond

// CloseBy is [Upstream.Close] with a deadline: shortly before it, every
// stop in progress skips to SIGKILL and every connection's I/O (a DELETE
// that hangs, say) ends, so that Close returns by the deadline. A zero
// deadline lets each step of each stop take its full StopGrace. Only the
// first call's deadline counts.
func (u *Upstream) CloseBy(deadline time.Time) error {
	u.closeOnce.Do(func() {
		u.mu.Lock()
		started := u.started
		u.want = false
		u.interruptLocked()
		u.setStateLocked(Closed, nil)
		u.mu.Unlock()
		u.cancel()
		defer u.endLife()
		defer u.stopNoise()
		if !started {
			u.next.finish(&UnavailableError{State: Closed})
			close(u.done)
			return
		}
		if !deadline.IsZero() {
			t := time.AfterFunc(time.Until(deadline.Add(-killMargin)), u.killNow)
			defer t.Stop()
		}
		<-u.done
		u.mu.Lock()
		pool := u.pool
		u.mu.Unlock()
		if pool != nil {
			pool.CloseIdleConnections()
		}
	})
	<-u.done
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.closeErr
}

// killNow makes every stop in progress skip to SIGKILL, and ends every
// connection's I/O.
func (u *Upstream) killNow() {
	u.killOnce.Do(func() {
		close(u.kill)
		u.endLife()
	})
}

// httpPool returns the upstream's pool of HTTP connections, shared by its
// sessions, made on first use. It keeps as many idle connections as the
// server may have calls in flight: the default two would have a steady
// load dial a new connection for most calls, and leave the old ones in
// TIME_WAIT.
func (u *Upstream) httpPool() *http.Transport {
	limit := u.settings.Load().cfg.InFlightLimit()
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.pool == nil {
		u.pool = http.DefaultTransport.(*http.Transport).Clone()
		u.pool.MaxIdleConnsPerHost = limit
		u.pool.MaxIdleConns = max(u.pool.MaxIdleConns, limit)
	}
	return u.pool
}
