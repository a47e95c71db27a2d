//lint:file-ignore SA1019 The test server takes logging levels, which the gateway forwards.

package mcptest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ErrClosed is returned when a closed [Server] or [HTTPServer] is asked to do
// something.
var ErrClosed = errors.New("mcptest: server closed")

// MCP method names the middleware looks at.
const (
	methodDiscover          = "server/discover"
	methodInitialize        = "initialize"
	methodListTools         = "tools/list"
	methodSetLevel          = "logging/setLevel"
	methodCallTool          = "tools/call"
	methodPing              = "ping"
	methodListTemplates     = "resources/templates/list"
	methodListPrompts       = "prompts/list"
	methodListResources     = "resources/list"
	notificationInitialized = "notifications/initialized"
	notificationProgress    = "notifications/progress"
	notificationToolsChange = "notifications/tools/list_changed"
	modernProtocolVersion   = "2026-07-28"
)

// Server is an in-process scriptable MCP server. It is one go-sdk
// [mcp.Server] that sessions reach in memory ([Server.ConnectInMemory]) or
// over HTTP ([Server.Handler], [Server.SSEHandler], [StartHTTP]), with the
// faults of its [Script] injected by middleware.
//
// A Server is safe for concurrent use. [Server.Close] must be called to stop
// its goroutines.
type Server struct {
	// The following are set by newServer and read-only after that.
	script  Script
	mcp     *mcp.Server
	exit    func()          // command form: ends the process; nil in process
	garbage func()          // stdio with GarbageOnCall: writes a garbage line
	ctx     context.Context // lifetime; cancelled by Close
	cancel  context.CancelFunc
	done    chan struct{} // closed by Close: releases every wait
	closed  chan struct{} // closed when Close has finished

	counter // safe for concurrent use on its own

	toolsMu sync.Mutex // serializes SetTools; taken before mu

	// mu guards the following fields. It is never held while calling into
	// the go-sdk.
	mu         sync.Mutex
	tools      []ToolSpec
	rawSchemas map[string]map[string]any // replaced, never modified
	sessions   map[*mcp.ServerSession]*session
	gen        *httpGen // current HTTP generation; replaced by Restart
	unknown    UnknownSessionMode
	reject     rejection // HTTP statuses to inject: see RejectPOSTs
	prompts    []PromptSpec
	resources  []ResourceSpec
	subs       map[*mcp.ServerSession]map[string]bool // resource subscriptions
	// subscribeGate, if not nil, holds resources/subscribe until closed.
	subscribeGate chan struct{}
	// setLevelGate, if not nil, holds logging/setLevel until closed.
	setLevelGate chan struct{}
	level        mcp.LoggingLevel // the last level a client set
	flood        *ListFlood       // see SetFlood
	failLists    int              // tools/list requests still to fail
	listGate     chan struct{}    // holds tools/list while set
	hangDeletes  bool             // see HangDeletes
	httpSeq      uint64           // the last HTTP request id given
	hangs        int              // requests waiting in hang
	closing      int              // sessions being closed by closeSession
	changed      chan struct{}    // closed and replaced when sessions, hangs or closing change
	isClosed     bool
	// wg counts the goroutines the Server owns. Add is called only with mu
	// held and isClosed false, so that every Add happens before Close waits.
	wg sync.WaitGroup
}

// NewServer returns a server that behaves as s says. It does no I/O and
// starts no goroutine.
func NewServer(s Script) *Server {
	return newServer(s, nil, nil, nil)
}

// newServer returns a server that records events with rec (may be nil),
// ends the process with exit (nil in process) and writes garbage lines with
// garbage (nil unless on stdio).
func newServer(script Script, rec *recorder, exit, garbage func()) *Server {
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		script:   script,
		exit:     exit,
		ctx:      ctx,
		cancel:   cancel,
		done:     make(chan struct{}),
		closed:   make(chan struct{}),
		sessions: make(map[*mcp.ServerSession]*session),
		changed:  make(chan struct{}),
		subs:     make(map[*mcp.ServerSession]map[string]bool),
	}
	if script.GarbageOnCall {
		s.garbage = garbage
	}
	s.counter.rec = rec
	s.flood = script.Flood
	s.mcp = mcp.NewServer(
		&mcp.Implementation{Name: script.implName(), Title: script.Title, Description: script.Description, Version: "1.0.0"},
		&mcp.ServerOptions{
			Instructions: script.Instructions,
			PageSize:     max(script.PageSize, 0),
			// Advertise tools, with list_changed, even when the list is empty,
			// so that a later SetTools reaches subscribed clients; likewise
			// prompts and resources when the script has any.
			Capabilities:       capabilities(script),
			CompletionHandler:  completeHandler(script),
			SubscribeHandler:   func(ctx context.Context, req *mcp.SubscribeRequest) error { return s.subscribe(ctx, req) },
			UnsubscribeHandler: func(ctx context.Context, req *mcp.UnsubscribeRequest) error { return s.unsubscribe(ctx, req) },
			SetCacheable: func(_ context.Context, _ mcp.Request, c *mcp.Cacheable) {
				if script.ListTTL > 0 {
					c.TTLMs = int(script.ListTTL.Milliseconds())
				}
			},
		})
	s.mcp.AddReceivingMiddleware(s.receive)
	s.mcp.AddSendingMiddleware(rewriteListChanged)
	s.gen = s.newGen()
	tools := script.Tools
	if tools == nil {
		tools = DefaultTools()
	}
	s.SetTools(tools)
	s.SetPrompts(script.Prompts)
	s.SetResources(script.Resources)
	s.setTemplates(script.Templates)
	return s
}

// capabilities are the script's server capabilities.
func capabilities(script Script) *mcp.ServerCapabilities {
	caps := &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}}
	//lint:ignore SA1019 the Progress tool logs, and the gateway forwards logs.
	caps.Logging = &mcp.LoggingCapabilities{}
	if len(script.Prompts) > 0 || script.Flood.floods("prompts") {
		caps.Prompts = &mcp.PromptCapabilities{ListChanged: true}
	}
	if len(script.Resources) > 0 || len(script.Templates) > 0 || script.Flood.floods("resources") || script.Flood.floods("templates") {
		caps.Resources = &mcp.ResourceCapabilities{ListChanged: true, Subscribe: true}
	}
	if len(script.Prompts) > 0 || len(script.Templates) > 0 {
		caps.Completions = &mcp.CompletionCapabilities{}
	}
	return caps
}

// completeHandler completes the arguments of the script's prompts and
// templates, if it has any: the one value is "REF/ARGUMENT=VALUE", where REF
// is the prompt's name or the template's URI template, as the server knows
// it.
func completeHandler(script Script) func(context.Context, *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	if len(script.Prompts) == 0 && len(script.Templates) == 0 {
		return nil
	}
	return func(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
		ref := req.Params.Ref.Name
		if req.Params.Ref.Type == "ref/resource" {
			ref = req.Params.Ref.URI
		}
		value := fmt.Sprintf("%s/%s=%s", ref, req.Params.Argument.Name, req.Params.Argument.Value)
		return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{value}, Total: 1}}, nil
	}
}

// A session is the Server's view of one go-sdk ServerSession.
type session struct {
	// The following are set at creation and read-only after that.
	ss   *mcp.ServerSession
	conn mcp.Connection // in memory or stdio: closing it is a crash; nil over HTTP
	gen  *httpGen       // HTTP: the generation that created it; nil otherwise

	done   chan struct{} // closed by release: ends every wait of the session
	once   sync.Once
	ended  chan struct{} // closed by watch once the session has ended
	listed atomic.Bool   // HTTP: the first tools/list has been answered
}

func newSession(ss *mcp.ServerSession, conn mcp.Connection, gen *httpGen) *session {
	return &session{
		ss:    ss,
		conn:  conn,
		gen:   gen,
		done:  make(chan struct{}),
		ended: make(chan struct{}),
	}
}

// release ends every wait of the session. It is idempotent.
func (sess *session) release() {
	sess.once.Do(func() { close(sess.done) })
}

// kill ends an in-process session as a crash would: the connection is closed
// first, so that nothing in flight is answered, and then waits are released.
func (sess *session) kill() {
	if sess.conn != nil {
		_ = sess.conn.Close()
	}
	sess.release()
}

// ConnectInMemory connects a new server session over
// [mcp.NewInMemoryTransports] and returns the client side, for
// [mcp.Client.Connect]. The transports are built on net.Pipe, so they work
// inside a testing/synctest bubble (create the Server inside it too).
func (s *Server) ConnectInMemory(ctx context.Context) (mcp.Transport, error) {
	ct, st := mcp.NewInMemoryTransports()
	if _, err := s.connect(ctx, st); err != nil {
		return nil, err
	}
	return ct, nil
}

// connect connects a session over t and registers it. The server keeps the
// connection so that it can close it abruptly.
func (s *Server) connect(ctx context.Context, t mcp.Transport) (*session, error) {
	s.mu.Lock()
	closed := s.isClosed
	s.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	kt := &watchTransport{t: t, script: &s.script, exit: s.exit}
	ss, err := s.mcp.Connect(ctx, kt, nil)
	if err != nil {
		return nil, fmt.Errorf("mcptest: connect: %w", err)
	}
	sess := newSession(ss, kt.conn, nil)
	ok := s.register(sess)
	if !ok {
		_ = kt.conn.Close()
	}
	close(kt.conn.ready) // the connection may now read: the session is known
	if !ok {
		_ = ss.Wait()
		return nil, ErrClosed
	}
	return sess, nil
}

// register adds sess and starts its watcher. It reports false if the server
// is closed.
func (s *Server) register(sess *session) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.isClosed {
		return false
	}
	s.registerLocked(sess)
	return true
}

func (s *Server) registerLocked(sess *session) {
	s.sessions[sess.ss] = sess
	s.notifyLocked()
	s.wg.Add(1)
	go s.watch(sess)
}

// notifyLocked wakes the waiters of await. s.mu must be held.
func (s *Server) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// await waits until cond, called with s.mu held, is true, or ctx is done.
// Tests use it to wait for the server's state without polling.
func (s *Server) await(ctx context.Context, cond func() bool) error {
	for {
		s.mu.Lock()
		ok := cond()
		ch := s.changed
		s.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// watch waits for the session to end, then forgets it.
func (s *Server) watch(sess *session) {
	defer s.wg.Done()
	_ = sess.ss.Wait()
	sess.release()
	s.mu.Lock()
	delete(s.sessions, sess.ss)
	delete(s.subs, sess.ss)
	s.notifyLocked()
	s.mu.Unlock()
	close(sess.ended)
}

// sessionOf returns the session for ss, registering the sessions that the
// HTTP handlers create on their first message (in-process sessions are
// registered before they read anything). It returns nil once the server is
// closed, or for a session that is not the server's.
func (s *Server) sessionOf(ctx context.Context, ss *mcp.ServerSession) *session {
	if ss == nil {
		return nil
	}
	s.mu.Lock()
	if sess, ok := s.sessions[ss]; ok {
		s.mu.Unlock()
		return sess
	}
	g, _ := ctx.Value(genKey{}).(*httpGen)
	if s.isClosed || g == nil {
		s.mu.Unlock()
		return nil
	}
	sess := newSession(ss, nil, g)
	s.registerLocked(sess)
	stale := g != s.gen // created by a handler that Restart retired
	s.mu.Unlock()
	if stale {
		s.closeSession(sess)
	}
	return sess
}

// wait waits for d, or until ctx is done or the session or server closes.
// It is a timer in a select, so it runs on fake time in a synctest bubble.
func (s *Server) wait(ctx context.Context, sess *session, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	var sessDone <-chan struct{}
	if sess != nil {
		sessDone = sess.done
	}
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-sessDone:
		return errReleased
	case <-s.done:
		return errReleased
	}
}

// hang waits until ctx is done or the session or server closes, and returns
// why.
func (s *Server) hang(ctx context.Context, sess *session) error {
	s.mu.Lock()
	s.hangs++
	s.notifyLocked()
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.hangs--
		s.notifyLocked()
		s.mu.Unlock()
	}()
	var sessDone <-chan struct{}
	if sess != nil {
		sessDone = sess.done
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-sessDone:
		return errReleased
	case <-s.done:
		return errReleased
	}
}

// receive is the receiving middleware that injects the Script's faults and
// keeps the counts.
func (s *Server) receive(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		ss, _ := req.GetSession().(*mcp.ServerSession)
		sess := s.sessionOf(ctx, ss)
		if sess == nil {
			return nil, ErrClosed
		}
		switch method {
		case methodDiscover:
			if s.script.LegacyOnly {
				return nil, &jsonrpc.Error{
					Code:    jsonrpc.CodeMethodNotFound,
					Message: fmt.Sprintf("method %q not found", method),
				}
			}
			if s.script.HangOnInitialize {
				return nil, s.hang(ctx, sess)
			}
			if err := s.wait(ctx, sess, s.script.StartDelay); err != nil {
				return nil, err
			}
			res, err := next(ctx, method, req)
			if err == nil && offersModern(res) {
				s.countStart()
				if s.script.ExitAfterInitialize && sess.conn == nil {
					s.exitAfterAnswer(ctx, req, sess)
				}
			}
			return res, err

		case methodInitialize:
			if s.script.HangOnInitialize {
				return nil, s.hang(ctx, sess)
			}
			if err := s.wait(ctx, sess, s.script.StartDelay); err != nil {
				return nil, err
			}
			res, err := next(ctx, method, req)
			if err == nil {
				s.countStart()
			}
			return res, err

		case notificationInitialized:
			res, err := next(ctx, method, req)
			if s.script.ExitAfterInitialize && sess.conn == nil {
				s.closeSession(sess)
			}
			return res, err

		case methodSetLevel:
			if err := s.pass(ctx, &s.setLevelGate); err != nil {
				return nil, err
			}
			if p, ok := req.GetParams().(*mcp.SetLoggingLevelParams); ok && p != nil {
				s.mu.Lock()
				s.level = p.Level
				s.mu.Unlock()
			}
			return next(ctx, method, req)

		case methodListTools:
			s.countList()
			if s.script.HangOnListTools {
				return nil, s.hang(ctx, sess)
			}
			if err := s.listToolsFault(ctx, sess); err != nil {
				return nil, err
			}
			res, err := s.floodPage(ctx, method, req, next)
			if err != nil {
				return nil, err
			}
			res = s.patchSchemas(res)
			if s.script.ExitAfterListTools && sess.conn == nil && sess.listed.CompareAndSwap(false, true) {
				s.exitAfterAnswer(ctx, req, sess)
			}
			return res, nil

		case methodCallTool:
			var name string
			if r, ok := req.(*mcp.CallToolRequest); ok && r.Params != nil {
				name = r.Params.Name
			}
			n := s.countCall(name)
			if s.script.ExitOnCall > 0 && n == s.script.ExitOnCall {
				s.crash(sess)
				return nil, s.hang(ctx, sess)
			}
			if err := s.wait(ctx, sess, s.script.CallDelay); err != nil {
				return nil, err
			}
			if s.garbage != nil {
				s.garbage()
			}
			res, err := next(ctx, method, req)
			if s.script.CrashAfterCall > 0 && n == s.script.CrashAfterCall {
				s.crash(sess) // the tool ran; its answer is lost
				return nil, s.hang(ctx, sess)
			}
			return res, err

		case methodListTemplates:
			if code := s.script.TemplatesError; code != 0 {
				return nil, &jsonrpc.Error{Code: code, Message: fmt.Sprintf("resources/templates/list: error %d (TemplatesError)", code)}
			}
			return s.floodPage(ctx, method, req, next)

		case methodListPrompts, methodListResources:
			return s.floodPage(ctx, method, req, next)

		case methodPing:
			switch s.script.Ping {
			case PingHang:
				return nil, s.hang(ctx, sess)
			case PingMethodNotFound:
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "method not found: ping"}
			case PingFail:
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "session terminated"}
			}
		}
		return next(ctx, method, req)
	}
}

// offersModern reports whether a server/discover result offers revision
// 2026-07-28 or later, that is, whether it completes a handshake rather than
// sending the client back to initialize.
func offersModern(res mcp.Result) bool {
	dr, ok := res.(*mcp.DiscoverResult)
	if !ok {
		return false
	}
	return slices.ContainsFunc(dr.SupportedVersions, func(v string) bool { return v >= modernProtocolVersion })
}

// patchSchemas puts the non-object input schemas that the go-sdk would not
// register back into a tools/list result. It never modifies res.
func (s *Server) patchSchemas(res mcp.Result) mcp.Result {
	s.mu.Lock()
	raw := s.rawSchemas
	s.mu.Unlock()
	lr, ok := res.(*mcp.ListToolsResult)
	if !ok || len(raw) == 0 {
		return res
	}
	out := *lr
	out.Tools = make([]*mcp.Tool, len(lr.Tools))
	for i, t := range lr.Tools {
		out.Tools[i] = t
		if schema, ok := raw[t.Name]; ok {
			t2 := *t
			t2.InputSchema = schema
			out.Tools[i] = &t2
		}
	}
	return &out
}

// exitAfterAnswer closes an HTTP session right after the answer to req has
// been written. (The in-process connections watch their own answers: see
// watchConn.) The answer is the next write to the HTTP response that carries
// it: the POST of the request for Streamable HTTP, the session's GET stream
// for SSE.
func (s *Server) exitAfterAnswer(ctx context.Context, req mcp.Request, sess *session) {
	var hr *httpReq
	if extra := req.GetExtra(); extra != nil && extra.Header != nil {
		hr = s.httpReqByID(extra.Header.Get(requestIDHeader))
	}
	if hr == nil {
		hr, _ = ctx.Value(httpReqKey{}).(*httpReq)
	}
	if hr == nil {
		s.closeSession(sess)
		return
	}
	f := func() { s.closeSession(sess) }
	hr.w.after.Store(&f)
}

// closeSession closes an HTTP session in the background, as an exit knob
// does: its waits are released and the go-sdk forgets it, so that later
// requests get 404.
func (s *Server) closeSession(sess *session) {
	sess.release()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.isClosed {
		return // Close closes every session anyway
	}
	s.closing++
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		_ = sess.ss.Close()
		s.mu.Lock()
		s.closing--
		s.notifyLocked()
		s.mu.Unlock()
	}()
}

// crash ends the session at once, answering nothing: the process exits in
// the command form, the connection is closed in process, and over HTTP the
// whole server restarts (see [Server.Restart]), as a crashed HTTP server
// process would lose every session.
func (s *Server) crash(sess *session) {
	switch {
	case s.exit != nil:
		s.exit()
	case sess.gen != nil:
		s.Restart()
	default:
		sess.kill()
	}
}

// SetTools replaces the tool list. Connected clients are sent
// notifications/tools/list_changed (the go-sdk debounces a burst of changes
// into one notification, about 10ms later). Nil or empty means no tools.
// The specs must not be modified after the call.
func (s *Server) SetTools(tools []ToolSpec) {
	s.toolsMu.Lock()
	defer s.toolsMu.Unlock()
	raw := make(map[string]map[string]any)
	for _, t := range tools {
		if !schemaIsObject(t.InputSchema) {
			raw[t.Name] = t.InputSchema
		}
	}
	s.mu.Lock()
	old := s.tools
	s.tools = slices.Clone(tools)
	s.rawSchemas = raw
	s.mu.Unlock()

	if gone := removed(old, tools, func(t ToolSpec) string { return t.Name }); len(gone) > 0 {
		s.mcp.RemoveTools(gone...)
	}
	for _, t := range tools {
		s.mcp.AddTool(mcpTool(t), s.toolHandler(t))
	}
}

// listChangedMarker marks the progress notification that
// [rewriteListChanged] turns into notifications/tools/list_changed.
type listChangedMarker struct{}

var listChangedToken = &listChangedMarker{}

// NotifyToolsChanged sends notifications/tools/list_changed to every session
// at once, changing nothing. Unlike [Server.SetTools] it is not debounced:
// call it 1000 times for a storm of 1000 notifications. A session that
// cannot take the notification (an HTTP session with no GET stream yet, say)
// misses it.
func (s *Server) NotifyToolsChanged() {
	s.mu.Lock()
	sessions := slices.Collect(maps.Values(s.sessions))
	s.mu.Unlock()
	for _, sess := range sessions {
		// The go-sdk has no public way to send an arbitrary notification, so
		// send a marked progress notification and let rewriteListChanged
		// turn it into list_changed on its way out through the SDK's own
		// send path.
		_ = sess.ss.NotifyProgress(s.ctx, &mcp.ProgressNotificationParams{ProgressToken: listChangedToken})
	}
}

// LogToAll sends every open session one log message (notifications/message)
// at level "error" with data, as a server that logs does: call it in a loop
// for a storm. A session whose client set no logging level gets none (the
// go-sdk's rule, which a hostile server would not keep).
func (s *Server) LogToAll(data any) {
	s.mu.Lock()
	sessions := slices.Collect(maps.Values(s.sessions))
	s.mu.Unlock()
	for _, sess := range sessions {
		_ = sess.ss.Log(s.ctx, &mcp.LoggingMessageParams{Level: "error", Logger: "mcptest", Data: data})
	}
}

// rewriteListChanged is a sending middleware: it turns the marked progress
// notifications of NotifyToolsChanged into notifications/tools/list_changed.
func rewriteListChanged(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == notificationProgress {
			if p, ok := req.GetParams().(*mcp.ProgressNotificationParams); ok {
				if tok, ok := p.ProgressToken.(*listChangedMarker); ok && tok == listChangedToken {
					ss, _ := req.GetSession().(*mcp.ServerSession)
					return next(ctx, notificationToolsChange, &mcp.ServerRequest[*mcp.ToolListChangedParams]{
						Session: ss,
						Params:  &mcp.ToolListChangedParams{},
					})
				}
			}
		}
		return next(ctx, method, req)
	}
}

// Restart makes the server behave as if its process had restarted: every
// HTTP session is forgotten (a request with an old Mcp-Session-Id is
// unknown, see [Server.SetUnknownSession]), HTTP requests in flight are
// aborted without an answer, and in-memory sessions are closed. Tools,
// counts and settings are kept. It does nothing once the server is closed.
func (s *Server) Restart() {
	s.mu.Lock()
	if s.isClosed {
		s.mu.Unlock()
		return
	}
	old := s.gen
	s.gen = s.newGen()
	reqs := old.takeLocked()
	sessions := slices.Collect(maps.Values(s.sessions))
	s.mu.Unlock()

	s.drop(reqs, sessions, s.closeSession)
}

// drop aborts the HTTP requests reqs and ends sessions: a session over a
// connection of ours is killed, any other is handed to end.
func (s *Server) drop(reqs map[string]*httpReq, sessions []*session, end func(*session)) {
	abortRequests(reqs)
	for _, sess := range sessions {
		if sess.conn != nil {
			sess.kill()
		} else {
			end(sess)
		}
	}
}

// OpenSessions returns how many sessions the server has open.
func (s *Server) OpenSessions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sessions)
}

// Counts returns a copy of what the server has seen so far.
func (s *Server) Counts() Counts {
	return s.snapshot()
}

// Close closes every session, aborts HTTP requests in flight, releases
// every hang and waits for the server's goroutines. It is idempotent and
// safe for concurrent use; it always returns nil.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.isClosed {
		s.mu.Unlock()
		<-s.closed
		return nil
	}
	s.isClosed = true
	close(s.done)
	s.cancel()
	reqs := s.gen.takeLocked()
	sessions := slices.Collect(maps.Values(s.sessions))
	s.mu.Unlock()

	s.drop(reqs, sessions, func(sess *session) {
		sess.release()
		_ = sess.ss.Close()
	})
	s.wg.Wait()
	close(s.closed)
	return nil
}

// watchTransport is a Transport that keeps the Connection it makes, so that
// the server can close it abruptly, and wraps it in a watchConn.
type watchTransport struct {
	t      mcp.Transport
	script *Script
	exit   func()
	conn   *watchConn // set by Connect
}

func (w *watchTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := w.t.Connect(ctx)
	if err != nil {
		return nil, err
	}
	w.conn = &watchConn{
		Connection: c,
		script:     w.script,
		exit:       w.exit,
		ready:      make(chan struct{}),
		closed:     make(chan struct{}),
		pending:    make(map[jsonrpc.ID]string),
	}
	return w.conn, nil
}

// SupportsProtocolVersion passes the question on to the wrapped transport.
func (w *watchTransport) SupportsProtocolVersion(v string) bool {
	if p, ok := w.t.(mcp.ProtocolVersionSupporter); ok {
		return p.SupportsProtocolVersion(v)
	}
	return true
}

// watchConn watches the messages of an in-process connection (in memory or
// stdio) to exit right after an answer has been written: the go-sdk gives a
// handler no way to act after its answer is sent, and closing the session
// gracefully would drop the answer.
//
// (Wrapping hides the go-sdk's unexported sessionUpdated hook from the
// underlying connection; it only serves to reject JSON-RPC batches from
// 2025-06-18 clients, which the go-sdk client never sends.)
type watchConn struct {
	mcp.Connection
	script *Script
	exit   func()        // command form: ends the process after the close
	ready  chan struct{} // closed by Server.connect once the session is registered
	closed chan struct{} // closed by Close
	once   sync.Once

	mu      sync.Mutex
	pending map[jsonrpc.ID]string // guarded by mu: method of each request whose answer ends the session
	listed  bool                  // guarded by mu: a tools/list has been answered
}

func (c *watchConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	// Read nothing before the server knows the session (a stdio client
	// writes at once), so that the middleware always finds it.
	select {
	case <-c.ready:
	case <-c.closed:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	msg, err := c.Connection.Read(ctx)
	req, ok := msg.(*jsonrpc.Request)
	if err != nil || !ok {
		return msg, err
	}
	switch {
	case req.Method == notificationInitialized && c.script.ExitAfterInitialize:
		c.exitNow()
		return nil, io.EOF
	case req.Method == methodDiscover && c.script.ExitAfterInitialize && req.IsCall(),
		req.Method == methodListTools && c.script.ExitAfterListTools && req.IsCall():
		c.mu.Lock()
		if req.Method != methodListTools || !c.listed {
			c.pending[req.ID] = req.Method
		}
		c.mu.Unlock()
	}
	return msg, nil
}

func (c *watchConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	err := c.Connection.Write(ctx, msg)
	resp, ok := msg.(*jsonrpc.Response)
	if !ok {
		return err
	}
	c.mu.Lock()
	method, ok := c.pending[resp.ID]
	delete(c.pending, resp.ID)
	exit := ok && err == nil && resp.Error == nil
	if exit && method == methodListTools {
		// Only the first answered tools/list exits.
		c.listed = true
	}
	c.mu.Unlock()
	if exit {
		c.exitNow()
	}
	return err
}

func (c *watchConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return c.Connection.Close()
}

// exitNow drops the connection and, in the command form, ends the process.
func (c *watchConn) exitNow() {
	_ = c.Close()
	if c.exit != nil {
		c.exit()
	}
}

// removed returns the keys of the items of old that now lacks.
func removed[T any](old, now []T, key func(T) string) []string {
	var gone []string
	for _, o := range old {
		if !slices.ContainsFunc(now, func(n T) bool { return key(n) == key(o) }) {
			gone = append(gone, key(o))
		}
	}
	return gone
}
