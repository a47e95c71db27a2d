package upstream

import (
	"context"
	"time"

	"github.com/switchboard-mcp/switchboard/config"
)

// The supervisor's commands: each publishes the state it asks for at once
// and leaves the work to the owner goroutine (see owner.go). The
// Upstream's methods of the same names document them.

// start asks for the server to be connected, and returns the channel
// closed when the attempt in progress or due ends.
func (sv *supervisor) start(begin <-chan struct{}) <-chan struct{} {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	return doneOf(sv.startLocked(begin))
}

// startLocked asks for the server to be connected, and returns the attempt
// in progress or due, or nil. An owner goroutine it launches waits for
// begin first, unless begin is nil.
func (sv *supervisor) startLocked(begin <-chan struct{}) *op {
	switch sv.state {
	case Closed, Disabled:
		return nil
	case Disconnected:
		sv.setStateLocked(Connecting, nil)
	}
	sv.want = true
	signal(sv.wake)
	if !sv.started {
		sv.started = true
		go sv.run(begin)
	}
	if sv.attempting || sv.state == Connecting || sv.state == Reconnecting {
		return sv.next
	}
	return nil
}

// connect starts the server if needed and waits for the attempt in
// progress or due, or for ctx.
func (sv *supervisor) connect(ctx context.Context) error {
	sv.mu.Lock()
	a := sv.startLocked(nil)
	state, cause := sv.state, sv.lastErr
	sv.mu.Unlock()
	switch {
	case state == Connected:
		return nil
	case a == nil:
		return sv.red.errorf("connect", &UnavailableError{State: state, Err: cause})
	}
	select {
	case <-a.done:
		return sv.red.wrap("connect", a.err)
	case <-ctx.Done():
		return sv.red.errorf("connect", ctx.Err())
	}
}

// connecting returns the attempt that a connecting server waits for, or
// nil if it is not connecting.
func (sv *supervisor) connecting() *op {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	if sv.state != Connecting {
		return nil
	}
	return sv.next
}

// unproven reports whether the server is making its first connection with
// no failed attempt, and since when.
func (sv *supervisor) unproven() (since time.Time, ok bool) {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	if sv.failedOnce || sv.state != Connecting && sv.state != Connected {
		return time.Time{}, false
	}
	return sv.since, true
}

// reconnect asks for a fresh connection now, and returns the channel closed
// when the attempt that answers it ends.
func (sv *supervisor) reconnect() <-chan struct{} {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	return doneOf(sv.reconnectLocked())
}

// reconnectLocked asks for a fresh connection now, unless one is in
// progress or due while connecting, and returns the attempt that answers
// it, or nil if the upstream is disabled or closed.
func (sv *supervisor) reconnectLocked() *op {
	switch sv.state {
	case Closed, Disabled:
		return nil
	}
	sv.resetBreaker = true
	if sv.state != Connecting {
		sv.restartLocked()
	}
	return sv.next
}

// restartLocked asks the owner for a fresh connection now.
func (sv *supervisor) restartLocked() {
	sv.restart = true
	sv.interruptLocked()
	sv.setStateLocked(Connecting, nil)
	sv.startLocked(nil)
}

// interruptLocked ends the owner's I/O in progress, if any.
func (sv *supervisor) interruptLocked() {
	if sv.interrupt != nil {
		sv.interrupt()
	}
}

// disconnect stops the server, and waits for the session to be closed, or
// for ctx.
func (sv *supervisor) disconnect(ctx context.Context) error {
	sv.mu.Lock()
	if sv.state == Closed || sv.state == Disabled || !sv.started {
		sv.want = false
		sv.mu.Unlock()
		return nil
	}
	stop := sv.stopLocked(Disconnected)
	sv.mu.Unlock()
	select {
	case <-stop.done:
		if stop.err != nil {
			return sv.red.errorf("disconnect", stop.err)
		}
		return nil
	case <-ctx.Done():
		return sv.red.errorf("disconnect", ctx.Err())
	}
}

// stopLocked asks the owner to stop and close the session, and moves to
// state (Disconnected or Disabled) at once, so that no new request uses
// the session. It returns the op that ends when the session is closed.
func (sv *supervisor) stopLocked(state State) *op {
	sv.want, sv.restart = false, false
	sv.interruptLocked()
	var keep error
	if sv.state.Down() {
		keep = sv.lastErr
	}
	sv.setStateLocked(state, keep)
	if sv.stopping == nil {
		sv.stopping = newOp()
	}
	signal(sv.wake)
	return sv.stopping
}

// reconfigure applies srv, a changed config, to the settings and the
// state.
func (sv *supervisor) reconfigure(srv config.Server) {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	if sv.state == Closed {
		return
	}
	cur := sv.settings.Load()
	old := cur.cfg
	if old.InFlightLimit() == srv.InFlightLimit() && old.SerializeRequests == srv.SerializeRequests {
		// Keep the slots of the calls in flight, so that their limits hold
		// across the change.
		s := *cur
		s.cfg = srv.Clone()
		sv.settings.Store(&s)
	} else {
		sv.settings.Store(newSettings(srv))
	}
	if old.Fingerprint() == srv.Fingerprint() && old.Pinning == srv.Pinning {
		return // only the source moved
	}
	same := connectionKey(old) == connectionKey(srv)
	switch {
	case !srv.IsEnabled():
		if sv.state != Disabled {
			sv.stopLocked(Disabled)
		}
	case sv.state == Disabled:
		sv.setStateLocked(Disconnected, nil)
	case !same && sv.want:
		sv.resetBreaker = true
		sv.restartLocked()
	}
	sv.publishLocked(Event{Kind: EventConfig})
}

// connectionKey is the fingerprint of what the connection depends on: the
// config without what only the manager uses.
func connectionKey(srv config.Server) string {
	srv.Prefix, srv.Tools, srv.Required, srv.Enabled, srv.Source, srv.AlwaysLoad, srv.Description, srv.AuditPayloads = nil, config.ToolFilter{}, false, nil, "", false, "", false
	return srv.Fingerprint() // without Pinning
}

// killMargin is how long before Close's deadline the stops in progress skip
// to SIGKILL, so that the processes are gone by the deadline: a Close whose
// deadline is nearer than that kills at once.
const killMargin = 250 * time.Millisecond

// close stops the server for good, at most by deadline (zero: none), and
// returns when every session it opened is closed. It is called once.
func (sv *supervisor) close(deadline time.Time) {
	sv.mu.Lock()
	started := sv.started
	sv.want = false
	sv.interruptLocked()
	sv.setStateLocked(Closed, nil)
	sv.mu.Unlock()
	sv.cancel()
	defer sv.dial.endLife()
	defer sv.dial.stopNoise()
	if !started {
		sv.next.finish(&UnavailableError{State: Closed})
		close(sv.done)
		return
	}
	if !deadline.IsZero() {
		t := time.AfterFunc(time.Until(deadline.Add(-killMargin)), sv.dial.killNow)
		defer t.Stop()
	}
	<-sv.done
	sv.dial.closeIdle()
}

// closeResult waits for close, and returns its error.
func (sv *supervisor) closeResult() error {
	<-sv.done
	sv.mu.Lock()
	defer sv.mu.Unlock()
	return sv.closeErr
}
