package upstream

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/oauth2"

	"github.com/switchboard-mcp/switchboard/internal/tracing"
)

// roundTripper is the HTTP client side of an http or sse upstream. It adds
// the server's configured headers (never a downstream client's), records
// what became of each request (see delivery), turns a 400 that names the
// session into the 404 that the go-sdk understands as a lost session, and
// caps the size of responses to POSTs. With auth, it also logs in, for the
// SSE transport, which has no hook for it (see authorized). It sends
// nothing to another origin than home, its server's url's, so the headers
// and the token never go anywhere else (see origin.go).
type roundTripper struct {
	base     http.RoundTripper
	home     origin
	headers  map[string]string
	maxBytes int64
	life     context.Context // the upstream's connections' lifetime: a DELETE ends with it
	notes    *noteCount      // the notifications on streams linked to a peer's request
	front    *frontWatch     // nil, or told the status of every answer
	auth     auth.OAuthHandler
}

func (t *roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	if originOf(req.URL) != t.home {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, otherOrigin("request", req.URL)
	}
	if t.auth != nil {
		return t.authorized(req)
	}
	return t.send(req)
}

// authorized sends req with the server's token, and answers a 401 (or a
// 403 for want of scopes) as go-sdk's Streamable HTTP transport does: the
// handler authorizes, and the request goes once more, with the new token.
func (t *roundTripper) authorized(req *http.Request) (*http.Response, error) {
	first, err := t.withToken(req)
	if err != nil {
		return nil, err
	}
	resp, err := t.send(first)
	if err != nil || resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden {
		return resp, err
	}
	if req.Body != nil && req.GetBody == nil {
		return resp, nil // cannot be sent again: the server's answer stands
	}
	if err := t.auth.Authorize(req.Context(), first, resp); err != nil {
		return nil, err
	}
	again, err := t.withToken(req)
	if err != nil {
		return nil, err
	}
	if req.GetBody != nil {
		if again.Body, err = req.GetBody(); err != nil {
			return nil, err
		}
	}
	return t.send(again)
}

// withToken returns a copy of req with the server's token, if it has one.
// A token that could not be refreshed for want of a grant (invalid_grant)
// leaves the request without one, for the server's 401 to ask for a
// login, as go-sdk's transport does.
func (t *roundTripper) withToken(req *http.Request) (*http.Request, error) {
	req = req.Clone(req.Context())
	ts, err := t.auth.TokenSource(req.Context())
	if err != nil || ts == nil {
		return req, err
	}
	tok, err := ts.Token()
	var retrieve *oauth2.RetrieveError
	switch {
	case errors.As(err, &retrieve) && retrieve.ErrorCode == "invalid_grant":
	case err != nil:
		return nil, err
	default:
		req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	}
	return req, nil
}

// send sends req, unauthorized: see roundTripper.
func (t *roundTripper) send(req *http.Request) (*http.Response, error) {
	traced := trace.SpanContextFromContext(req.Context()).IsValid()
	if len(t.headers) > 0 || traced {
		req = req.Clone(req.Context())
		for k, v := range t.headers {
			req.Header.Set(k, v)
		}
		// An attempt's trace context: see tracing.go.
		tracing.InjectHeader(req.Context(), req.Header)
	}
	if req.Method == http.MethodDelete {
		return t.terminate(req)
	}
	d := deliveryFrom(req.Context())
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		d.record(0, err, 0)
		return nil, err
	}
	if to := redirectTarget(req, resp); to != nil {
		// Not the request's outcome: that is where it goes, if it goes.
		if originOf(to) != t.home {
			resp.Body.Close()
			return nil, otherOrigin("redirect", to)
		}
		return resp, nil
	}
	if resp.StatusCode == http.StatusBadRequest && req.Header.Get("Mcp-Session-Id") != "" {
		resp = sessionRejection(resp)
	}
	d.record(resp.StatusCode, nil, parseRetryAfter(resp.Header.Get("Retry-After")))
	if t.front != nil {
		t.front.saw(resp.StatusCode)
	}
	if req.Method == http.MethodPost && t.maxBytes > 0 {
		resp.Body = &limitedBody{rc: resp.Body, left: t.maxBytes, max: t.maxBytes, d: d}
	}
	if token, ok := req.Context().Value(callKey{}).(string); ok && isEventStream(resp) {
		resp.Body = newLinkedStream(resp.Body, token, t.notes)
	}
	return resp, nil
}

// deleteTimeout bounds the DELETE that ends a session: it is a courtesy to
// the server, and a server that does not answer it must not hold a close.
const deleteTimeout = time.Second

// terminate sends a session's DELETE with its own short deadline, which
// Close's own (see life) may cut shorter.
func (t *roundTripper) terminate(req *http.Request) (*http.Response, error) {
	ctx, cancelCtx := context.WithTimeout(req.Context(), deleteTimeout)
	cancel := cancelCtx
	if t.life != nil {
		stop := context.AfterFunc(t.life, cancelCtx)
		cancel = func() {
			stop()
			cancelCtx()
		}
	}
	resp, err := t.base.RoundTrip(req.WithContext(ctx))
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

// cancelOnClose releases a request's context when its body is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c *cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}

// sessionRejection turns a 400 whose body names the session, as popular
// TypeScript servers answer an unknown session ("Bad Request: No valid
// session ID provided"), into a 404: the session is gone, and the request
// never ran.
func sessionRejection(resp *http.Response) *http.Response {
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if err == nil && strings.Contains(strings.ToLower(string(body)), "session") {
		resp.StatusCode, resp.Status = http.StatusNotFound, "404 Not Found"
	}
	return resp
}

// parseRetryAfter parses a Retry-After header in seconds or as an HTTP date.
func parseRetryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}

// limitedBody fails a response body that grows past max bytes, and tells
// the delivery: the go-sdk reports a broken stream without its cause.
type limitedBody struct {
	rc        io.ReadCloser
	left, max int64
	d         *delivery
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		b.d.overLimit()
		return 0, tooLarge(b.max)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *limitedBody) Close() error { return b.rc.Close() }
