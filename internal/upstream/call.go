package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/mcpconn"
)

// CallTool calls the tool params.Name, as the server knows it, with
// params' arguments and _meta (a progress token, say). Nil arguments are
// sent as {}. The call is bounded by ctx and by the server's timeout.
//
// Required arguments are checked against the tool's input schema before
// anything is sent. If the server is connecting or reconnecting, the call
// waits for its next attempt, within its bounds; if it failed, the call
// fails at once, unless it may ask for one early attempt (see the package
// documentation). What happens on failure depends on what can be known:
//
//   - not delivered (the session was gone, the connection refused, the
//     server overloaded): the call is replayed once on a new session;
//   - ambiguous (sent, then the connection broke or the time ran out): it is
//     replayed once only if the tool is read-only or idempotent, and
//     otherwise fails with an [*AmbiguousError];
//   - deterministic (an error answer, a result with isError): never retried;
//   - cancelled by the caller: returned at once, never retried.
//
// Generic retries (config "retry") extend the replays, with backoff and a
// budget, under the same rules.
func (u *Upstream) CallTool(ctx context.Context, params *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	set := u.settings.Load()
	info := u.tool(params.Name)
	args, err := arguments(info, params.Arguments)
	if err != nil {
		return nil, u.errorf(request{"call tool", params.Name}.String(), err)
	}
	call := *params
	call.Arguments = args
	var end func()
	ctx, call.Meta, end = u.beginPeer(ctx, call.Meta)
	defer end()
	replayable := info != nil && info.replayable
	var res *mcp.CallToolResult
	err = u.do(ctx, set, request{"call tool", call.Name}, replayable, func(ctx context.Context, s *session) (err error) {
		res, err = s.cs.CallTool(ctx, &call)
		return err
	})
	return res, err
}

// A request names what is being sent, for errors; only error paths format
// it.
type request struct {
	verb, name string
}

func (r request) String() string { return fmt.Sprintf("%s %q", r.verb, r.name) }

// do runs one request with the recovery rules of [Upstream.CallTool]: it
// waits for a session, probes an idle one, classifies a failure, and
// replays what is safe to replay. req names the request in errors (and its
// tool in an [*AmbiguousError]), and replayable says whether it may run
// twice.
func (u *Upstream) do(ctx context.Context, set *settings, req request, replayable bool, send func(context.Context, *session) error) error {
	callCtx := ctx
	timeout := set.cfg.TimeoutDuration()
	if timeout > 0 {
		var cancel context.CancelFunc
		callCtx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	budget := newRetryBudget(set.cfg.Retry)
	var (
		gone     *session // a session known to be dead
		resessed bool     // the one free replay on a fresh session is spent
	)
	for {
		s, err := u.session(callCtx, gone)
		if err != nil {
			return u.errorf(req.String(), u.timeoutOr(ctx, callCtx, timeout, err))
		}
		if !u.probe(callCtx, s, set.serial) {
			gone = s // the session is dead: get another; nothing was sent
			continue
		}
		// The slot is taken once there is a session to send on: a request
		// that waits for a connection is not in flight.
		release, err := acquire(callCtx, set.slots)
		if err != nil {
			return u.errorf(req.String(), u.timeoutOr(ctx, callCtx, timeout, err))
		}
		d := &delivery{}
		err = s.request(withDelivery(callCtx, d), set.serial, send)
		release()
		if err == nil {
			return nil
		}
		if login := loginRequired(err); login != nil {
			// Nothing ran. A step-up concerns this request alone; else the
			// token was refused and could not be renewed: the server waits
			// for a login (see lose).
			if len(login.Scopes) == 0 {
				u.abandon(s, login)
			}
			return u.errorf(req.String(), login)
		}
		class, dead, wait := classify(ctx, err, d, s.http != nil)
		if dead {
			u.abandon(s, u.explain(callCtx, err, timeout))
			gone = s
		} else if s.http != nil && d.transportFailed() {
			// A pooled connection died under the request, as they all do
			// when a server restarts: drop the others, so that a replay
			// does not meet the same fate.
			s.http.CloseIdleConnections()
		}
		switch {
		case class == cancelled:
			return u.errorf(req.String(), ctx.Err())
		case class == deterministic && d.wasTooLarge():
			return u.errorf(req.String(), tooLarge(u.settings.Load().cfg.ResponseLimit()))
		case class == deterministic:
			return u.wrap(req.String(), u.explain(callCtx, err, timeout))
		case class == ambiguous && !replayable:
			return u.wrap(req.String(), &AmbiguousError{Tool: req.name, Err: u.explain(callCtx, err, timeout)})
		}
		// Not delivered, or ambiguous for a request that may run twice. A
		// stale session gets one free replay on a fresh one (design §3);
		// the rest comes out of the budget.
		var delay time.Duration
		if class == notDelivered && dead && !resessed {
			resessed = true
		} else if d, ok := budget.take(dead); ok {
			delay = d
		} else {
			return u.wrap(req.String(), u.explain(callCtx, err, timeout))
		}
		if err := sleep(callCtx, max(wait, delay)); err != nil {
			return u.errorf(req.String(), u.timeoutOr(ctx, callCtx, timeout, err))
		}
	}
}

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
func (u *Upstream) session(ctx context.Context, gone *session) (*session, error) {
	for {
		u.mu.Lock()
		s := u.sess
		if u.state == Connected && s != nil && s != gone {
			u.mu.Unlock()
			return s, nil
		}
		state, a, cause := u.state, u.next, u.lastErr
		u.wantedLocked()
		wait := u.attempting || state == Connecting || state == Connected || state == Reconnecting
		if (state == Reconnecting || state == Failed) && !u.attempting && !u.earlyUsed {
			wait = true
			signal(u.early)
		}
		if wait {
			u.waiting++
		}
		u.mu.Unlock()
		if !wait {
			return nil, &UnavailableError{State: state, Err: cause}
		}
		if err := u.awaitAttempt(ctx, a, state, cause); err != nil {
			return nil, err
		}
	}
}

// awaitAttempt waits for the attempt a, which a request that found the
// upstream in state, after cause, waits for, as one of u.waiting. It fails
// if the attempt failed or ctx ended first.
func (u *Upstream) awaitAttempt(ctx context.Context, a *op, state State, cause error) error {
	defer func() {
		u.mu.Lock()
		u.waiting--
		u.mu.Unlock()
	}()
	select {
	case <-a.done:
		var unavailable *UnavailableError
		switch {
		case errors.As(a.err, &unavailable): // a command ended the wait
			return unavailable
		case a.err != nil:
			return &UnavailableError{State: u.State(), Err: a.err}
		}
		return nil
	case <-ctx.Done():
		if cause == nil {
			return &UnavailableError{State: state, Err: ctx.Err()}
		}
		return &waitEnded{ctxErr: ctx.Err(), unavailable: &UnavailableError{State: state, Err: cause}}
	}
}

// abandon ends a session that a request found dead with err, so that the
// owner notices at once and reconnects, and no other request picks it up
// meanwhile. Unless err says the server went away by itself (then its
// process's exit, or the connection's own failure, explains more), the
// first err is the session's cause of loss: what the close that follows
// runs into (a DELETE to the dead server, a process's clean exit on EOF)
// explains nothing. It is idempotent.
func (u *Upstream) abandon(s *session, err error) {
	if !peerGone(err) {
		s.deadErr.CompareAndSwap(nil, &err)
	}
	s.dead.Store(true)
	u.detach(s)
	s.conn.close()
}

// writeFailed reports whether err proves that a request was not written: a
// write to a child's stdin whose reader is gone, or that we had closed. A
// read that the close of a pipe interrupted fails alike, but the request may
// have been written before it, so only an error that names the write counts:
// a child's pipes say which side failed (*fs.PathError's Op), and a broken
// pipe (brokenPipe) comes from writes alone. An in-memory pipe's
// io.ErrClosedPipe says neither (nor does a read error that go-sdk hands to
// a call it had not yet written): the call may have run.
func writeFailed(err error) bool {
	if brokenPipe(err) {
		return true
	}
	var pathErr *fs.PathError
	return errors.As(err, &pathErr) && pathErr.Op == "write" && errors.Is(err, os.ErrClosed)
}

// peerGone reports whether err says that the other end of a connection
// went away, or that we closed it.
func peerGone(err error) bool {
	return writeFailed(err) || errors.Is(err, os.ErrClosed) || errors.Is(err, io.ErrClosedPipe) || errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// timeoutOr turns the expiry of the server's own timeout into ErrTimeout.
func (u *Upstream) timeoutOr(ctx, callCtx context.Context, d time.Duration, err error) error {
	if ctx.Err() == nil && errors.Is(callCtx.Err(), context.DeadlineExceeded) && !errors.Is(err, ErrTimeout) {
		var ended *waitEnded
		if errors.As(err, &ended) {
			err = ended.unavailable // "timed out" says that the wait ended
		}
		return fmt.Errorf("%w after %v: %w", ErrTimeout, d, err)
	}
	return err
}

// waitEnded is a wait for a connection that its context ended: the
// context's error, and why there was no connection.
type waitEnded struct {
	ctxErr      error
	unavailable *UnavailableError
}

func (e *waitEnded) Error() string   { return e.ctxErr.Error() + ": " + e.unavailable.Error() }
func (e *waitEnded) Unwrap() []error { return []error{e.ctxErr, e.unavailable} }

// acquire takes a slot of sem, waiting at most as long as ctx.
func acquire(ctx context.Context, sem chan struct{}) (func(), error) {
	select {
	case sem <- struct{}{}:
		return func() { <-sem }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// sleep waits d, or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// An outcome class says what a failed request may have done.
type outcome int

const (
	// notDelivered: the server never received it; a replay is safe.
	notDelivered outcome = iota
	// ambiguous: it was sent, and may have run.
	ambiguous
	// deterministic: the server answered with an error a replay would repeat.
	deterministic
	// cancelled: the caller gave up.
	cancelled
)

// classify says what a failed call may have done, whether its session is
// dead, and how long the server asked us to wait before trying again. ctx is
// the caller's, d what the HTTP transport saw of the request, and overHTTP
// whether the session has that transport (else it is a stream: a child's
// pipes, or a transport from Options.Dial).
func classify(ctx context.Context, err error, d *delivery, overHTTP bool) (class outcome, dead bool, wait time.Duration) {
	if ctx.Err() != nil {
		return cancelled, false, 0
	}
	if errors.Is(err, mcp.ErrSessionMissing) {
		return notDelivered, true, 0 // the server answered 404: it never ran it
	}
	if isFrameTooLarge(err) {
		return deterministic, true, 0 // a stream cannot skip the line: it is broken
	}
	if errors.Is(err, errResponseTooLarge) || d.wasTooLarge() {
		return deterministic, false, 0
	}
	if _, ok := mcpconn.Answer(err); ok {
		// The server's own error answer. (The go-sdk's internal closing
		// codes arrive wrapped in mcp.ErrConnectionClosed instead.)
		if !errors.Is(err, mcp.ErrConnectionClosed) {
			return deterministic, false, 0
		}
	}
	if errors.Is(err, mcp.ErrConnectionClosed) {
		return notDelivered, true, 0 // the connection was going before it was sent
	}
	if !overHTTP {
		if writeFailed(err) {
			return notDelivered, true, 0 // the write failed: the peer is gone
		}
		// Written: if the stream broke, the session is dead too.
		return ambiguous, !errors.Is(err, context.DeadlineExceeded), 0
	}
	done, status, retryAfter, transportErr := d.outcome()
	switch {
	case !done:
		// The request never reached the HTTP transport: it was stuck behind a
		// full connection pool or a stream, or failed to be built.
		return notDelivered, false, 0
	case transportErr != nil:
		var op *net.OpError
		if errors.As(transportErr, &op) && op.Op == "dial" {
			return notDelivered, true, 0 // refused, unreachable: nothing was sent
		}
		return ambiguous, false, 0
	case status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable:
		return notDelivered, false, retryAfter
	case status >= 500:
		return ambiguous, false, 0
	case status >= 400:
		return deterministic, false, 0
	default:
		// Delivered and accepted: whatever broke after may have let it run.
		return ambiguous, false, 0
	}
}

// isFrameTooLarge reports whether err is the go-sdk's error for a stdio line
// over its limit.
func isFrameTooLarge(err error) bool {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if e.Error() == "inbound JSON-RPC frame exceeded the configured maximum line length" {
			return true
		}
	}
	return false
}

// retryBudget decides the retries of one request. Without generic retries
// (Max 0) a request gets one replay, at once: design §3's replay of what was
// not delivered. With them, it is the policy of OpenAI's agents SDK: Max
// retries (-1 without limit), allowed while the units used are below Max,
// each costing 1, or 2 when it needs a fresh session, with delays of
// base·2ⁿ over the backoffs taken, capped.
type retryBudget struct {
	max       int
	used      int
	backoffs  int
	base, cap time.Duration
}

func newRetryBudget(r config.Retry) *retryBudget {
	return &retryBudget{max: r.Max, base: r.Backoff(), cap: r.MaxBackoff()}
}

// noRetries is a budget that allows none: for requests that retry on a
// schedule of their own.
func noRetries() *retryBudget { return &retryBudget{used: 1} }

// take charges a retry, 2 if it needs a fresh session, and returns the delay
// before it. It reports false when the budget is spent.
func (b *retryBudget) take(fresh bool) (time.Duration, bool) {
	if b.max == 0 {
		if b.used > 0 {
			return 0, false
		}
		b.used++
		return 0, true
	}
	if b.max != -1 && b.used >= b.max {
		return 0, false
	}
	b.used++
	if fresh {
		b.used++
	}
	delay := b.base << b.backoffs
	if b.backoffs >= 62 || delay < b.base { // overflow
		delay = time.Duration(1<<63 - 1)
	}
	if b.cap > 0 && delay > b.cap {
		delay = b.cap
	}
	b.backoffs++
	return delay, true
}
