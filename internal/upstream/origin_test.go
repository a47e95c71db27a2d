package upstream

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
	"github.com/switchboard-mcp/switchboard/internal/oauth"
)

// elsewhere is a listener on another origin than the server's (another
// port is another origin), which counts the requests that reach it: a
// hostile server's accomplice, who must get nothing.
type elsewhere struct {
	*httptest.Server
	requests atomic.Int32
}

func newElsewhere(t *testing.T) *elsewhere {
	e := &elsewhere{}
	e.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.requests.Add(1)
		http.NotFound(w, r)
	}))
	t.Cleanup(e.Close)
	return e
}

// redirector serves h until away is set; then it redirects every request,
// with code, to the same path and query at to.
type redirector struct {
	h    http.Handler
	to   string
	code int
	away atomic.Bool
}

func (r *redirector) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if r.away.Load() {
		http.Redirect(w, req, r.to+req.URL.RequestURI(), r.code)
		return
	}
	r.h.ServeHTTP(w, req)
}

// checkRefusedRedirect checks that err refuses a redirect to e, naming its
// origin alone.
func checkRefusedRedirect(t *testing.T, err error, e *elsewhere) {
	t.Helper()
	if !errors.Is(err, errOtherOrigin) || !strings.Contains(err.Error(), "redirect to "+e.URL+" refused") ||
		strings.Contains(err.Error(), e.URL+"/") {
		t.Errorf("error = %v; want a refused redirect to %s, without the path", err, e.URL)
	}
}

// TestRedirectElsewhereCarriesNoSecret: an http or sse server that
// redirects to another origin, at the handshake or later, gets no request
// sent there, so neither its configured headers; the error names the
// origin, not the path.
func TestRedirectElsewhereCarriesNoSecret(t *testing.T) {
	for _, typ := range []config.Transport{config.HTTP, config.SSE} {
		for _, code := range []int{http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
			t.Run(fmt.Sprintf("%s/%d", typ, code), func(t *testing.T) {
				e := newElsewhere(t)
				srv := mcptest.NewServer(mcptest.Script{})
				mux := http.NewServeMux()
				mux.Handle("/mcp", srv.Handler())
				mux.Handle("/sse", srv.SSEHandler())
				front := &redirector{h: mux, to: e.URL, code: code}
				hs := httptest.NewServer(front)
				defer hs.Close()
				defer srv.Close() // before hs: httptest waits for open requests

				t.Setenv("SWITCHBOARD_TEST_TOKEN", "tok-123456")
				t.Setenv("SWITCHBOARD_TEST_KEY", "key-654321")
				path := map[config.Transport]string{config.HTTP: "/mcp", config.SSE: "/sse"}[typ]
				cfg := config.Server{Name: "remote", Type: typ, URL: hs.URL + path,
					Headers: map[string]string{"Authorization": "Bearer ${SWITCHBOARD_TEST_TOKEN}", "X-Api-Key": "${SWITCHBOARD_TEST_KEY}"}}

				u := New(cfg, nil)
				defer u.Close(time.Time{})
				if err := u.Connect(t.Context()); err != nil {
					t.Fatalf("Connect: %v", err)
				}
				front.away.Store(true)
				if _, err := callTool(t.Context(), u, "add", map[string]any{"a": 1, "b": 1}); err == nil {
					t.Errorf("a call redirected elsewhere succeeded")
				}

				again := New(cfg, nil)
				defer again.Close(time.Time{})
				checkRefusedRedirect(t, again.Connect(t.Context()), e)
				if n := e.requests.Load(); n != 0 {
					t.Errorf("the other origin got %d requests, want none", n)
				}
			})
		}
	}
}

// TestOAuthTokenStaysHome: a logged-in server that starts redirecting to
// another origin gets no request sent there, so neither its token.
func TestOAuthTokenStaysHome(t *testing.T) {
	for _, tc := range []struct {
		typ  config.Transport
		path string
	}{{config.HTTP, "/mcp"}, {config.SSE, "/sse"}} {
		t.Run(string(tc.typ), func(t *testing.T) {
			e := newElsewhere(t)
			srv := mcptest.NewServer(mcptest.Script{})
			mcp := &redirector{h: srv.Handler(), to: e.URL, code: http.StatusTemporaryRedirect}
			sse := &redirector{h: srv.SSEHandler(), to: e.URL, code: http.StatusTemporaryRedirect}
			p := &protected{AuthServer: mcptest.NewAuthServer(map[string]http.Handler{"/mcp": mcp, "/sse": sse}), srv: srv}
			t.Cleanup(p.Close)
			t.Cleanup(func() { srv.Close() })
			store := &oauth.Store{Dir: filepath.Join(t.TempDir(), "oauth")}
			p.login(t, store, "s", tc.typ, tc.path)

			u := New(config.Server{Name: "s", Type: tc.typ, URL: p.URL + tc.path}, &Options{OAuth: &oauth.Options{Store: store}})
			defer u.Close(time.Time{})
			if err := u.Connect(t.Context()); err != nil {
				t.Fatalf("Connect: %v", err)
			}
			mcp.away.Store(true)
			sse.away.Store(true)
			if _, err := callTool(t.Context(), u, "add", map[string]any{"a": 1, "b": 1}); err == nil {
				t.Errorf("a call redirected elsewhere succeeded")
			}
			if n := e.requests.Load(); n != 0 {
				t.Errorf("the other origin got %d requests, want none", n)
			}
		})
	}
}

// TestSSEEndpointElsewhereIsRefused: an SSE server whose endpoint event
// names another origin gets no POST sent there.
func TestSSEEndpointElsewhereIsRefused(t *testing.T) {
	e := newElsewhere(t)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "event: endpoint\ndata: %s/messages?key=abc\n\n", e.URL)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer hs.Close()
	t.Setenv("SWITCHBOARD_TEST_KEY", "key-654321")
	u := New(config.Server{Name: "remote", Type: config.SSE, URL: hs.URL + "/sse",
		Headers: map[string]string{"X-Api-Key": "${SWITCHBOARD_TEST_KEY}"}}, nil)
	defer u.Close(time.Time{})
	err := u.Connect(t.Context())
	if !errors.Is(err, errOtherOrigin) || !strings.Contains(err.Error(), "request to "+e.URL+" refused") {
		t.Errorf("Connect = %v; want a request to %s refused", err, e.URL)
	}
	if n := e.requests.Load(); n != 0 {
		t.Errorf("the other origin got %d requests, want none", n)
	}
}

// TestRedirectLoopStops: redirects within the origin are followed up to
// maxRedirects.
func TestRedirectLoopStops(t *testing.T) {
	hs := httptest.NewServer(http.RedirectHandler("/loop", http.StatusTemporaryRedirect))
	defer hs.Close()
	u := New(config.Server{Name: "loop", URL: hs.URL + "/loop"}, nil)
	defer u.Close(time.Time{})
	if err := u.Connect(t.Context()); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("stopped after %d redirects", maxRedirects)) {
		t.Errorf("Connect = %v; want it stopped after %d redirects", err, maxRedirects)
	}
}
