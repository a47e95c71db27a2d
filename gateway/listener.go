package gateway

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/switchboard-mcp/switchboard/internal/ratelog"
)

// The defaults of [HTTPOptions].
const (
	// DefaultMaxConns bounds the connections open at once.
	DefaultMaxConns = 1024
	// DefaultReadHeaderTimeout bounds the wait for a request's headers.
	DefaultReadHeaderTimeout = 10 * time.Second
	// DefaultIdleTimeout bounds the wait for the next request on a
	// keep-alive connection.
	DefaultIdleTimeout = time.Minute
	// DefaultBodyTimeout bounds the wait for a request's body.
	DefaultBodyTimeout = 30 * time.Second
	// DefaultWriteTimeout bounds how long a client may leave its response
	// unread.
	DefaultWriteTimeout = 30 * time.Second
)

// HTTPOptions bound what the clients of an HTTP face can hold: connections,
// and the time a connection may wait on a client that sends or reads
// nothing. A nil *HTTPOptions means all defaults; a zero field means its
// default; a negative one, no limit.
type HTTPOptions struct {
	// MaxConns bounds the connections open at once. A new connection over
	// the limit closes the one that has waited longest for a request (an
	// idle keep-alive connection, or a new one whose headers have not all
	// come); if every connection is in a request, the new one is closed at
	// once. Default DefaultMaxConns.
	MaxConns int
	// ReadHeaderTimeout bounds the wait for a request's headers. Default
	// DefaultReadHeaderTimeout.
	ReadHeaderTimeout time.Duration
	// IdleTimeout closes a keep-alive connection that waited that long for
	// its next request. Default DefaultIdleTimeout.
	IdleTimeout time.Duration
	// BodyTimeout bounds the wait for a request's body, from the time the
	// handler is called: a body still incomplete then ends the request
	// (with 400, from /mcp) and its connection. A request that was
	// refused before its body was read (401, 403) is answered at once, and
	// its connection closed. Default DefaultBodyTimeout.
	BodyTimeout time.Duration
	// WriteTimeout bounds each wait for the client to take a piece (at
	// most 64 KiB) of its response: a client that stops reading loses its
	// connection, and what the response held is freed. A stream (a long
	// call's, or a session's GET) lasts as long as it must: the clock runs
	// only while something waits to be written. Default
	// DefaultWriteTimeout.
	WriteTimeout time.Duration
	// Logger receives a line, at most once a minute per limit, when a
	// limit is hit. Default: discard.
	Logger *slog.Logger
}

// NewHTTPServer returns an http.Server that serves h within the limits of
// opts: h is typically [Gateway.Handler]. The limits on connections, idle
// time and headers are the server's (its ConnState, IdleTimeout and
// ReadHeaderTimeout fields); those on bodies and responses are set per
// request by the server's Handler, which wraps h (a handler that wraps
// Handler in turn runs before the deadlines start). Call its Serve (or
// ServeTLS) with a listener, and its Shutdown to stop.
func NewHTTPServer(h http.Handler, opts *HTTPOptions) *http.Server {
	var o HTTPOptions
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	l := &limits{
		bodyTimeout:  orDefault(o.BodyTimeout, DefaultBodyTimeout),
		writeTimeout: orDefault(o.WriteTimeout, DefaultWriteTimeout),
		log:          &limitLog{logger: o.Logger},
	}
	srv := &http.Server{
		Handler:           l.handler(h),
		ReadHeaderTimeout: orDefault(o.ReadHeaderTimeout, DefaultReadHeaderTimeout),
		IdleTimeout:       orDefault(o.IdleTimeout, DefaultIdleTimeout),
	}
	if srv.IdleTimeout == 0 {
		// With none, the server would take ReadTimeout, ours or not.
		srv.IdleTimeout = -1
	}
	switch n := o.MaxConns; {
	case n == 0:
		n = DefaultMaxConns
		fallthrough
	case n > 0:
		c := &connLimiter{max: n, log: l.log, conns: make(map[net.Conn]time.Time)}
		srv.ConnState = c.track
	}
	return srv
}

// orDefault is d, or def if d is zero, or zero (no limit) if d is
// negative.
func orDefault(d, def time.Duration) time.Duration {
	switch {
	case d == 0:
		return def
	case d < 0:
		return 0
	default:
		return d
	}
}

// limits sets a request's read and write deadlines.
type limits struct {
	bodyTimeout  time.Duration // 0: none
	writeTimeout time.Duration // 0: none
	log          *limitLog
}

// handler sets the deadlines of each request to next.
func (l *limits) handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		if l.bodyTimeout > 0 && r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0 {
			// The deadline also bounds what the server reads of a body the
			// handler left, before it answers.
			if rc.SetReadDeadline(time.Now().Add(l.bodyTimeout)) == nil {
				r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc, l: l}
			}
		}
		if l.writeTimeout <= 0 {
			next.ServeHTTP(w, r)
			return
		}
		dw := &deadlineWriter{ResponseWriter: w, rc: rc, l: l}
		dw.extend() // for a 100 Continue, and a handler that writes nothing
		next.ServeHTTP(dw, r.WithContext(context.WithValue(r.Context(), deadlineWriterKey{}, dw)))
		dw.extend() // for what the server writes after the handler: the rest of the buffer
	})
}

// deadlineBody is a request body read under a deadline, which it lifts
// once the body is read: the server goes on reading the connection in the
// background, to notice a client that went away, and an expired deadline
// there would cancel the request.
type deadlineBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	l    *limits
	done bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	switch {
	case b.done:
	case err == io.EOF:
		b.done = true
		b.rc.SetReadDeadline(time.Time{})
	case errors.Is(err, os.ErrDeadlineExceeded):
		b.done = true
		b.l.log.hit("body", "a request body did not arrive in time; its connection is closed", "limit", "body timeout", "timeout", b.l.bodyTimeout)
	}
	return n, err
}

// deadlineWriterKey carries, in a request's context, the deadlineWriter of
// its response, for a handler that bounds its writes otherwise (see
// Gateway.writeBounded).
type deadlineWriterKey struct{}

// writeChunk is the most written under one write deadline.
const writeChunk = 64 << 10

// deadlineWriter gives each write, and each flush, a deadline of its own:
// writeTimeout from its start, for at most writeChunk bytes.
type deadlineWriter struct {
	http.ResponseWriter
	rc *http.ResponseController
	l  *limits
}

func (w *deadlineWriter) extend() {
	w.rc.SetWriteDeadline(time.Now().Add(w.l.writeTimeout))
}

func (w *deadlineWriter) WriteHeader(code int) {
	w.extend()
	w.ResponseWriter.WriteHeader(code)
}

func (w *deadlineWriter) Write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		w.extend()
		n, err := w.ResponseWriter.Write(p[:min(len(p), writeChunk)])
		written += n
		if err != nil {
			w.timedOut(err)
			return written, err
		}
		p = p[n:]
	}
	return written, nil
}

// FlushError flushes under a fresh deadline, for http.ResponseController.
func (w *deadlineWriter) FlushError() error {
	w.extend()
	err := http.NewResponseController(w.ResponseWriter).Flush()
	if err != nil {
		w.timedOut(err)
	}
	return err
}

// Unwrap gives http.ResponseController the writer underneath.
func (w *deadlineWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *deadlineWriter) timedOut(err error) {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		w.l.log.hit("write", "a client left its response unread; its connection is closed", "limit", "write timeout", "timeout", w.l.writeTimeout)
	}
}

// connLimiter keeps the connections of a server within max, as its
// ConnState hook.
type connLimiter struct {
	max int
	log *limitLog

	mu sync.Mutex
	// conns holds the open connections, each with the time it began to
	// wait for a request (new, or idle), or zero while it is in one.
	conns map[net.Conn]time.Time
}

func (c *connLimiter) track(conn net.Conn, state http.ConnState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch state {
	case http.StateNew:
		if len(c.conns) >= c.max {
			victim, ok := c.longestWaitingLocked()
			if !ok {
				c.log.hit("conns", "too many connections, each in a request; a new one is closed", "limit", "max connections", "max", c.max)
				conn.Close()
				return
			}
			c.log.hit("conns-evicted", "too many connections; the one that waited longest for a request is closed for a new one", "limit", "max connections", "max", c.max)
			victim.Close()
			delete(c.conns, victim)
		}
		c.conns[conn] = time.Now()
	case http.StateIdle:
		if _, ok := c.conns[conn]; ok {
			c.conns[conn] = time.Now()
		}
	case http.StateActive:
		if _, ok := c.conns[conn]; ok {
			c.conns[conn] = time.Time{}
		}
	case http.StateClosed, http.StateHijacked:
		delete(c.conns, conn)
	}
}

// longestWaitingLocked returns the connection that has waited longest for
// a request, if any is waiting.
func (c *connLimiter) longestWaitingLocked() (net.Conn, bool) {
	var victim net.Conn
	var since time.Time
	for conn, t := range c.conns {
		if !t.IsZero() && (victim == nil || t.Before(since)) {
			victim, since = conn, t
		}
	}
	return victim, victim != nil
}

// limitWarnEvery spaces the warnings of a limit: a flood of hits is one
// line a minute.
const limitWarnEvery = time.Minute

// limitLog warns that a limit was hit: at the first hit, and then at most
// once every limitWarnEvery for each limit, with the number of hits held
// back (a ratelog.Log per limit).
type limitLog struct {
	logger *slog.Logger

	mu   sync.Mutex
	logs map[string]*ratelog.Log // by limit
}

// hit warns, with msg and args, that limit was hit, unless it was lately.
// The args of a limit's first hit are those of its later summaries.
func (l *limitLog) hit(limit, msg string, args ...any) {
	l.mu.Lock()
	r := l.logs[limit]
	if r == nil {
		if l.logs == nil {
			l.logs = make(map[string]*ratelog.Log)
		}
		r = ratelog.New(limitWarnEvery, 1, func(held int, _ string) {
			l.logger.Warn(msg, append(slices.Clone(args), "hits", held)...)
		})
		l.logs[limit] = r
	}
	l.mu.Unlock()
	if r.Allow(func() string { return "" }) {
		l.logger.Warn(msg, append(args, "hits", 1)...)
	}
}
