//lint:file-ignore SA1019 Switchboard forwards sampling, elicitation and logging for as long as servers and clients use them.

package gateway

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sessions holds what each client session asked for that the gateway must
// hold upstream on its behalf: resource subscriptions and a logging level.
// A subscription is held upstream while any session wants it, and dropped
// when the last one unsubscribes or goes away.
type sessions struct {
	// uris serializes the subscription changes of each URI, and is held
	// across the upstream requests they make: a subscribe and an
	// unsubscribe of one URI never cross, and a server slow to answer
	// holds up the changes of its own URIs, no other. Lock order: uris,
	// then mu.
	uris uriLocks

	// mu guards the following, and is never held across a request: every
	// handshake and forwarded request takes it.
	mu     sync.Mutex
	byID   map[*mcp.ServerSession]*sessionState
	closed bool
	// level is the level the servers were last asked for, and asking
	// whether a goroutine is asking them now: it asks again for the level
	// the sessions want by the time it is done, so that no one waits
	// behind it, and no lock is held while the servers answer.
	level  mcp.LoggingLevel
	asking bool

	// ends holds each tracked session's done channel, for the requests'
	// peers to read without a lock.
	ends  sync.Map       // *mcp.ServerSession → chan struct{}
	watch sync.WaitGroup // one goroutine per session, until it ends
}

type sessionState struct {
	subs  map[string]bool
	level mcp.LoggingLevel
	done  chan struct{} // closed when the session ends
	// found are the tools the session found with search_tools, most
	// recent last, at most MaxFoundPerSession.
	found []string
	// stale reports that the session's tools/list may have changed since
	// it was last told list_changed.
	stale bool
	// outbox holds the notifications waiting to be sent, oldest first, at
	// most Options.NotifyQueue (see queueNotifications); sending reports
	// that a goroutine sends them; overflowed, that the outbox overflowed
	// and the session is being closed.
	outbox     []queued
	sending    bool
	overflowed bool
}

func (s *sessions) init() { s.byID = make(map[*mcp.ServerSession]*sessionState) }

// track starts following ss, once, until it ends.
func (s *sessions) track(g *Gateway, ss *mcp.ServerSession) *sessionState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.trackLocked(g, ss)
}

func (s *sessions) trackLocked(g *Gateway, ss *mcp.ServerSession) *sessionState {
	if st := s.byID[ss]; st != nil || s.closed {
		return st
	}
	st := &sessionState{subs: make(map[string]bool), done: make(chan struct{})}
	s.byID[ss] = st
	s.ends.Store(ss, st.done)
	s.watch.Go(func() {
		ss.Wait()
		g.sessionEnded(ss)
	})
	return st
}

// done returns a channel closed when ss ends, tracking ss from now on;
// nil once the gateway is closing.
func (s *sessions) done(g *Gateway, ss *mcp.ServerSession) <-chan struct{} {
	if c, ok := s.ends.Load(ss); ok {
		return c.(chan struct{})
	}
	if st := s.track(g, ss); st != nil {
		return st.done
	}
	return nil
}

// listed returns the tools ss found with search_tools, most recent last,
// for a tools/list of ss, which from then on is told list_changed only
// when its list may have changed (see toolsListChanged).
func (s *sessions) listed(g *Gateway, ss *mcp.ServerSession) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.trackLocked(g, ss)
	if st == nil {
		return nil
	}
	st.stale = false
	return slices.Clone(st.found)
}

// addFound adds names to the tools ss found, as the most recent, dropping
// the oldest beyond MaxFoundPerSession, and reports whether any was new:
// the session is then stale.
func (s *sessions) addFound(g *Gateway, ss *mcp.ServerSession, names []string) (grew bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.trackLocked(g, ss)
	if st == nil {
		return false
	}
	for _, name := range names {
		if i := slices.Index(st.found, name); i >= 0 {
			st.found = slices.Delete(st.found, i, i+1)
		} else {
			grew = true
		}
		st.found = append(st.found, name)
	}
	if n := len(st.found) - MaxFoundPerSession; n > 0 {
		st.found = slices.Delete(st.found, 0, n)
	}
	st.stale = st.stale || grew
	return grew
}

// markAllStale marks every session's tools/list as maybe changed.
func (s *sessions) markAllStale() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.byID {
		st.stale = true
	}
}

// takeStale reports whether ss's tools/list may have changed since it was
// last told, and clears it. A session not tracked (one that has not listed
// its tools with search on) is told.
func (s *sessions) takeStale(ss *mcp.ServerSession) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.byID[ss]
	if st == nil {
		return true
	}
	stale := st.stale
	st.stale = false
	return stale
}

// wait waits for the sessions' goroutines, once the sessions are closed.
func (s *sessions) wait() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.watch.Wait()
}

// sessionEnded drops what ss held: its subscriptions, unless another
// session holds them too, and its logging level. A subscribe of ss still
// in flight drops its own (see subscribe).
func (g *Gateway) sessionEnded(ss *mcp.ServerSession) {
	s := &g.sessions
	s.mu.Lock()
	st := s.byID[ss]
	delete(s.byID, ss)
	if st == nil {
		s.mu.Unlock()
		return
	}
	s.ends.Delete(ss)
	close(st.done)
	held := slices.Collect(maps.Keys(st.subs))
	s.mu.Unlock()
	for _, uri := range held {
		unlock, _ := s.uris.lock(context.Background(), uri) // never fails
		g.dropIfUnwanted(uri)
		unlock()
	}
	g.askLevel(context.Background())
}

// dropIfUnwanted ends the upstream subscription to uri if no session
// holds one any more. The caller holds uri's lock.
func (g *Gateway) dropIfUnwanted(uri string) {
	s := &g.sessions
	s.mu.Lock()
	wanted := s.wantedLocked(uri)
	s.mu.Unlock()
	if wanted {
		return
	}
	if err := g.dropUpstream(context.Background(), uri); err != nil {
		g.opts.Logger.Debug("unsubscribe after the last client left", "uri", uri, "error", err)
	}
}

// upstreamWait bounds an upstream request made for the sessions, which
// holds one of their locks.
const upstreamWait = 10 * time.Second

// dropUpstream ends the upstream subscription to uri. It outlives ctx: a
// modern client unsubscribes by cancelling its subscriptions/listen
// request, and the go-sdk calls the unsubscribe handler with that request's
// context, already cancelled.
func (g *Gateway) dropUpstream(ctx context.Context, uri string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), upstreamWait)
	defer cancel()
	return g.m.UnsubscribeResource(ctx, nil, uri)
}

// wantedLocked reports whether any session holds a subscription to uri.
func (s *sessions) wantedLocked(uri string) bool {
	for _, st := range s.byID {
		if st.subs[uri] {
			return true
		}
	}
	return false
}

// subscribe subscribes the client's session to a resource: upstream, if no
// other session is subscribed to it yet. The go-sdk then sends the
// session every resources/updated of that URI.
func (g *Gateway) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	s := &g.sessions
	uri := req.Params.URI
	unlock, err := s.uris.lock(ctx, uri)
	if err != nil {
		return err
	}
	defer unlock()
	s.mu.Lock()
	st := s.trackLocked(g, req.Session)
	wanted := s.wantedLocked(uri)
	s.mu.Unlock()
	if st == nil {
		return fmt.Errorf("subscribe %q: the gateway is closing", uri)
	}
	if !wanted {
		if err := g.m.SubscribeResource(ctx, nil, uri); err != nil {
			return protocolError(ctx, err)
		}
	}
	s.mu.Lock()
	st.subs[uri] = true
	// A session that ended while its subscribe was upstream has had its
	// subscriptions dropped already, without this one.
	ended := s.byID[req.Session] != st
	s.mu.Unlock()
	if ended {
		g.dropIfUnwanted(uri)
	}
	return nil
}

// unsubscribeResource ends the client session's subscription, and the
// upstream one after the last session leaves.
func (g *Gateway) unsubscribeResource(ctx context.Context, req *mcp.UnsubscribeRequest) error {
	s := &g.sessions
	uri := req.Params.URI
	// Not with ctx: it may be cancelled already (see dropUpstream).
	unlock, _ := s.uris.lock(context.WithoutCancel(ctx), uri) // never fails
	defer unlock()
	s.mu.Lock()
	st := s.byID[req.Session]
	if st == nil || !st.subs[uri] {
		s.mu.Unlock()
		return nil // nothing to undo: unsubscribing is idempotent
	}
	delete(st.subs, uri)
	wanted := s.wantedLocked(uri)
	s.mu.Unlock()
	if wanted {
		return nil
	}
	return protocolError(ctx, g.dropUpstream(ctx, uri))
}

// levelOrder ranks the MCP logging levels, most verbose first.
var levelOrder = []mcp.LoggingLevel{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// setLevel records a session's logging level, and asks the servers for the
// most verbose level any session wants: the go-sdk sends each session only
// what its own level lets through.
func (g *Gateway) setLevel(ctx context.Context, ss *mcp.ServerSession, level mcp.LoggingLevel) {
	s := &g.sessions
	s.mu.Lock()
	if st := s.trackLocked(g, ss); st != nil {
		st.level = level
	}
	s.mu.Unlock()
	g.askLevel(ctx)
}

// levelLocked returns the most verbose level any session wants, or "".
func (s *sessions) levelLocked() mcp.LoggingLevel {
	var want mcp.LoggingLevel
	for _, st := range s.byID {
		if st.level != "" && (want == "" || slices.Index(levelOrder, st.level) < slices.Index(levelOrder, want)) {
			want = st.level
		}
	}
	return want
}

// askLevel asks the servers for the most verbose level any session wants,
// unless they were asked for it last, or no session wants any. It outlives
// ctx, bounded. While another goroutine is asking, it returns at once: that
// one asks for the latest level before it stops. So a client's
// logging/setLevel may be answered before the servers are asked for it.
func (g *Gateway) askLevel(ctx context.Context) {
	s := &g.sessions
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.asking {
		return // the one asking asks for the latest level before it stops
	}
	for {
		level := s.levelLocked()
		if level == "" || level == s.level {
			return
		}
		s.level, s.asking = level, true
		s.mu.Unlock()
		askCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), upstreamWait)
		if err := g.hooks.SetLoggingLevel(askCtx, level); err != nil {
			g.opts.Logger.Info("setting the servers' logging level", "level", level, "error", err)
		}
		cancel()
		s.mu.Lock()
		s.asking = false
	}
}

// settle waits for the servers making their first connection, no longer
// than the startup gate (see [hooks.Gateway]), and exposes
// what the manager's views hold: the change events that would expose it
// may still be on their way.
func (g *Gateway) settle(ctx context.Context) {
	g.hooks.Settle(ctx)
	g.syncExposed()
}

// intercept sees every request from clients before the go-sdk handles it:
// the handshake and lists wait, briefly, for servers still making their
// first connection (see settle); with tool search on, a session's
// tools/list is its own (see searchList); it records logging levels, and
// completes the handshake's answer with what the servers offer.
func (g *Gateway) intercept(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "initialize", "server/discover", "tools/list", "prompts/list", "resources/list", "resources/templates/list":
			g.settle(ctx)
		}
		if method == "tools/list" {
			if res := g.toolsList(req); res != nil {
				return res, nil
			}
		}
		var reached bool
		if method == "resources/read" {
			ctx = context.WithValue(ctx, readReachedKey{}, &reached)
		}
		res, err := next(ctx, method, req)
		if err != nil {
			if params, ok := req.GetParams().(*mcp.ReadResourceParams); ok && !reached && isResourceNotFound(err) {
				// The go-sdk's own answer for a URI that nothing
				// registered matches, which does not name it.
				err = resourceNotFound(params.URI)
			}
			return res, err
		}
		switch method {
		case "logging/setLevel":
			params, _ := req.GetParams().(*mcp.SetLoggingLevelParams)
			if ss, ok := req.GetSession().(*mcp.ServerSession); ok && params != nil {
				g.setLevel(ctx, ss, params.Level)
			}
		case "initialize":
			if r, ok := res.(*mcp.InitializeResult); ok {
				g.describe(&r.Capabilities, &r.Instructions)
			}
		case "server/discover":
			if r, ok := res.(*mcp.DiscoverResult); ok {
				g.describe(&r.Capabilities, &r.Instructions)
			}
		}
		return res, err
	}
}

// describe sets what the gateway advertises: tools, the prompts and
// resources it exposes (the go-sdk has set those) or its servers offer,
// with list_changed, and what else its servers offer that it forwards, no
// more; and their instructions, labelled by server.
func (g *Gateway) describe(caps **mcp.ServerCapabilities, instructions *string) {
	c := *caps
	if c == nil {
		c = &mcp.ServerCapabilities{}
		*caps = c
	}
	var (
		text                                         []string
		logs, completes, subscribe, prompts, listing bool
	)
	for _, st := range g.m.Status() {
		if st.Instructions != "" {
			text = append(text, fmt.Sprintf("## %s\n%s", st.Name, st.Instructions))
		}
		if sc := st.Capabilities; sc != nil {
			logs = logs || sc.Logging != nil
			completes = completes || sc.Completions != nil
			subscribe = subscribe || sc.Resources != nil && sc.Resources.Subscribe
			prompts = prompts || sc.Prompts != nil
			listing = listing || sc.Resources != nil
		}
	}
	if prompts && c.Prompts == nil {
		c.Prompts = &mcp.PromptCapabilities{ListChanged: true}
	}
	if listing && c.Resources == nil {
		c.Resources = &mcp.ResourceCapabilities{ListChanged: true}
	}
	c.Logging, c.Completions = nil, nil
	if logs {
		c.Logging = &mcp.LoggingCapabilities{}
	}
	if completes {
		c.Completions = &mcp.CompletionCapabilities{}
	}
	if c.Resources != nil {
		c.Resources.Subscribe = subscribe && !g.opts.Stateless
	}
	g.mu.Lock()
	if g.searchOn {
		text = append([]string{searchInstructions}, text...)
	}
	g.mu.Unlock()
	if len(text) > 0 {
		*instructions = strings.Join(text, "\n\n")
	}
}
