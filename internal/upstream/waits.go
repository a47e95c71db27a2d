package upstream

import (
	"context"
	"errors"
	"time"
)

// The supervisor's side of a request: the requester asks it for a session
// (see requester.session), and it answers with the current one, or has the
// request wait for the next attempt, or says why there is none.

// session returns the session a request should use: the current one, unless
// it is gone. Without one, what it does depends on the state:
//
//   - connecting, or connected with a session found dead: an attempt is due
//     at once; it waits for it;
//   - reconnecting: it waits for the next attempt, and asks for it early if
//     this step between scheduled attempts has not had its early attempt;
//   - failed: it asks for that early attempt and waits for it, or, if the
//     step has had it, fails at once;
//   - crash-loop, disconnected, disabled, closed: it fails at once.
//
// It fails, naming the state and the last cause, when the attempt it
// waited for fails, or when ctx ends first.
func (sv *supervisor) session(ctx context.Context, gone *session) (*session, error) {
	for {
		sv.mu.Lock()
		s := sv.sess
		if sv.state == Connected && s != nil && s != gone {
			sv.mu.Unlock()
			return s, nil
		}
		state, a, cause := sv.state, sv.next, sv.lastErr
		sv.wantedLocked()
		wait := sv.attempting || state == Connecting || state == Connected || state == Reconnecting
		if (state == Reconnecting || state == Failed) && !sv.attempting && !sv.earlyUsed {
			wait = true
			signal(sv.early)
		}
		if wait {
			sv.waiting++
		}
		sv.mu.Unlock()
		if !wait {
			return nil, &UnavailableError{State: state, Err: cause}
		}
		if err := sv.awaitAttempt(ctx, a, state, cause); err != nil {
			return nil, err
		}
	}
}

// awaitAttempt waits for the attempt a, which a request that found the
// upstream in state, after cause, waits for, as one of sv.waiting. It fails
// if the attempt failed or ctx ended first.
func (sv *supervisor) awaitAttempt(ctx context.Context, a *op, state State, cause error) error {
	defer func() {
		sv.mu.Lock()
		sv.waiting--
		sv.mu.Unlock()
	}()
	select {
	case <-a.done:
		var unavailable *UnavailableError
		switch {
		case errors.As(a.err, &unavailable): // a command ended the wait
			return unavailable
		case a.err != nil:
			return &UnavailableError{State: sv.stateNow(), Err: a.err}
		}
		return nil
	case <-ctx.Done():
		if cause == nil {
			return &UnavailableError{State: state, Err: ctx.Err()}
		}
		return &waitEnded{ctxErr: ctx.Err(), unavailable: &UnavailableError{State: state, Err: cause}}
	}
}

// wantedLocked records that a request found no session, and wakes the
// owner to check whether the server is back.
func (sv *supervisor) wantedLocked() {
	sv.wantedAt = time.Now()
	signal(sv.demand)
}

// inDemand reports whether requests want the server: one waits for a
// connection, or one found none within demandWindow.
func (sv *supervisor) inDemand() bool {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	return sv.waiting > 0 || time.Since(sv.wantedAt) < demandWindow
}
