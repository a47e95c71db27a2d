package upstream

import (
	"context"
	"errors"

	"github.com/switchboard-mcp/switchboard/config"
)

// An attemptKind says why an attempt is made.
type attemptKind int

const (
	// attemptScheduled is the schedule's: its failure moves the schedule
	// on, and starts a new step between scheduled attempts.
	attemptScheduled attemptKind = iota
	// attemptEarly is the one a request asks for, once per step.
	attemptEarly
	// attemptChecked is one that a check that found the server back makes
	// (see comeback.go).
	attemptChecked
)

// attempt makes one connection attempt, which answers sv.next. On success
// the session becomes the current one (after its tools are listed, the
// first time); on failure the upstream moves to failState with the error.
// Either way the outcome is published before the waiters wake. An attempt
// that a command superseded (a stop, a new config, Close) attaches
// nothing: its session is closed, never resurrected, and it reports
// superseded.
func (sv *supervisor) attempt(failState State, kind attemptKind) (_ *session, _ error, superseded bool) {
	ctx, release := sv.ioContext()
	sv.mu.Lock()
	sv.attempting = true
	sv.earlyUsed = sv.earlyUsed || kind == attemptEarly
	first := !sv.lists.listed()
	cfg := sv.settings.Load().cfg
	sv.mu.Unlock()

	s, err := sv.open(ctx, cfg, first)
	release()

	sv.mu.Lock()
	sv.attempting = false
	superseded = sv.state == Closed || !sv.want || sv.restart || sv.stopping != nil
	switch {
	case superseded:
		if sv.state == Closed || !sv.want {
			sv.finishNextLocked(&UnavailableError{State: sv.state, Err: sv.lastErr})
		} // else the attempt that the new command asks for answers the waiters
		if err == nil {
			err = sv.red.errorf("connect", errors.New("superseded by a newer command"))
		}
	case err == nil:
		sv.sess = s
		s.used.Store(true)
		if sv.init != nil {
			sv.reconnects++
		}
		sv.init = s.cs.InitializeResult()
		if first {
			sv.lists.listedFirst(s.tools)
		}
		sv.setStateLocked(Connected, nil)
		if first {
			sv.publishLocked(Event{Kind: EventList, List: Tools})
		}
		sv.finishNextLocked(nil)
	default:
		if kind == attemptScheduled {
			sv.newStepLocked() // before anyone hears of the failure
		}
		if login := loginRequired(err); login != nil {
			// Whatever the schedule says, the server waits for a login.
			err, failState = sv.red.errorf("connect", login), NeedsAuth
		} else if errors.Is(err, ErrRecursion) {
			// It would refuse again: no attempt comes until a command
			// (see owner.held), and no request asks for an early one.
			failState, sv.earlyUsed = Failed, true
		}
		sv.failedOnce = true
		sv.setStateLocked(failState, err)
		sv.publishLocked(Event{Kind: EventAttemptFailed, Err: err})
		sv.finishNextLocked(err)
	}
	sv.mu.Unlock()
	if superseded && s != nil {
		sv.dial.retire(s)
		return nil, err, true
	}
	return s, err, superseded
}

// open opens a session: resolve the config, open the transport,
// initialize, and, if list is set, list the tools, all within the server's
// timeout.
func (sv *supervisor) open(ctx context.Context, cfg config.Server, list bool) (*session, error) {
	srv, err := sv.dial.resolve(cfg)
	if err != nil {
		return nil, err
	}
	if d := srv.TimeoutDuration(); d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	s, err := sv.dial.dial(ctx, srv)
	if err != nil || !list {
		return s, err
	}
	s.toolsGen = sv.lists.listGen[Tools].Load()
	s.tools, s.toolsTTL, err = listTools(ctx, s, sv.settings.Load().serial, newRetryBudget(cfg.Retry))
	s.listed = err == nil
	if err != nil {
		err = withStderr(s, explain(ctx, err, srv.TimeoutDuration(), srv.ResponseLimit()))
		sv.dial.retire(s)
		return nil, sv.red.wrap("list tools", err)
	}
	return s, nil
}
