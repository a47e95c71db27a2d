package upstream

import (
	"context"
	"errors"
	"time"

	"github.com/switchboard-mcp/switchboard/internal/oauth"
)

// run is the owner goroutine: the only one that connects, closes sessions
// and moves the state on its own. Callers' commands (Start, Reconnect,
// Disconnect, Reconfigure, Close) publish the state they ask for at once
// and leave the work to it.
//
// Each step takes the pending command, then either idles (not wanted),
// serves the current session, or waits for the next attempt and makes it.
func (u *Upstream) run(begin <-chan struct{}) {
	o := &owner{u: u}
	defer close(u.done)
	defer u.closers.Wait()
	if begin != nil {
		select {
		case <-begin:
		case <-u.ctx.Done():
		}
	}
	for o.step() {
	}
	o.shutdown()
}

// owner is the owner goroutine's own state; nothing else touches it.
type owner struct {
	u           *Upstream
	b           breaker
	s           *session  // the current session, or nil
	fresh       bool      // s has not loaded its lists yet
	connectedAt time.Time // when s was established
	failures    int       // consecutive failed scheduled attempts
	lost        bool      // the failures follow a lost connection: on the ladder they are Reconnecting
	at          time.Time // when the next scheduled attempt is due
	checks      checks    // whether the server is back, while requests want it
	login       string    // in needs-auth: the stamp of the stored login that did not do
}

// A command is what callers asked of the owner since it last looked.
type command struct {
	closed       bool
	want         bool
	restart      bool
	resetBreaker bool
	stop         *op
}

// takeCommand returns the pending command and clears it. After Close it
// leaves a pending stop to shutdown, which finishes it.
func (u *Upstream) takeCommand() command {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.state == Closed {
		return command{closed: true}
	}
	c := command{want: u.want, restart: u.restart, resetBreaker: u.resetBreaker, stop: u.stopping}
	u.restart, u.resetBreaker, u.stopping = false, false, nil
	return c
}

// step does what the pending command and the state call for, once. It
// reports false when the upstream is closed.
func (o *owner) step() bool {
	c := o.u.takeCommand()
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
		o.u.detach(o.s)
		err = <-o.u.retire(o.s)
		o.s = nil
	}
	o.b.reset()
	o.failures, o.lost, o.at = 0, false, time.Time{}
	o.checks = checks{}
	done.finish(err)
}

// restart drops the session, if any, for a fresh connection now.
func (o *owner) restart() {
	if o.s != nil {
		o.u.detach(o.s)
		o.u.retire(o.s)
		o.s = nil
	}
	o.failures, o.lost, o.at = 0, false, time.Time{}
	o.checks = checks{}
}

// idle waits, while the server is not wanted, for a command. Requests that
// wait for a connection are told there will be none.
func (o *owner) idle() bool {
	u := o.u
	u.mu.Lock()
	if u.want {
		u.mu.Unlock()
		return true // wanted again since the command was taken: take it
	}
	u.finishNextLocked(&UnavailableError{State: u.state, Err: u.lastErr})
	u.mu.Unlock()
	select {
	case <-u.wake:
		return true
	case <-u.ctx.Done():
		return false
	}
}

// retry waits for the next scheduled attempt, for a request that asks for
// an early one, or, while requests want the server, for a check that finds
// it back (see comeback.go), and makes it.
func (o *owner) retry() bool {
	u := o.u
	if wait := time.Until(o.at); wait > 0 {
		var early, demand <-chan struct{}
		if !o.b.open && !u.earlyUsedNow() {
			early = u.early
		}
		var poll <-chan time.Time
		needsAuth := u.State() == NeedsAuth
		if needsAuth {
			ticker := time.NewTicker(loginPoll)
			defer ticker.Stop()
			poll = ticker.C
		}
		// Checks, while there is demand, of a server that can be checked,
		// but for one that crashes as it starts or waits for a login.
		o.checks.check, o.checks.rand = u.check(), u.opts.Rand
		if o.checks.check != nil && !o.b.open && !needsAuth {
			demand = u.demand
		}
		checkTimer := time.NewTimer(0)
		checkTimer.Stop()
		defer checkTimer.Stop()
		var check <-chan time.Time
		arm := func() {
			if u.inDemand() {
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
				due = u.LoginStamp() != o.login
			case <-early:
				o.attempt(attemptEarly)
				return true
			case <-demand:
				if check == nil {
					arm()
				}
			case <-check:
				check = nil
				if !u.inDemand() {
					continue // until a request wants the server again
				}
				if o.checkBack() {
					o.attempt(attemptChecked)
					return true
				}
				arm()
			case <-u.wake:
				return true
			case <-u.ctx.Done():
				return false
			}
		}
	}
	o.attempt(attemptScheduled)
	return true
}

// checkBack checks whether the server is back, with I/O that a command
// ends at once.
func (o *owner) checkBack() bool {
	ctx, release := o.u.ioContext()
	defer release()
	return o.checks.run(ctx)
}

// loginPoll is how often a server in needs-auth looks for a new login in
// the store: one made by `switchboard login` in another process is taken
// up within it.
const loginPoll = 2 * time.Second

// LoginStamp identifies the login stored for the server now, as
// oauth.Store.Stamp does ("" if none, or if the upstream does not log in).
func (u *Upstream) LoginStamp() string {
	if u.opts.OAuth == nil || u.opts.OAuth.Store == nil {
		return ""
	}
	u.mu.Lock()
	url := u.url
	u.mu.Unlock()
	return u.opts.OAuth.Store.Stamp(oauth.Key(u.name, url))
}

// needsLogin sets the schedule of a server that waits for a login: an
// attempt when the stored login changes, or at the background maximum.
func (o *owner) needsLogin() {
	o.login, o.lost = o.u.LoginStamp(), false
	o.at = time.Now().Add(jittered(backgroundMax, o.u.opts.Rand))
}

// attempt makes one connection attempt. A scheduled attempt that fails
// moves the schedule on; an early one, which a request asked for between
// two scheduled ones, or one that a check made, leaves it as it was and
// never counts as a failure.
func (o *owner) attempt(kind attemptKind) {
	u := o.u
	failState := o.failState(kind)
	s, err, superseded := u.attempt(failState, kind)
	if kind == attemptChecked && err != nil {
		o.checks.attemptFailed()
	}
	switch {
	case err == nil:
		o.s, o.fresh, o.connectedAt, o.failures = s, true, time.Now(), 0
		o.checks = checks{} // the next outage's checks start afresh
		return
	case kind != attemptScheduled, superseded: // the command that superseded it sets the schedule
		return
	}
	o.failures++
	if u.State() == NeedsAuth {
		o.needsLogin()
		return
	}
	var delay time.Duration
	if o.b.open {
		delay = jittered(backgroundMax, u.opts.Rand)
	} else {
		delay, _ = reconnectDelay(o.failures, u.opts.Rand)
	}
	o.at = time.Now().Add(delay)
}

// failState is the state a failed attempt leaves: decided before the
// attempt, so that its error and its end are published together. Only a
// scheduled attempt changes the state.
func (o *owner) failState(kind attemptKind) State {
	switch {
	case kind != attemptScheduled:
		return o.u.State()
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
	u, s := o.u, o.s
	ctx, release := u.ioContext()
	defer release()
	if o.fresh {
		o.fresh = false
		u.settle(ctx, s)
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
		w := u.reloadChanged(ctx, s)
		if w == wakeNone {
			w = o.await(ctx, &stable)
		}
		switch w {
		case wakeLost:
			return o.lose()
		case wakeStop:
			return u.ctx.Err() == nil
		}
	}
}

// await waits for the next thing a connected upstream reacts to. It
// returns wakeNone for those it handles itself (a list to reload, a cache
// hint that ran out, a stable connection, which clears the breaker; then
// *stable is nil), wakeLost when the session is lost, and wakeStop on a
// command or Close.
func (o *owner) await(ctx context.Context, stable *<-chan time.Time) wake {
	u := o.u
	var expiry <-chan time.Time
	if next := u.nextExpiry(); !next.IsZero() {
		t := time.NewTimer(time.Until(next))
		defer t.Stop()
		expiry = t.C
	}
	select {
	case <-o.s.lost:
		return wakeLost
	case <-u.wake:
		return wakeStop
	case <-ctx.Done():
		return wakeStop
	case <-u.refresh:
	case <-expiry:
		u.expire()
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
	u, s := o.u, o.s
	now := time.Now()
	login := loginRequired(s.lostErr)
	open := login == nil && o.b.lost(o.connectedAt, now) // a login refused is no crash
	cause := u.wrap("session", s.lostErr)
	u.mu.Lock()
	if u.sess == s {
		u.sess = nil
	}
	if u.state == Connected {
		switch {
		case login != nil:
			u.setStateLocked(NeedsAuth, u.errorf("session", login))
		case open:
			u.setStateLocked(CrashLoop, cause)
		default:
			u.setStateLocked(Reconnecting, cause)
		}
	}
	u.earlyUsed = false
	if u.state == NeedsAuth || u.state == CrashLoop {
		// No attempt comes at once: whoever waits for one (a request that
		// found the session dead first) hears why now.
		u.finishNextLocked(&UnavailableError{State: u.state, Err: u.lastErr})
	}
	u.mu.Unlock()
	u.retire(s)
	o.s, o.lost, o.failures, o.at = nil, true, 0, now
	switch {
	case login != nil:
		o.needsLogin()
	case open:
		o.at = now.Add(jittered(backgroundMax, u.opts.Rand))
	}
	return true
}

// shutdown closes the session at Close, and tells whoever still waits for
// a connection that there will be none.
func (o *owner) shutdown() {
	u := o.u
	var err error
	if o.s != nil {
		u.detach(o.s)
		err = <-u.retireReported(o.s)
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if err != nil {
		u.closeErr = u.errorf("close", err)
	}
	if u.stopping != nil { // a Disconnect that Close overtook
		u.stopping.finish(err)
		u.stopping = nil
	}
	u.finishNextLocked(&UnavailableError{State: Closed})
}

// finishNextLocked ends the waits for the next attempt with err, and makes
// a new one.
func (u *Upstream) finishNextLocked(err error) {
	a := u.next
	u.next = newOp()
	a.finish(err)
}

// earlyUsedNow reports whether this step has had its early attempt.
func (u *Upstream) earlyUsedNow() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.earlyUsed
}

// newStepLocked starts a step between scheduled attempts: it may have an
// early attempt, and a request for one made before it no longer counts.
// It is called before the waiters of the failed attempt wake, so that a
// request they make at once belongs to the new step.
func (u *Upstream) newStepLocked() {
	select {
	case <-u.early:
	default:
	}
	u.earlyUsed = false
}

// ioContext returns a context for the owner's I/O (an attempt, a list
// load) that Close and every command that needs the owner's attention end
// at once, and its release. A command already pending ends it at once.
func (u *Upstream) ioContext() (context.Context, func()) {
	ctx, cancel := context.WithCancel(u.ctx)
	u.mu.Lock()
	u.interrupt = cancel
	if u.restart || u.stopping != nil || !u.want {
		cancel()
	}
	u.mu.Unlock()
	return ctx, func() {
		u.mu.Lock()
		u.interrupt = nil
		u.mu.Unlock()
		cancel()
	}
}

// detach forgets s, so that no new request uses it.
func (u *Upstream) detach(s *session) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.sess == s {
		u.sess = nil
	}
}

// retire closes s in the background, so that a slow DELETE or a slow
// process never delays what comes next, and returns the close's result.
// A process that had to be killed is logged. Close waits for every retired
// session. Only the owner goroutine calls it.
func (u *Upstream) retire(s *session) <-chan error { return u.retireAs(s, false) }

// retireReported is retire for a session whose close's result the caller
// reports (Close's current session): a kill is not logged too.
func (u *Upstream) retireReported(s *session) <-chan error { return u.retireAs(s, true) }

func (u *Upstream) retireAs(s *session, reported bool) <-chan error {
	errc := make(chan error, 1)
	u.closers.Go(func() {
		err := s.close(u.opts.StopGrace, u.kill)
		if errors.Is(err, ErrKilled) && !reported {
			u.opts.Logger.Warn("server process killed", "error", err)
		}
		errc <- err
	})
	return errc
}
