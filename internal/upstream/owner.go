package upstream

import (
	"context"
	"errors"
	"time"
)

// run is the owner goroutine: the only one that connects, closes sessions
// and moves the state on its own. Callers' commands (Start, Connect, Restart,
// Disconnect, Reconfigure, Close) publish the state they ask for at once
// and leave the work to it.
//
// Each step takes the pending command, then either idles (not wanted),
// serves the current session, or waits for the next attempt and makes it.
func (sv *supervisor) run(begin <-chan struct{}) {
	o := &owner{sv: sv}
	defer close(sv.done)
	defer sv.dial.closers.Wait()
	if begin != nil {
		select {
		case <-begin:
		case <-sv.ctx.Done():
		}
	}
	for o.step() {
	}
	o.shutdown()
}

// owner is the owner goroutine's own state; nothing else touches it.
type owner struct {
	sv          *supervisor
	b           breaker
	s           *session  // the current session, or nil
	fresh       bool      // s has not loaded its lists yet
	connectedAt time.Time // when s was established
	failures    int       // consecutive failed scheduled attempts
	lost        bool      // the failures follow a lost connection: on the ladder they are Reconnecting
	at          time.Time // when the next scheduled attempt is due
	checks      checks    // whether the server is back, while requests want it
	login       string    // in needs-auth: the stamp of the stored login that did not do
	refused     bool      // the server refused to run inside the gateway (ErrRecursion): see held
}

// commands are what callers asked of the owner since it last looked.
type commands struct {
	closed       bool
	want         bool
	restart      bool
	resetBreaker bool
	stop         *op
}

// takeCommands returns the pending commands and clears them. After Close it
// leaves a pending stop to shutdown, which finishes it.
func (sv *supervisor) takeCommands() commands {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	if sv.state == Closed {
		return commands{closed: true}
	}
	c := commands{want: sv.want, restart: sv.restart, resetBreaker: sv.resetBreaker, stop: sv.stopping}
	sv.restart, sv.resetBreaker, sv.stopping = false, false, nil
	return c
}

// step does what the pending command and the state call for, once. It
// reports false when the upstream is closed.
func (o *owner) step() bool {
	c := o.sv.takeCommands()
	if c.closed {
		return false
	}
	if c.stop != nil {
		o.stop(c.stop)
	}
	if c.resetBreaker {
		o.b.reset()
	}
	if c.restart {
		o.restart()
	}
	switch {
	case !c.want:
		return o.idle()
	case o.s != nil:
		return o.serve()
	default:
		return o.retry()
	}
}

// stop closes the session, if any, forgets the schedule and past crashes,
// so that a server started again is tried at once, and then tells the
// Disconnect that waits.
func (o *owner) stop(done *op) {
	var err error
	if o.s != nil {
		o.sv.detach(o.s)
		err = <-o.sv.dial.retire(o.s)
		o.s = nil
	}
	o.b.reset()
	o.failures, o.lost, o.at, o.refused = 0, false, time.Time{}, false
	o.checks = checks{}
	done.finish(err)
}

// restart drops the session, if any, for a fresh connection now.
func (o *owner) restart() {
	if o.s != nil {
		o.sv.detach(o.s)
		o.sv.dial.retire(o.s)
		o.s = nil
	}
	o.failures, o.lost, o.at, o.refused = 0, false, time.Time{}, false
	o.checks = checks{}
}

// idle waits, while the server is not wanted, for a command. Requests that
// wait for a connection are told there will be none.
func (o *owner) idle() bool {
	sv := o.sv
	sv.mu.Lock()
	if sv.want {
		sv.mu.Unlock()
		return true // wanted again since the command was taken: take it
	}
	sv.finishNextLocked(&UnavailableError{State: sv.state, Err: sv.lastErr})
	sv.mu.Unlock()
	select {
	case <-sv.wake:
		return true
	case <-sv.ctx.Done():
		return false
	}
}

// retry waits for the next scheduled attempt, for a request that asks for
// an early one, or, while requests want the server, for a check that finds
// it back (see comeback.go), and makes it.
func (o *owner) retry() bool {
	sv := o.sv
	if o.refused {
		return o.held()
	}
	if wait := time.Until(o.at); wait > 0 {
		var early, demand <-chan struct{}
		if !o.b.open && !sv.earlyUsedNow() {
			early = sv.early
		}
		var poll <-chan time.Time
		needsAuth := sv.stateNow() == NeedsAuth
		if needsAuth {
			ticker := time.NewTicker(loginPoll)
			defer ticker.Stop()
			poll = ticker.C
		}
		// Checks, while there is demand, of a server that can be checked,
		// but for one that crashes as it starts or waits for a login.
		o.checks.check, o.checks.rand = sv.dial.check(), sv.rand
		if o.checks.check != nil && !o.b.open && !needsAuth {
			demand = sv.demand
		}
		checkTimer := time.NewTimer(0)
		checkTimer.Stop()
		defer checkTimer.Stop()
		var check <-chan time.Time
		arm := func() {
			if sv.inDemand() {
				checkTimer.Reset(time.Until(o.checks.next))
				check = checkTimer.C
			}
		}
		if demand != nil {
			arm()
		}
		t := time.NewTimer(wait)
		defer t.Stop()
		for due := false; !due; {
			select {
			case <-t.C:
				due = true
			case <-poll:
				due = sv.dial.loginStamp() != o.login
			case <-early:
				o.attempt(attemptEarly)
				return true
			case <-demand:
				if check == nil {
					arm()
				}
			case <-check:
				check = nil
				if !sv.inDemand() {
					continue // until a request wants the server again
				}
				if o.checkBack() {
					o.attempt(attemptChecked)
					return true
				}
				arm()
			case <-sv.wake:
				return true
			case <-sv.ctx.Done():
				return false
			}
		}
	}
	o.attempt(attemptScheduled)
	return true
}

// held waits for a command while the server refuses to run inside the
// gateway: it is a Switchboard whose config starts Switchboard on itself
// (or one nested too deep), and would refuse again until a config
// changes, which a reload applies as a command, as a manual reconnect is.
// No attempt comes meanwhile, scheduled, early or checked.
func (o *owner) held() bool {
	select {
	case <-o.sv.wake:
		return true
	case <-o.sv.ctx.Done():
		return false
	}
}

// checkBack checks whether the server is back, with I/O that a command
// ends at once.
func (o *owner) checkBack() bool {
	ctx, release := o.sv.ioContext()
	defer release()
	return o.checks.run(ctx)
}

// loginPoll is how often a server in needs-auth looks for a new login in
// the store: one made by `switchboard login` in another process is taken
// up within it.
const loginPoll = 2 * time.Second

// needsLogin sets the schedule of a server that waits for a login: an
// attempt when the stored login changes, or at the background maximum.
func (o *owner) needsLogin() {
	o.login, o.lost = o.sv.dial.loginStamp(), false
	o.at = time.Now().Add(jittered(backgroundMax, o.sv.rand))
}

// attempt makes one connection attempt. A scheduled attempt that fails
// moves the schedule on; an early one, which a request asked for between
// two scheduled ones, or one that a check made, leaves it as it was and
// never counts as a failure.
func (o *owner) attempt(kind attemptKind) {
	sv := o.sv
	failState := o.failState(kind)
	s, err, superseded := sv.attempt(failState, kind)
	if kind == attemptChecked && err != nil {
		o.checks.attemptFailed()
	}
	switch {
	case err == nil:
		o.s, o.fresh, o.connectedAt, o.failures = s, true, time.Now(), 0
		o.checks = checks{} // the next outage's checks start afresh
		return
	case superseded: // the command that superseded it sets the schedule
		return
	case errors.Is(err, ErrRecursion):
		o.refused = true
		return
	case kind != attemptScheduled:
		return
	}
	o.failures++
	if sv.stateNow() == NeedsAuth {
		o.needsLogin()
		return
	}
	var delay time.Duration
	if o.b.open {
		delay = jittered(backgroundMax, sv.rand)
	} else {
		delay, _ = reconnectDelay(o.failures, sv.rand)
	}
	o.at = time.Now().Add(delay)
}

// failState is the state a failed attempt leaves: decided before the
// attempt, so that its error and its end are published together. Only a
// scheduled attempt changes the state.
func (o *owner) failState(kind attemptKind) State {
	switch {
	case kind != attemptScheduled:
		return o.sv.stateNow()
	case o.b.open:
		return CrashLoop
	case o.lost && o.failures+1 < len(ladder):
		return Reconnecting
	}
	return Failed
}

// serve runs while s is the session: it loads the lists of a fresh session,
// reloads those the server says changed or whose cache hint ran out, and
// clears the breaker once the connection is stable. It returns on a
// command, on Close, or when the session is lost.
func (o *owner) serve() bool {
	sv, s := o.sv, o.s
	ctx, release := sv.ioContext()
	defer release()
	if o.fresh {
		o.fresh = false
		sv.lists.settle(ctx, s)
	}
	var stable <-chan time.Time
	if left := time.Until(o.connectedAt.Add(stablePeriod)); left > 0 {
		t := time.NewTimer(left)
		defer t.Stop()
		stable = t.C
	} else {
		o.b.reset()
	}
	for {
		w := sv.lists.reloadChanged(ctx, s)
		if w == wakeNone {
			w = o.await(ctx, &stable)
		}
		switch w {
		case wakeLost:
			return o.lose()
		case wakeStop:
			return sv.ctx.Err() == nil
		}
	}
}

// await waits for the next thing a connected upstream reacts to. It
// returns wakeNone for those it handles itself (a list to reload, a cache
// hint that ran out, a stable connection, which clears the breaker; then
// *stable is nil), wakeLost when the session is lost, and wakeStop on a
// command or Close.
func (o *owner) await(ctx context.Context, stable *<-chan time.Time) wake {
	sv := o.sv
	var expiry <-chan time.Time
	if next := sv.lists.nextExpiry(); !next.IsZero() {
		t := time.NewTimer(time.Until(next))
		defer t.Stop()
		expiry = t.C
	}
	select {
	case <-o.s.lost:
		return wakeLost
	case <-sv.wake:
		return wakeStop
	case <-ctx.Done():
		return wakeStop
	case <-sv.lists.refresh:
	case <-expiry:
		sv.lists.expire()
	case <-*stable:
		o.b.reset()
		*stable = nil
	}
	return wakeNone
}

// lose handles the loss of the session: a crash for the breaker, then an
// attempt at once, or in crash-loop one at the background maximum. The
// lists stay.
func (o *owner) lose() bool {
	sv, s := o.sv, o.s
	now := time.Now()
	login := loginRequired(s.lostErr)
	open := login == nil && o.b.lost(o.connectedAt, now) // a login refused is no crash
	cause := sv.red.wrap("session", s.lostErr)
	sv.mu.Lock()
	if sv.sess == s {
		sv.sess = nil
	}
	if sv.state == Connected {
		switch {
		case login != nil:
			sv.setStateLocked(NeedsAuth, sv.red.errorf("session", login))
		case open:
			sv.setStateLocked(CrashLoop, cause)
		default:
			sv.setStateLocked(Reconnecting, cause)
		}
	}
	sv.earlyUsed = false
	if sv.state == NeedsAuth || sv.state == CrashLoop {
		// No attempt comes at once: whoever waits for one (a request that
		// found the session dead first) hears why now.
		sv.finishNextLocked(&UnavailableError{State: sv.state, Err: sv.lastErr})
	}
	sv.mu.Unlock()
	sv.dial.retire(s)
	o.s, o.lost, o.failures, o.at = nil, true, 0, now
	switch {
	case login != nil:
		o.needsLogin()
	case open:
		o.at = now.Add(jittered(backgroundMax, sv.rand))
	}
	return true
}

// shutdown closes the session at Close, and tells whoever still waits for
// a connection that there will be none.
func (o *owner) shutdown() {
	sv := o.sv
	var err error
	if o.s != nil {
		sv.detach(o.s)
		err = <-sv.dial.retireReported(o.s)
	}
	sv.mu.Lock()
	defer sv.mu.Unlock()
	if err != nil {
		sv.closeErr = sv.red.errorf("close", err)
	}
	if sv.stopping != nil { // a Disconnect that Close overtook
		sv.stopping.finish(err)
		sv.stopping = nil
	}
	sv.finishNextLocked(&UnavailableError{State: Closed})
}
