package gateway

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/internal/identity"
)

// MaxFoundPerSession is how many of the tools a client session found with
// search_tools its tools/list holds, besides search_tools, call_tool and
// the alwaysLoad servers' tools: the most recently found, so that the list
// stays small however long the session searches. A tool that dropped out
// stays callable, directly and through call_tool.
const MaxFoundPerSession = 32

// A session is one client session as the gateway keeps it: what it sees
// (its view of the registry's exposure), what it found, what it last
// listed, and the notifications waiting for it. What it
// holds upstream (subscriptions, a logging level) the set of sessions
// keeps, which holds it for all of them (see sessions).
type session struct {
	ss   *mcp.ServerSession
	done chan struct{} // closed when the session ends

	mu sync.Mutex
	// found are the tools the session found with search_tools, most
	// recent last, at most MaxFoundPerSession.
	found []string
	// listed is what the session last got of each list method (see
	// views): it is told list_changed only when its view differs.
	listed map[string]viewOf
	// ended reports that the session has ended: nothing more is sent.
	ended bool
	// identity is who the session's first token said the caller is; nil
	// without OAuth. The go-sdk refuses the session's later requests under
	// another subject (TokenInfo.UserID).
	identity *identity.Identity
	outbox
}

func newSession(ss *mcp.ServerSession) *session {
	return &session{ss: ss, done: make(chan struct{})}
}

// list returns the session's view of the registry's exposure, and the
// exposure, once no sync is in progress (see registry.listed). A nil
// session (a stateless one) keeps no finds.
func (s *session) list(r *registry) ([]*mcp.Tool, *exposure) {
	var found []string
	if s != nil {
		s.mu.Lock()
		found = slices.Clone(s.found)
		s.mu.Unlock()
	}
	e := r.listed()
	return view(e, found), e
}

// view returns the tools that a session that found the tools found sees of
// e: every tool; or, with tool search on, search_tools and call_tool, the
// tools of the alwaysLoad servers and those found, in that order, each
// once. Who may see what is decided here, and here alone.
func view(e *exposure, found []string) []*mcp.Tool {
	if !e.searchOn {
		tools := make([]*mcp.Tool, len(e.tools))
		for i, t := range e.tools {
			tools[i] = t.def
		}
		return tools
	}
	tools := slices.Clone(e.search)
	listed := make(map[string]bool, len(tools)+len(found))
	for _, t := range tools {
		listed[t.Name] = true
	}
	for _, t := range e.tools {
		if e.always[t.tool.Server] && !listed[t.def.Name] {
			listed[t.def.Name] = true
			tools = append(tools, t.def)
		}
	}
	for _, name := range found {
		if t, ok := e.tool(name); ok && !listed[name] {
			listed[name] = true
			tools = append(tools, t.def)
		}
	}
	return tools
}

// addFound adds names to the tools the session found, as the most recent,
// dropping the oldest beyond MaxFoundPerSession, and reports whether any
// was new: its tools/list then changed.
func (s *session) addFound(names []string) (grew bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, name := range names {
		if i := slices.Index(s.found, name); i >= 0 {
			s.found = slices.Delete(s.found, i, i+1)
		} else {
			grew = true
		}
		s.found = append(s.found, name)
	}
	if n := len(s.found) - MaxFoundPerSession; n > 0 {
		s.found = slices.Delete(s.found, 0, n)
	}
	return grew
}

// push adds n to the session's outbox, unless the same notification waits
// there already, or the session has ended. It reports whether a sender
// must be started (none runs), and whether the outbox, holding limit
// already, overflowed: the session is then to be closed.
func (s *session) push(n queued, limit int) (start, overflowed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.ended || s.overflowed:
		return false, false // the session is closing
	case slices.ContainsFunc(s.queue, n.same):
		return false, false // the client will be told once: it need not be told twice
	case len(s.queue) >= limit:
		s.overflowed, s.queue = true, nil
		return false, true
	}
	s.queue = append(s.queue, n)
	start = !s.sending
	s.sending = true
	return start, false
}

// send sends the session's outbox in order until it is empty or the
// session has ended, each write within writeTimeout.
func (s *session) send(writeTimeout time.Duration, logger *slog.Logger) {
	for {
		s.mu.Lock()
		if len(s.queue) == 0 || s.ended {
			s.sending, s.queue = false, nil
			s.mu.Unlock()
			return
		}
		n := s.queue[0]
		s.queue[0] = queued{}
		s.queue = s.queue[1:]
		s.mu.Unlock()
		ctx, cancel := context.WithTimeout(n.ctx, writeTimeout)
		if _, err := n.next(ctx, n.method, n.req); err != nil {
			// Many clients open no stream to be told on: not news for
			// the operator (see sdkLog).
			logger.Debug("calling "+n.method, "session", s.ss.ID(), "error", err)
		}
		cancel()
	}
}

// setIdentity records who the session's caller is.
func (s *session) setIdentity(id *identity.Identity) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.identity == nil {
		s.identity = id
	}
}

// Identity returns who the session's caller is, or nil.
func (s *session) Identity() *identity.Identity {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.identity
}
