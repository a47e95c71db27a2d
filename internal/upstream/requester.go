package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/oauth"
	"github.com/switchboard-mcp/switchboard/internal/tracing"
	"github.com/switchboard-mcp/switchboard/mcpconn"
)

// A requester sends the requests of an upstream's callers (calls, gets,
// reads, completions, subscriptions) on its current session, with the
// recovery rules of [Upstream.CallTool]: it waits for a session, probes an
// idle one, classifies a failure, and replays what is safe to replay. It
// holds no lock of its own, and no state across requests; what is not its
// job it is given at construction.
type requester struct {
	name     string
	settings *settingsRef
	log      *slog.Logger
	redact   func(string) string // scrubs a message of the server's secrets
	prober   func() *mcp.Client  // the bare client of modern probes

	// session returns the session a request should use, other than gone
	// (nil: any), waiting for one within ctx if the state allows it; the
	// error says why there is none. It is the supervisor's.
	session func(ctx context.Context, gone *session) (*session, error)
	// detach forgets a session that a request found dead, so that no new
	// request uses it.
	detach func(*session)
	// onBehalf registers a request for ctx's peer, if any (see peers.begin).
	onBehalf func(ctx context.Context, meta mcp.Meta) (context.Context, mcp.Meta, func())
	// tracer starts the span of each attempt (see attempt.go).
	tracer trace.Tracer
}

// A label names what is being sent, for errors; only error paths format
// it.
type label struct {
	verb, name string
}

func (l label) String() string { return fmt.Sprintf("%s %q", l.verb, l.name) }

// toolCall calls the tool params.Name with args, the arguments checked
// (see checkArguments). replayable says whether the tool may run twice.
func (r *requester) toolCall(ctx context.Context, params *mcp.CallToolParams, args any, replayable bool) (*mcp.CallToolResult, error) {
	call := *params
	call.Arguments = args
	return sendFor(ctx, r, &call.Meta, label{"call tool", call.Name}, replayable, func(ctx context.Context, s *session) (*mcp.CallToolResult, error) {
		return s.cs.CallTool(ctx, &call)
	})
}

// getPrompt gets the prompt params.Name.
func (r *requester) getPrompt(ctx context.Context, params *mcp.GetPromptParams) (*mcp.GetPromptResult, error) {
	get := *params
	return sendFor(ctx, r, &get.Meta, label{"get prompt", params.Name}, true, func(ctx context.Context, s *session) (*mcp.GetPromptResult, error) {
		return s.cs.GetPrompt(ctx, &get)
	})
}

// readResource reads the resource params.URI.
func (r *requester) readResource(ctx context.Context, params *mcp.ReadResourceParams) (*mcp.ReadResourceResult, error) {
	read := *params
	return sendFor(ctx, r, &read.Meta, label{"read resource", params.URI}, true, func(ctx context.Context, s *session) (*mcp.ReadResourceResult, error) {
		return s.cs.ReadResource(ctx, &read)
	})
}

// complete asks for completions of a prompt's or a resource template's
// argument.
func (r *requester) complete(ctx context.Context, params *mcp.CompleteParams) (*mcp.CompleteResult, error) {
	var what string
	if params.Ref != nil {
		what = params.Ref.Name + params.Ref.URI
	}
	complete := *params
	return sendFor(ctx, r, &complete.Meta, label{"complete", what}, true, func(ctx context.Context, s *session) (*mcp.CompleteResult, error) {
		if caps := s.capabilities(); caps.Completions == nil {
			return nil, ErrNotSupported
		}
		return s.cs.Complete(ctx, &complete)
	})
}

// sendFor sends a client's request, whose _meta is *meta, on behalf of the
// peer that ctx carries, if any (see requester.onBehalf), with the
// recovery rules of do, and returns what send returned.
func sendFor[R any](ctx context.Context, r *requester, meta *mcp.Meta, req label, replayable bool, send func(context.Context, *session) (R, error)) (R, error) {
	var end func()
	ctx, *meta, end = r.onBehalf(ctx, *meta)
	defer end()
	base := *meta
	var res R
	err := r.do(ctx, req, replayable, func(ctx context.Context, s *session) (err error) {
		// Each attempt carries its own span's trace context.
		*meta = tracing.InjectMeta(ctx, base)
		res, err = send(ctx, s)
		return err
	})
	return res, err
}

// do runs one request, send, and returns its error as an *Error that
// names req. replayable says whether it may run twice.
func (r *requester) do(ctx context.Context, req label, replayable bool, send func(context.Context, *session) error) error {
	scrub, err := r.retrying(ctx, r.settings.Load(), req, replayable, send)
	switch {
	case err == nil:
		return nil
	case scrub:
		return wrapError(r.name, r.redact, req.String(), err)
	}
	return &Error{Server: r.name, Op: req.String(), Err: err}
}

// retrying runs one request with the recovery rules of [Upstream.CallTool]
// and the settings set. req is what the request is for (its name is the
// tool of an [*AmbiguousError]). It returns the error, and whether its
// message may carry a secret: then the caller scrubs it. Each request sent
// is an attempt, with a span of its own (see attempt.go), which says what
// became of it.
func (r *requester) retrying(ctx context.Context, set *settings, req label, replayable bool, send func(context.Context, *session) error) (scrub bool, _ error) {
	callCtx := ctx
	timeout := set.cfg.TimeoutDuration()
	if timeout > 0 {
		var cancel context.CancelFunc
		callCtx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	limit := set.cfg.ResponseLimit()
	budget := newRetryBudget(set.cfg.Retry)
	var (
		gone     *session // a session known to be dead
		resessed bool     // the one free replay on a fresh session is spent
		attempts int      // the requests sent
	)
	for {
		s, err := r.session(callCtx, gone)
		if err != nil {
			return false, timeoutOr(ctx, callCtx, timeout, err)
		}
		if !r.probe(callCtx, s, set.serial) {
			gone = s // the session is dead: get another; nothing was sent
			continue
		}
		// The slot is taken once there is a session to send on: a request
		// that waits for a connection is not in flight.
		release, err := acquire(callCtx, set.slots)
		if err != nil {
			return false, timeoutOr(ctx, callCtx, timeout, err)
		}
		attempts++
		a := r.startAttempt(callCtx, req, s, attempts)
		d := &delivery{}
		err = sendOn(withDelivery(a.ctx, d), s, set.serial, send)
		release()
		if err == nil {
			a.end()
			return false, nil
		}
		if login := loginRequired(err); login != nil {
			// Nothing ran. A step-up concerns this request alone; else the
			// token was refused and could not be renewed: the server waits
			// for a login (see owner.lose).
			if len(login.Scopes) == 0 {
				r.abandon(s, login)
			}
			a.fail(err, notDelivered, "login required")
			return false, login
		}
		class, dead, wait := classify(ctx, err, d, s.http != nil)
		if dead {
			r.abandon(s, explain(callCtx, err, timeout, limit))
			gone = s
		} else if s.http != nil && d.transportFailed() {
			// A pooled connection died under the request, as they all do
			// when a server restarts: drop the others, so that a replay
			// does not meet the same fate.
			s.http.CloseIdleConnections()
		}
		switch {
		case class == cancelled:
			a.fail(err, class, "cancelled by the caller")
			return false, ctx.Err()
		case class == deterministic && d.wasTooLarge():
			a.fail(err, class, "not retried: response too large")
			return false, tooLarge(limit)
		case class == deterministic:
			err = explain(callCtx, err, timeout, limit)
			a.fail(err, class, "not retried: the server's answer")
			return true, err
		case class == ambiguous && !replayable:
			err = explain(callCtx, err, timeout, limit)
			a.fail(err, class, "not retried: may have run, and the tool is not idempotent")
			return true, &AmbiguousError{Tool: req.name, Err: err}
		}
		// Not delivered, or ambiguous for a request that may run twice. A
		// stale session gets one free replay on a fresh one (design §3);
		// the rest comes out of the budget.
		var delay time.Duration
		if class == notDelivered && dead && !resessed {
			resessed = true
			a.fail(err, class, "replayed on a new session: the session was gone")
		} else if d, ok := budget.take(dead); ok {
			delay = d
			a.fail(err, class, "retried")
		} else {
			err = explain(callCtx, err, timeout, limit)
			a.fail(err, class, "not retried: no retries left")
			return true, err
		}
		if err := sleep(callCtx, max(wait, delay)); err != nil {
			return false, timeoutOr(ctx, callCtx, timeout, err)
		}
	}
}

// abandon ends a session that a request found dead with err, so that the
// owner notices at once and reconnects, and no other request picks it up
// meanwhile. Unless err says the server went away by itself (then its
// process's exit, or the connection's own failure, explains more), the
// first err is the session's cause of loss: what the close that follows
// runs into (a DELETE to the dead server, a process's clean exit on EOF)
// explains nothing. It is idempotent.
func (r *requester) abandon(s *session, err error) {
	if !peerGone(err) {
		s.deadErr.CompareAndSwap(nil, &err)
	}
	s.dead.Store(true)
	r.detach(s)
	s.conn.close()
}

// probe checks, before its next use, a session that sat idle past
// idleProbe: a legacy session with ping (a 1 s timeout; "method not found"
// counts as alive), a modern HTTP one with server/discover. It reports false,
// after abandoning the session, if the session is dead. One caller probes;
// the others wait for its answer, each within its own deadline: a caller
// that cannot wait goes ahead and lets its request find out.
func (r *requester) probe(ctx context.Context, s *session, serial chan struct{}) bool {
	for s.idle() && !s.dead.Load() {
		s.probeMu.Lock()
		if wait := s.probing; wait != nil {
			s.probeMu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return true
			}
		}
		done := make(chan struct{})
		s.probing = done
		s.probeMu.Unlock()
		alive := r.ping(ctx, s, serial)
		s.probeMu.Lock()
		s.probing = nil
		s.probeMu.Unlock()
		close(done)
		return alive
	}
	return !s.dead.Load()
}

// ping sends the probe of an idle session and abandons the session if it
// fails. A probe that gets no answer either way (the caller gave up, or the
// slot of a serialized server stayed taken) lets the request find out.
func (r *requester) ping(parent context.Context, s *session, serial chan struct{}) bool {
	ctx, cancel := context.WithTimeout(parent, probeTimeout)
	defer cancel()
	var err error
	switch {
	case !s.modern():
		sent := false
		err = serially(ctx, serial, func() error {
			sent = true
			return s.cs.Ping(ctx, nil)
		})
		var rpcErr *jsonrpc.Error
		switch {
		case !sent || parent.Err() != nil:
			return true
		case errors.As(err, &rpcErr) && rpcErr.Code == jsonrpc.CodeMethodNotFound:
			err = nil // a server without ping is alive
		}
	case s.client != nil:
		err = r.discover(ctx, s)
		if parent.Err() != nil {
			return true
		}
	}
	if err != nil {
		r.log.Info("idle session failed its probe; reconnecting", "error", r.redact(err.Error()))
		r.abandon(s, fmt.Errorf("probe of an idle session: %w", err))
		return false
	}
	s.touch()
	return true
}

// discover probes a modern HTTP server with server/discover: a fresh
// client connection, which in the stateless era is that one request.
func (r *requester) discover(ctx context.Context, s *session) error {
	t := &mcp.StreamableClientTransport{Endpoint: s.endpoint, HTTPClient: s.client, DisableStandaloneSSE: true, OAuthHandler: s.auth}
	cs, err := r.prober().Connect(ctx, t,
		&mcp.ClientSessionOptions{ProtocolVersion: modernProtocolVersion})
	if err != nil {
		return err
	}
	return cs.Close()
}

// sendOn sends one request on s with send, holding serial (if not nil)
// around it, and notes an answer: the session is alive.
func sendOn(ctx context.Context, s *session, serial chan struct{}, send func(context.Context, *session) error) error {
	err := serially(ctx, serial, func() error { return send(ctx, s) })
	if err == nil || isProtocolError(err) {
		s.touch()
		s.answer.Do(func() { close(s.answered) })
	}
	return err
}

// serially runs f holding serial, a server's size-1 semaphore when its
// requests are serialized (else nil: f runs at once). The slot is held for
// one request, never through a retry's backoff.
func serially(ctx context.Context, serial chan struct{}, f func() error) error {
	if serial != nil {
		release, err := acquire(ctx, serial)
		if err != nil {
			return err
		}
		defer release()
	}
	return f()
}

// isProtocolError reports whether err is a JSON-RPC error from the server.
func isProtocolError(err error) bool {
	var werr *jsonrpc.Error
	return errors.As(err, &werr)
}

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
	done, status, retryAfter, transportErr := d.recorded()
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

// explain says what an error means when the go-sdk's words do not: our own
// deadline d is ErrTimeout, a stdio line over the limit is a response too
// large (over limit), and a JSON syntax error is a server writing something
// else on its stream (over stdio, a line of over 64 KiB that starts like
// JSON: shorter lines that are not JSON-RPC are skipped, see stdoutFilter).
func explain(ctx context.Context, err error, d time.Duration, limit int64) error {
	var syntax *json.SyntaxError
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded) && !isProtocolError(err):
		return fmt.Errorf("%w after %v", ErrTimeout, d)
	case isFrameTooLarge(err):
		return tooLarge(limit)
	case errors.As(err, &syntax):
		return fmt.Errorf("server wrote something that is not JSON-RPC: %w", err)
	}
	return err
}

// loginRequired returns the login a server asks for, if err says so.
func loginRequired(err error) *oauth.LoginError {
	var login *oauth.LoginError
	if errors.As(err, &login) {
		return login
	}
	return nil
}

// errResponseTooLarge is the cause of a response over the size limit.
var errResponseTooLarge = errors.New("response too large")

// tooLarge is the error of a response over limit, the size limit.
func tooLarge(limit int64) error {
	return fmt.Errorf("%w: over the limit of %d bytes (maxResponseBytes)", errResponseTooLarge, limit)
}

// timeoutOr turns the expiry of the server's own timeout into ErrTimeout.
func timeoutOr(ctx, callCtx context.Context, d time.Duration, err error) error {
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
