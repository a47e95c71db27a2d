package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/oauth"
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

// attempt makes one connection attempt, which answers u.next. On success
// the session becomes the current one (after its tools are listed, the
// first time); on failure the upstream moves to failState with the error.
// Either way the outcome is published before the waiters wake. An attempt
// that a command superseded (a stop, a new config, Close) attaches
// nothing: its session is closed, never resurrected, and it reports
// superseded.
func (u *Upstream) attempt(failState State, kind attemptKind) (_ *session, _ error, superseded bool) {
	ctx, release := u.ioContext()
	u.mu.Lock()
	u.attempting = true
	u.earlyUsed = u.earlyUsed || kind == attemptEarly
	first := !u.lists.listed
	cfg := u.settings.Load().cfg
	u.mu.Unlock()

	s, err := u.connect(ctx, cfg, first)
	release()

	u.mu.Lock()
	u.attempting = false
	superseded = u.state == Closed || !u.want || u.restart || u.stopping != nil
	switch {
	case superseded:
		if u.state == Closed || !u.want {
			u.finishNextLocked(&UnavailableError{State: u.state, Err: u.lastErr})
		} // else the attempt that the new command asks for answers the waiters
		if err == nil {
			err = u.errorf("connect", errors.New("superseded by a newer command"))
		}
	case err == nil:
		u.sess = s
		if u.init != nil {
			u.reconnects++
		}
		u.init = s.cs.InitializeResult()
		if first {
			// The same list as the one seeded from the cache, as is usual,
			// keeps the seeded definitions: they make no new view.
			if !u.lists.cached || !reflect.DeepEqual(u.lists.tools, s.tools) {
				u.lists.tools, u.lists.toolIndex = s.tools, indexTools(s.tools)
			}
			u.lists.listed, u.lists.cached = true, false
		}
		u.setStateLocked(Connected, nil)
		if first {
			u.publishLocked(Event{Kind: EventList, List: Tools})
		}
		u.finishNextLocked(nil)
	default:
		if kind == attemptScheduled {
			u.newStepLocked() // before anyone hears of the failure
		}
		if login := loginRequired(err); login != nil {
			// Whatever the schedule says, the server waits for a login.
			err, failState = u.errorf("connect", login), NeedsAuth
		}
		u.failedOnce = true
		u.setStateLocked(failState, err)
		u.publishLocked(Event{Kind: EventAttemptFailed, Err: err})
		u.finishNextLocked(err)
	}
	u.mu.Unlock()
	if superseded && s != nil {
		u.retire(s)
		return nil, err, true
	}
	return s, err, superseded
}

// connect opens a session: resolve the config, open the transport,
// initialize, and, if list is set, list the tools.
func (u *Upstream) connect(ctx context.Context, cfg config.Server, list bool) (*session, error) {
	srv, secrets, err := cfg.Resolve(u.opts.LookupEnv)
	u.secrets.Merge(secrets)
	if err != nil {
		return nil, u.wrap("connect", err)
	}
	u.mu.Lock()
	u.url = srv.URL
	u.mu.Unlock()
	if d := srv.TimeoutDuration(); d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	s, err := u.dialSession(ctx, &srv)
	if err != nil {
		return nil, u.wrap("connect", u.explain(ctx, err, srv.TimeoutDuration()))
	}
	if !list {
		return s, nil
	}
	s.toolsGen = u.listGen[Tools].Load()
	s.tools, s.toolsTTL, err = u.listTools(ctx, s, newRetryBudget(cfg.Retry))
	s.listed = err == nil
	if err != nil {
		u.retire(s)
		return nil, u.wrap("list tools", u.explain(ctx, err, srv.TimeoutDuration()))
	}
	return s, nil
}

// loginRequired returns the login a server asks for, if err says so.
func loginRequired(err error) *oauth.LoginError {
	var login *oauth.LoginError
	if errors.As(err, &login) {
		return login
	}
	return nil
}

// explain says what an error means when the go-sdk's words do not: our own
// deadline is ErrTimeout, a stdio line over the limit is a response too
// large, and a JSON syntax error is a server writing something else on its
// stream (over stdio, a line of over 64 KiB that starts like JSON: shorter
// lines that are not JSON-RPC are skipped, see stdoutFilter).
func (u *Upstream) explain(ctx context.Context, err error, d time.Duration) error {
	var syntax *json.SyntaxError
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded) && !isProtocolError(err):
		return fmt.Errorf("%w after %v%s", ErrTimeout, d, hintOf(err))
	case isFrameTooLarge(err):
		return tooLarge(u.settings.Load().cfg.ResponseLimit())
	case errors.As(err, &syntax):
		return fmt.Errorf("server wrote something that is not JSON-RPC: %w", err)
	}
	return err
}

// tooLarge is the error of a response over limit, the size limit.
func tooLarge(limit int64) error {
	return fmt.Errorf("%w: over the limit of %d bytes (maxResponseBytes)", errResponseTooLarge, limit)
}

// refreshDelay bounds how long a reconnect waits for a first answer before
// it lists again.
const refreshDelay = 100 * time.Millisecond

// settle brings a fresh session up to date, best effort: its lists, and the
// resources the host subscribed to. After a reconnect, the calls that
// waited for the session go first: the lists wait for the first answer, or
// a moment.
func (u *Upstream) settle(ctx context.Context, s *session) {
	defer u.loadedOnce.Do(func() { close(u.loaded) })
	if s.listed {
		u.fetched[Tools].Store(s.toolsGen)
		u.setExpiry(Tools, s.toolsTTL)
		u.loadAll(ctx, s, Prompts, Resources)
	} else {
		t := time.NewTimer(refreshDelay)
		defer t.Stop()
		select {
		case <-s.answered:
		case <-t.C:
		case <-s.lost:
			return
		case <-ctx.Done():
			return
		}
		u.loadAll(ctx, s, Tools, Prompts, Resources)
	}
	u.resubscribe(ctx, s)
}
