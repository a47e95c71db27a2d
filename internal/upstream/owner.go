package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// run is the owner goroutine: the only one that connects, closes sessions and
// moves the state, except to Closed, which Close publishes first.
//
// It connects; while connected it waits for the session to end; when a
// session is lost it reconnects on the ladder (at once, then after 0.5, 1, 2
// and 4 s, each ±20%), then quietly in the background (from 15 s, doubling to
// 5 min). The breaker allows breakerLimit attempts in any breakerWindow; past
// that the upstream is in crash-loop until a manual reconnect.
func (u *Upstream) run() {
	var closers sync.WaitGroup // sessions being closed in the background
	defer close(u.done)
	defer closers.Wait()

	var (
		b        breaker
		s        *session
		failures int  // failed attempts since the last loss, or since the start
		lost     bool // a connection was made and lost: the ladder applies
	)
	closeLater := func(old *session) {
		// In the background, so that a slow DELETE or a slow process never
		// delays the next attempt.
		closers.Go(func() { old.close(u.opts.StopGrace) })
	}
	for {
		if s == nil {
			if !b.allow(time.Now()) {
				u.crashLoop()
				if !u.waitManual() {
					return
				}
				b.reset()
				failures = 0
				continue
			}
			// What follows a failure, decided before the attempt so that its
			// error and its end are published together.
			n := failures + 1
			if !lost {
				n += len(ladder) - 1 // a server that never connected gets no ladder
			}
			delay, onLadder := reconnectDelay(n, u.opts.Rand)
			failState := Failed
			if lost && onLadder {
				failState = Reconnecting
			}
			var err error
			var w wake
			s, w, err = u.attempt(failState)
			if err == nil {
				failures = 0
				switch w {
				case wakeClose:
					u.detach(s)
					s.close(u.closeGrace())
					return
				case wakeLost, wakeManual:
					// Handled by waitConnected, which sees the same signal.
				}
				continue
			}
			if u.ctx.Err() != nil {
				return
			}
			failures++
			switch u.waitRetry(delay) {
			case wakeClose:
				return
			case wakeManual:
				b.reset()
				failures = 0
			}
			continue
		}

		switch u.waitConnected(s, &b) {
		case wakeLost:
			u.lose(s, u.wrap("session", s.lostErr), Reconnecting)
		case wakeManual:
			u.lose(s, u.errorf("reconnect", errors.New("manual reconnect")), Reconnecting)
			b.reset()
		case wakeClose:
			u.detach(s)
			if err := s.close(u.closeGrace()); err != nil {
				u.mu.Lock()
				u.closeErr = &Error{Server: u.name, Op: "close", Err: err}
				u.mu.Unlock()
			}
			return
		}
		closeLater(s)
		s, failures, lost = nil, 0, true
	}
}

// Why the owner goroutine woke up.
type wake int

const (
	wakeNone wake = iota
	wakeTimer
	wakeNudge
	wakeManual
	wakeLost
	wakeClose
)

// waitRetry waits delay before the next attempt, or less if a request or a
// manual reconnect asks for an attempt now.
func (u *Upstream) waitRetry(delay time.Duration) wake {
	t := time.NewTimer(delay)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			return wakeTimer
		case <-u.nudge:
			return wakeNudge
		case <-u.manual:
			if u.manualPending() {
				return wakeManual
			}
		case <-u.ctx.Done():
			return wakeClose
		}
	}
}

// waitManual waits in crash-loop for a manual reconnect. It reports false
// if the upstream closes first.
func (u *Upstream) waitManual() bool {
	for {
		select {
		case <-u.manual:
			if u.manualPending() {
				return true
			}
		case <-u.ctx.Done():
			return false
		}
	}
}

// manualPending reports whether a manual reconnect is asked for that no
// attempt has served yet. A signal left over from one that an attempt
// already served is not.
func (u *Upstream) manualPending() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.manualReq > u.manualSeen
}

// waitConnected waits while s is the session: until it is lost, a manual
// reconnect replaces it, or the upstream closes. Meanwhile it reloads the
// lists the server says changed, or whose cache hint ran out, and a stable
// connection clears the breaker's history.
func (u *Upstream) waitConnected(s *session, b *breaker) wake {
	stable := time.NewTimer(stablePeriod)
	defer stable.Stop()
	for {
		if w := u.reloadChanged(s); w != wakeNone {
			return w
		}
		var expiry <-chan time.Time
		var ttl *time.Timer
		if next := u.nextExpiry(); !next.IsZero() {
			ttl = time.NewTimer(time.Until(next))
			expiry = ttl.C
		}
		w := u.waitEvent(s, b, stable.C, expiry)
		if ttl != nil {
			ttl.Stop()
		}
		if w != wakeNone {
			return w
		}
	}
}

// waitEvent waits for the next thing a connected upstream reacts to. It
// returns wakeNone for those that keep the session.
func (u *Upstream) waitEvent(s *session, b *breaker, stable, expiry <-chan time.Time) wake {
	select {
	case <-s.lost:
		return wakeLost
	case <-u.manual:
		if u.manualPending() {
			return wakeManual
		}
	case <-u.ctx.Done():
		return wakeClose
	case <-u.nudge:
		// A request that raced with a reconnect; nothing to do.
	case <-u.refresh:
		// The caller reloads what changed.
	case <-expiry:
		u.expire()
	case <-stable:
		b.reset()
	}
	return wakeNone
}

// nextExpiry returns when the first list's cache hint runs out, or zero.
func (u *Upstream) nextExpiry() time.Time {
	var next time.Time
	for _, t := range u.expires {
		if !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	return next
}

// expire marks the lists whose cache hint ran out as changed.
func (u *Upstream) expire() {
	now := time.Now()
	for l, t := range u.expires {
		if !t.IsZero() && !now.Before(t) {
			u.expires[l] = time.Time{}
			u.listGen[l].Add(1)
		}
	}
}

// attempt makes one connection attempt. On success its session becomes the
// current one and its lists are loaded; on failure the upstream moves to
// failState with the error. Either way the outcome and the end of the
// attempt are published together, so that a waiter never sees one without
// the other. The wake is why the loading stopped early, if it did.
func (u *Upstream) attempt(failState State) (*session, wake, error) {
	u.mu.Lock()
	u.attempting = true
	u.attemptSeq++
	u.manualSeen = u.manualReq // this attempt serves every reconnect asked for so far
	epoch := u.epoch
	// A reconnect attaches its session before it lists the tools, so that
	// the calls waiting for it go ahead on the stale list meanwhile.
	reconnect := u.init != nil
	u.mu.Unlock()

	s, err := u.connect(!reconnect)
	var index map[string]*toolInfo
	if err == nil && !reconnect {
		index = indexTools(s.tools)
	}

	u.mu.Lock()
	u.attempting = false
	u.attemptEnd++
	stale := err == nil && (u.epoch != epoch || u.state == Closed)
	switch {
	case stale:
		err = u.errorf("connect", ErrClosed)
	case err == nil:
		u.sess = s
		if reconnect {
			u.reconnects++
		} else {
			u.tools, u.toolIndex = s.tools, index
		}
		u.init = s.cs.InitializeResult()
		u.lastWin = u.attemptEnd
		u.transitionLocked(Connected, nil)
	default:
		u.transitionLocked(failState, err)
	}
	u.bumpLocked()
	u.mu.Unlock()
	u.deliver()

	if stale {
		// Closed while connecting: never resurrected.
		s.close(u.closeGrace())
		return nil, wakeNone, err
	}
	if err != nil {
		return nil, wakeNone, err
	}
	if !reconnect {
		u.fetched[Tools].Store(s.toolsGen)
		u.setExpiry(Tools, s.toolsTTL)
		u.loadAll(s, Prompts, Resources)
		return s, wakeNone, nil
	}
	// The calls that waited for this session go first: the lists can wait
	// for the first answer, or a moment.
	t := time.NewTimer(refreshDelay)
	defer t.Stop()
	select {
	case <-s.answered:
	case <-t.C:
	case <-s.lost:
		return s, wakeLost, nil
	case <-u.ctx.Done():
		return s, wakeClose, nil
	}
	u.loadAll(s, Tools, Prompts, Resources)
	return s, wakeNone, nil
}

// setExpiry starts the cache hint of list l; 0 means none.
func (u *Upstream) setExpiry(l List, ttl time.Duration) {
	if ttl > 0 {
		u.expires[l] = time.Now().Add(max(ttl, minListTTL))
	} else {
		u.expires[l] = time.Time{}
	}
}

// refreshDelay bounds how long a reconnect waits for a first answer before
// it lists again.
const refreshDelay = 100 * time.Millisecond

// connect opens a session: resolve the config, open the transport,
// initialize, and, if list is set, list the tools.
func (u *Upstream) connect(list bool) (*session, error) {
	srv, secrets, err := u.cfg.Resolve(u.opts.LookupEnv)
	u.secrets.Merge(secrets)
	if err != nil {
		return nil, u.wrap("connect", err)
	}
	u.mu.Lock()
	u.url = srv.URL
	u.mu.Unlock()
	ctx := u.ctx
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
	release, err := u.acquireSerial(ctx)
	if err == nil {
		s.toolsGen = u.listGen[Tools].Load()
		s.tools, s.toolsTTL, err = listTools(ctx, s.cs, newRetryBudget(u.cfg.Retry))
		release()
	}
	if err != nil {
		// In the background, so that a slow DELETE cannot delay the report.
		go s.close(u.opts.StopGrace)
		return nil, u.wrap("list tools", u.explain(ctx, err, srv.TimeoutDuration()))
	}
	return s, nil
}

// explain says what an error means when the go-sdk's words do not: our own
// deadline is ErrTimeout, a stdio line over the limit is a response too
// large, and a JSON syntax error is a server writing something else on its
// stream.
func (u *Upstream) explain(ctx context.Context, err error, d time.Duration) error {
	var syntax *json.SyntaxError
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded) && !isProtocolError(err):
		return fmt.Errorf("%w after %v", ErrTimeout, d)
	case isFrameTooLarge(err):
		return u.tooLarge()
	case errors.As(err, &syntax):
		return fmt.Errorf("server wrote something that is not JSON-RPC: %w", err)
	}
	return err
}

// tooLarge is the error of a response over the size limit.
func (u *Upstream) tooLarge() error {
	return fmt.Errorf("%w: over the limit of %d bytes (maxResponseBytes)", errResponseTooLarge, u.cfg.ResponseLimit())
}

// listTools fetches every page of the server's tools, and the cache hint of
// the list. A server that does not offer tools has none.
func listTools(ctx context.Context, cs *mcp.ClientSession, budget *retryBudget) ([]*mcp.Tool, time.Duration, error) {
	if res := cs.InitializeResult(); res != nil && res.Capabilities != nil && res.Capabilities.Tools == nil {
		return nil, 0, nil
	}
	return listPages(ctx, budget, func(ctx context.Context, cursor string) (page[*mcp.Tool], error) {
		res, err := cs.ListTools(ctx, &mcp.ListToolsParams{Cursor: cursor})
		if err != nil {
			return page[*mcp.Tool]{}, err
		}
		return page[*mcp.Tool]{res.Tools, res.NextCursor, res.TTLMs}, nil
	})
}

// A page is one answer to a paginated list request.
type page[T any] struct {
	items []T
	next  string // the cursor of the next page; "" on the last
	ttlMs int    // the server's cache hint; 0 means none
}

// listPages follows cursors until the last page. A failed page is retried
// within budget, which all pages share; the retry asks for the same page
// again. A repeated cursor is an error: the list would never end. It also
// returns the first page's cache hint.
func listPages[T any](ctx context.Context, budget *retryBudget, fetch func(context.Context, string) (page[T], error)) ([]T, time.Duration, error) {
	var items []T
	var ttl time.Duration
	seen := make(map[string]bool)
	cursor := ""
	for {
		p, err := fetch(ctx, cursor)
		if err != nil {
			if ctx.Err() != nil || isProtocolError(err) {
				return nil, 0, err // cancelled, or an answer a retry would repeat
			}
			delay, ok := budget.take(false)
			if !ok {
				return nil, 0, err
			}
			if err := sleep(ctx, delay); err != nil {
				return nil, 0, err
			}
			continue
		}
		if cursor == "" {
			ttl = time.Duration(p.ttlMs) * time.Millisecond
		}
		items = append(items, p.items...)
		if p.next == "" {
			return items, ttl, nil
		}
		if seen[p.next] {
			// The cursor is opaque and may be secret: never show it.
			return nil, 0, errors.New("server returned a repeated cursor")
		}
		seen[p.next] = true
		cursor = p.next
	}
}

// indexTools computes what calls need to know of each tool.
func indexTools(tools []*mcp.Tool) map[string]*toolInfo {
	index := make(map[string]*toolInfo, len(tools))
	for _, t := range tools {
		if t == nil {
			continue
		}
		info := &toolInfo{required: requiredOf(t.InputSchema)}
		if a := t.Annotations; a != nil {
			info.replayable = a.ReadOnlyHint || a.IdempotentHint
		}
		index[t.Name] = info
	}
	return index
}

// validator returns the schema that checks a call's required arguments, or
// nil when nothing is required. It is resolved on first use: most tools of
// most servers are never called.
func (t *toolInfo) validator() *jsonschema.Resolved {
	if t == nil || len(t.required) == 0 {
		return nil
	}
	t.once.Do(func() {
		schema := &jsonschema.Schema{Type: "object", Required: t.required}
		t.resolved, _ = schema.Resolve(nil)
	})
	return t.resolved
}

// requiredOf returns the "required" list of a JSON-decoded schema.
func requiredOf(schema any) []string {
	m, ok := schema.(map[string]any)
	if !ok {
		return nil
	}
	list, _ := m["required"].([]any)
	var req []string
	for _, v := range list {
		if s, ok := v.(string); ok {
			req = append(req, s)
		}
	}
	return req
}

// detach forgets s, so that no new request uses it.
func (u *Upstream) detach(s *session) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.sess == s {
		u.sess = nil
	}
}

// lose forgets s and moves to state, in one step, so that no request sees a
// connected upstream without a session. The tools stay listed.
func (u *Upstream) lose(s *session, err error, state State) {
	u.mu.Lock()
	if u.sess == s {
		u.sess = nil
	}
	u.transitionLocked(state, err)
	u.mu.Unlock()
	u.deliver()
}

// crashLoop stops reconnecting until a manual reconnect; the stale tools go.
func (u *Upstream) crashLoop() {
	u.mu.Lock()
	cause := u.lastErr
	u.tools, u.toolIndex, u.prompts, u.resources, u.templates = nil, nil, nil, nil, nil
	err := error(ErrCircuitOpen)
	if cause != nil {
		err = fmt.Errorf("%w (last error: %v)", ErrCircuitOpen, errors.Unwrap(cause))
	}
	u.transitionLocked(CrashLoop, u.errorf("reconnect", err))
	u.mu.Unlock()
	u.deliver()
}

// transitionLocked records a transition. A repeat of the current state is no
// event, but a new cause is kept. It never leaves Closed.
func (u *Upstream) transitionLocked(to State, err error) {
	if u.state == Closed {
		return
	}
	if u.state == to {
		if err != nil {
			u.lastErr = err
			u.bumpLocked()
		}
		return
	}
	from := u.state
	u.state = to
	u.lastErr = err
	u.since = time.Now()
	u.bumpLocked()
	u.pending = append(u.pending, Event{Server: u.name, From: from, To: to, At: u.since, Err: err})
}

// bumpLocked publishes a change: the version moves, then waiters wake.
func (u *Upstream) bumpLocked() {
	u.version.Add(1)
	close(u.changed)
	u.changed = make(chan struct{})
}

// deliver hands pending events to OnEvent, in order.
func (u *Upstream) deliver() {
	u.deliverMu.Lock()
	defer u.deliverMu.Unlock()
	for {
		u.mu.Lock()
		if len(u.pending) == 0 {
			u.mu.Unlock()
			return
		}
		ev := u.pending[0]
		u.pending = u.pending[1:]
		u.mu.Unlock()
		if u.opts.OnEvent != nil {
			u.opts.OnEvent(ev)
		}
	}
}
