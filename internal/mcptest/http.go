package mcptest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// UnknownSessionMode says how an HTTP request carrying an unknown
// Mcp-Session-Id is answered. See [Server.SetUnknownSession].
type UnknownSessionMode int

const (
	// UnknownSession404 answers 404 "session not found", as the go-sdk and
	// the specification do. It is the default.
	UnknownSession404 UnknownSessionMode = iota
	// UnknownSession400 answers 400 with the JSON-RPC error body that popular
	// TypeScript servers send:
	//
	//	{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID provided"},"id":null}
	UnknownSession400
	// UnknownSession400Text answers 400 with the plain text body
	// "Bad Request: No valid session ID provided".
	UnknownSession400Text
)

// UnknownSessionMessage is the message of the 400 answers to an unknown
// session.
const UnknownSessionMessage = "Bad Request: No valid session ID provided"

func (m UnknownSessionMode) String() string {
	switch m {
	case UnknownSession404:
		return "404"
	case UnknownSession400:
		return "400"
	case UnknownSession400Text:
		return "400-text"
	default:
		return fmt.Sprintf("UnknownSessionMode(%d)", int(m))
	}
}

// SetUnknownSession chooses how a Streamable HTTP request with an unknown
// Mcp-Session-Id is answered. The SSE handler always answers 404.
func (s *Server) SetUnknownSession(mode UnknownSessionMode) {
	s.mu.Lock()
	s.unknown = mode
	s.mu.Unlock()
}

// An httpGen is one generation of HTTP handlers: what a server process
// would hold between two restarts. Restart replaces it, so that the old
// sessions are unknown to the new one.
type httpGen struct {
	// The following are set at creation and read-only after that.
	streamable *mcp.StreamableHTTPHandler
	stateless  *mcp.StreamableHTTPHandler
	sse        *mcp.SSEHandler

	// reqs holds the HTTP requests in flight by id, guarded by Server.mu.
	reqs map[string]*httpReq
}

// genKey is the context key under which an HTTP request carries its
// generation, so that the sessions it creates know theirs.
type genKey struct{}

// httpReqKey is the context key under which an HTTP request carries its
// httpReq. An SSE session's handlers see the one of its GET stream.
type httpReqKey struct{}

// requestIDHeader is the header under which serveHTTP hands a request's id
// to the middleware (through mcp.RequestExtra.Header), so that the
// middleware can find the HTTP response that will carry its answer.
const requestIDHeader = "X-Mcptest-Request"

func (s *Server) newGen() *httpGen {
	getServer := func(*http.Request) *mcp.Server { return s.mcp }
	return &httpGen{
		streamable: mcp.NewStreamableHTTPHandler(getServer, nil),
		stateless:  mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{Stateless: true}),
		sse:        mcp.NewSSEHandler(getServer, nil),
		reqs:       make(map[string]*httpReq),
	}
}

// takeLocked removes and returns the requests in flight; later requests are
// not tracked. Server.mu must be held.
func (g *httpGen) takeLocked() map[string]*httpReq {
	reqs := g.reqs
	g.reqs = nil
	return reqs
}

// An httpReq is an HTTP request in flight, which a restart aborts.
type httpReq struct {
	id     string
	cancel context.CancelFunc
	w      *killWriter
}

// abortRequests makes each request end without writing anything more: the
// handler's context is cancelled and, once it returns, the connection is
// dropped (panic(http.ErrAbortHandler)), as if the process had died.
func abortRequests(reqs map[string]*httpReq) {
	for _, r := range reqs {
		r.w.kill()
		r.cancel()
	}
}

// httpReqByID returns the request in flight with the given id, or nil.
func (s *Server) httpReqByID(id string) *httpReq {
	if id == "" {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gen.reqs[id]
}

// Handler returns an http.Handler that serves Streamable HTTP with stateful
// sessions (a go-sdk [mcp.StreamableHTTPHandler]). Use it with
// httptest.NewServer, or use [StartHTTP].
//
// Close the Server before the httptest.Server: httptest.Server.Close waits
// for every request, and hung requests and SSE streams end only when the
// Server closes (or restarts).
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.serveHTTP(w, r, viaStreamable)
	})
}

// SSEHandler returns an http.Handler that serves the 2024-11-05 HTTP+SSE
// transport (a go-sdk [mcp.SSEHandler]).
func (s *Server) SSEHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.serveHTTP(w, r, viaSSE)
	})
}

// RejectPOSTs answers the next n POST requests with HTTP status code,
// without processing them, as an overloaded server or a proxy in front of a
// restarting one does. A positive retryAfter is sent as Retry-After, in
// seconds.
func (s *Server) RejectPOSTs(code, n int, retryAfter time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reject = rejection{code: code, left: n, retryAfter: retryAfter}
}

// HangDeletes makes every later DELETE (a client ending its session) hang
// until the client gives up or the server closes.
func (s *Server) HangDeletes() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hangDeletes = true
}

// rejection is what RejectPOSTs asked for.
type rejection struct {
	code, left int
	retryAfter time.Duration
}

// StatelessHandler returns an http.Handler that serves Streamable HTTP
// without sessions (the 2026-07-28 era: go-sdk StreamableHTTPOptions
// Stateless), for modern clients.
func (s *Server) StatelessHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.serveHTTP(w, r, viaStateless)
	})
}

// Which go-sdk handler serves an HTTP request.
type via int

const (
	viaStreamable via = iota
	viaSSE
	viaStateless
)

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request, kind via) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	req := &httpReq{cancel: cancel, w: &killWriter{w: w}}

	s.mu.Lock()
	if s.isClosed {
		s.mu.Unlock()
		http.Error(w, ErrClosed.Error(), http.StatusServiceUnavailable)
		return
	}
	if r.Method == http.MethodDelete && s.hangDeletes {
		s.mu.Unlock()
		// A server that never answers session termination: the request
		// waits until the client gives up or the server closes.
		_ = s.hang(r.Context(), nil)
		return
	}
	if r.Method == http.MethodPost && s.reject.left > 0 {
		s.reject.left--
		rej := s.reject
		s.mu.Unlock()
		if rej.retryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(int(rej.retryAfter.Seconds())))
		}
		http.Error(w, http.StatusText(rej.code), rej.code)
		return
	}
	s.httpSeq++
	req.id = strconv.FormatUint(s.httpSeq, 10)
	g := s.gen
	g.reqs[req.id] = req
	mode := s.unknown
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(g.reqs, req.id)
		s.mu.Unlock()
	}()

	var (
		h   http.Handler        = g.streamable
		out http.ResponseWriter = req.w
	)
	switch {
	case kind == viaSSE:
		h = g.sse
	case kind == viaStateless:
		h = g.stateless
	case mode != UnknownSession404 && r.Header.Get("Mcp-Session-Id") != "":
		out = &unknownSessionWriter{killWriter: req.w, mode: mode}
	}
	ctx = context.WithValue(ctx, genKey{}, g)
	ctx = context.WithValue(ctx, httpReqKey{}, req)
	r = r.WithContext(ctx)
	r.Header = r.Header.Clone()
	r.Header.Set(requestIDHeader, req.id)
	h.ServeHTTP(out, r)
	if req.w.killed.Load() {
		panic(http.ErrAbortHandler)
	}
}

// errAborted is what writes to an aborted request return.
var errAborted = errors.New("mcptest: request aborted")

// killWriter is an http.ResponseWriter that drops everything once killed,
// and can run a function after its next write.
type killWriter struct {
	w      http.ResponseWriter
	killed atomic.Bool
	after  atomic.Pointer[func()] // run once, after the next write
}

func (k *killWriter) kill() { k.killed.Store(true) }

func (k *killWriter) Header() http.Header { return k.w.Header() }

func (k *killWriter) Write(p []byte) (int, error) {
	if k.killed.Load() {
		return 0, errAborted
	}
	n, err := k.w.Write(p)
	if f := k.after.Swap(nil); f != nil {
		(*f)()
	}
	return n, err
}

func (k *killWriter) WriteHeader(code int) {
	if k.killed.Load() {
		return
	}
	k.w.WriteHeader(code)
}

func (k *killWriter) Flush() {
	if k.killed.Load() {
		return
	}
	if f, ok := k.w.(http.Flusher); ok {
		f.Flush()
	}
}

// unknownSessionWriter turns the go-sdk's 404 for an unknown session into
// the 400 of its mode.
type unknownSessionWriter struct {
	*killWriter
	mode    UnknownSessionMode
	swallow bool // the 404 was replaced: drop its body
}

// unknownSessionJSON is the body TypeScript servers send for an unknown
// session.
const unknownSessionJSON = `{"jsonrpc":"2.0","error":{"code":-32000,"message":"` + UnknownSessionMessage + `"},"id":null}`

func (u *unknownSessionWriter) WriteHeader(code int) {
	if code != http.StatusNotFound || u.swallow {
		u.killWriter.WriteHeader(code)
		return
	}
	u.swallow = true
	h := u.Header()
	h.Del("Content-Length")
	body := unknownSessionJSON + "\n"
	if u.mode == UnknownSession400Text {
		h.Set("Content-Type", "text/plain; charset=utf-8")
		body = UnknownSessionMessage + "\n"
	} else {
		h.Set("Content-Type", "application/json")
	}
	u.killWriter.WriteHeader(http.StatusBadRequest)
	_, _ = io.WriteString(u.killWriter, body)
}

func (u *unknownSessionWriter) Write(p []byte) (int, error) {
	if u.swallow {
		return len(p), nil
	}
	return u.killWriter.Write(p)
}

// HTTPServer is a [Server] behind a real loopback listener that can be
// stopped and started again on the same address: a process restart for
// HTTP tests. It serves Streamable HTTP at URL (stateful sessions) and at
// StatelessURL (none), and HTTP+SSE at SSEURL.
//
// It is safe for concurrent use. Closing it does not close the Server.
type HTTPServer struct {
	URL    string // http://127.0.0.1:PORT/mcp
	SSEURL string // http://127.0.0.1:PORT/sse
	// StatelessURL serves Streamable HTTP without sessions.
	StatelessURL string // http://127.0.0.1:PORT/stateless

	// The following are set by StartHTTP and read-only after that.
	srv  *Server
	addr string
	mux  *http.ServeMux

	// mu guards the following fields. It is held for the whole of Start,
	// Stop and Close, so that they never overlap.
	mu     sync.Mutex
	run    *httpRun // nil while stopped
	closed bool
}

// An httpRun is one listening period of an HTTPServer.
type httpRun struct {
	hs     *http.Server
	mux    http.Handler
	served chan struct{} // closed when Serve has returned

	mu       sync.Mutex
	stopping bool           // guarded by mu
	handlers sync.WaitGroup // handlers running; Add only under mu while !stopping
}

func (r *httpRun) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	if r.stopping {
		r.mu.Unlock()
		panic(http.ErrAbortHandler)
	}
	r.handlers.Add(1)
	r.mu.Unlock()
	defer r.handlers.Done()
	r.mux.ServeHTTP(w, req)
}

// StartHTTP serves s on a new listener on 127.0.0.1 (a free port): Streamable
// HTTP at /mcp and HTTP+SSE at /sse. Call [HTTPServer.Close] when done.
func StartHTTP(s *Server) (*HTTPServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("mcptest: listen: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", s.Handler())
	mux.Handle("/sse", s.SSEHandler())
	mux.Handle("/stateless", s.StatelessHandler())
	h := &HTTPServer{
		srv:  s,
		addr: ln.Addr().String(),
		mux:  mux,
	}
	h.URL = "http://" + h.addr + "/mcp"
	h.SSEURL = "http://" + h.addr + "/sse"
	h.StatelessURL = "http://" + h.addr + "/stateless"
	h.run = h.serve(ln)
	return h, nil
}

func (h *HTTPServer) serve(ln net.Listener) *httpRun {
	run := &httpRun{mux: h.mux, served: make(chan struct{})}
	run.hs = &http.Server{
		Handler:  run,
		ErrorLog: log.New(io.Discard, "", 0),
	}
	go func() {
		defer close(run.served)
		_ = run.hs.Serve(ln)
	}()
	return run
}

// Stop closes the listener and every connection, and the Server forgets its
// sessions ([Server.Restart]). It waits for the handlers to return. Stopping
// a stopped server does nothing.
func (h *HTTPServer) Stop() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.stopLocked()
}

func (h *HTTPServer) stopLocked() error {
	run := h.run
	if run == nil {
		return nil
	}
	h.run = nil
	run.mu.Lock()
	run.stopping = true
	run.mu.Unlock()
	err := run.hs.Close()
	<-run.served
	h.srv.Restart()
	run.handlers.Wait()
	if err != nil {
		return fmt.Errorf("mcptest: stop: %w", err)
	}
	return nil
}

// Start listens again on the same address. Starting a running server does
// nothing; starting a closed one returns [ErrClosed].
func (h *HTTPServer) Start() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return ErrClosed
	}
	if h.run != nil {
		return nil
	}
	ln, err := net.Listen("tcp", h.addr)
	if err != nil {
		return fmt.Errorf("mcptest: listen: %w", err)
	}
	h.run = h.serve(ln)
	return nil
}

// Close stops the server for good. It is idempotent.
func (h *HTTPServer) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	return h.stopLocked()
}
