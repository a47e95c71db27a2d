package upstream

import (
	"errors"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
	"github.com/switchboard-mcp/switchboard/internal/oauth"
)

// protected is an MCP server behind an authorization server, over both
// HTTP transports: /mcp and /sse.
type protected struct {
	*mcptest.AuthServer
	srv *mcptest.Server
}

func newProtected(t *testing.T) *protected {
	t.Helper()
	srv := mcptest.NewServer(mcptest.Script{})
	a := mcptest.NewAuthServer(map[string]http.Handler{"/mcp": srv.Handler(), "/sse": srv.SSEHandler()})
	t.Cleanup(a.Close)
	t.Cleanup(func() { srv.Close() }) // before a: httptest waits for open requests
	return &protected{AuthServer: a, srv: srv}
}

// login logs name in to the server at path, as `switchboard login` does:
// an upstream whose OAuth options run the flow, with a browser that
// approves at once.
func (p *protected) login(t *testing.T, store *oauth.Store, name string, typ config.Transport, path string) {
	t.Helper()
	u := New(config.Server{Name: name, Type: typ, URL: p.URL + path}, &Options{OAuth: &oauth.Options{
		Store: store, Login: mcptest.Headless, RedirectURL: "http://127.0.0.1:1/callback"}})
	defer u.Close(time.Time{})
	if err := u.Connect(t.Context()); err != nil {
		t.Fatalf("login: %v", err)
	}
}

// loggedIn returns a protected server, logged in to as srv (whose URL it
// sets) into a store of its own, and an upstream connected to it with opts
// (whose OAuth it sets), closed when the test ends.
func loggedIn(t *testing.T, srv config.Server, opts *Options) (*protected, *Upstream) {
	t.Helper()
	p := newProtected(t)
	store := &oauth.Store{Dir: t.TempDir()}
	p.login(t, store, srv.Name, config.HTTP, "/mcp")
	srv.URL = p.URL + "/mcp"
	if opts == nil {
		opts = &Options{}
	}
	opts.OAuth = &oauth.Options{Store: store}
	u := New(srv, opts)
	t.Cleanup(func() { u.Close(time.Time{}) })
	if err := u.Connect(t.Context()); err != nil {
		t.Fatal(err)
	}
	return p, u
}

// TestNeedsAuthUntilLogin: a server that asks for a login with none stored
// is needs-auth; its seeded tools stay listed, and a call says what to
// run, naming the server. A login stored by another process (the CLI) is
// taken up without a restart. Over both HTTP transports.
func TestNeedsAuthUntilLogin(t *testing.T) {
	for _, tc := range []struct {
		typ  config.Transport
		path string
	}{{config.HTTP, "/mcp"}, {config.SSE, "/sse"}} {
		t.Run(string(tc.typ), func(t *testing.T) {
			p := newProtected(t)
			store := &oauth.Store{Dir: filepath.Join(t.TempDir(), "oauth")}
			var events eventLog
			u := New(config.Server{Name: "tracker", Type: tc.typ, URL: p.URL + tc.path},
				&Options{OAuth: &oauth.Options{Store: store}, OnEvent: events.add})
			defer u.Close(time.Time{})
			u.Seed([]*mcp.Tool{{Name: "add", InputSchema: map[string]any{"type": "object"}}}, nil, "")

			err := u.Connect(t.Context())
			if !errors.Is(err, oauth.ErrLoginRequired) || !strings.Contains(err.Error(), "run: switchboard login tracker") {
				t.Fatalf("Connect = %v; want a login required, with the command", err)
			}
			if got := u.State(); got != NeedsAuth {
				t.Fatalf("state = %v, want needs-auth", got)
			}
			if snap := u.Snapshot(); len(snap.Tools) != 1 {
				t.Errorf("tools = %v; the seeded ones should stay listed", toolNames(snap.Tools))
			}
			_, err = callTool(t.Context(), u, "add", map[string]any{"a": 1, "b": 2})
			if !errors.Is(err, oauth.ErrLoginRequired) || !strings.Contains(err.Error(), `server "tracker"`) ||
				!strings.Contains(err.Error(), "needs-auth") || !strings.Contains(err.Error(), "switchboard login tracker") {
				t.Errorf("call = %v; want needs-auth, naming the server and the command", err)
			}

			p.login(t, store, "tracker", tc.typ, tc.path)
			waitState(t, u, Connected)
			res, err := callTool(t.Context(), u, "add", map[string]any{"a": 1, "b": 2})
			if err != nil || mcptest.Text(res) != "3" {
				t.Fatalf("call after login = %v, %v", res, err)
			}
			if got := events.transitions(); !slices.Contains(got, "connecting>needs-auth") || !slices.Contains(got, "needs-auth>connected") {
				t.Errorf("transitions = %v", got)
			}
			if logins, _ := p.Counts(); logins != 1 {
				t.Errorf("logins = %d, want 1", logins)
			}
		})
	}
}

// TestRefreshOnUnauthorizedMidSession: a token the server stops taking is
// refreshed once, and the call goes through, on the same session.
func TestRefreshOnUnauthorizedMidSession(t *testing.T) {
	p, u := loggedIn(t, config.Server{Name: "s"}, nil)
	p.Revoke(false)
	res, err := callTool(t.Context(), u, "add", map[string]any{"a": 2, "b": 2})
	if err != nil || mcptest.Text(res) != "4" {
		t.Fatalf("call = %v, %v", res, err)
	}
	if logins, refreshes := p.Counts(); logins != 1 || refreshes != 1 {
		t.Errorf("logins, refreshes = %d, %d; want 1, 1", logins, refreshes)
	}
	if u.Snapshot().Reconnects != 0 {
		t.Errorf("the refresh reconnected")
	}
}

// TestRevokedRefreshTokenMovesToNeedsAuth: a call whose token is refused
// and whose refresh is refused too moves the server to needs-auth; no
// token appears in the error, the state or the events.
func TestRevokedRefreshTokenMovesToNeedsAuth(t *testing.T) {
	var events eventLog
	p, u := loggedIn(t, config.Server{Name: "s"}, &Options{OnEvent: events.add})
	p.Revoke(true)
	_, err := callTool(t.Context(), u, "add", map[string]any{"a": 2, "b": 2})
	if !errors.Is(err, oauth.ErrLoginRequired) || !strings.Contains(err.Error(), "run: switchboard login s") {
		t.Fatalf("call = %v; want a login required", err)
	}
	waitState(t, u, NeedsAuth)
	said := []string{err.Error(), u.Snapshot().Err.Error()}
	for _, cause := range events.errs(NeedsAuth) {
		said = append(said, cause.Error())
	}
	for _, s := range said {
		for _, tok := range p.Bearers() {
			if strings.Contains(s, tok) {
				t.Errorf("%q shows a token", s)
			}
		}
		if strings.Contains(s, "refresh-") || strings.Contains(s, "access-") {
			t.Errorf("%q shows a token", s)
		}
	}
}

// TestConfiguredAuthorizationHeaderWins: a server whose config sets the
// Authorization header is left to it: no login, no store.
func TestConfiguredAuthorizationHeaderWins(t *testing.T) {
	p := newProtected(t)
	store := &oauth.Store{Dir: filepath.Join(t.TempDir(), "oauth")}
	u := New(config.Server{Name: "s", URL: p.URL + "/mcp", Headers: map[string]string{"authorization": "Bearer static"}},
		&Options{OAuth: &oauth.Options{Store: store, Login: mcptest.Headless, RedirectURL: "http://127.0.0.1:1/callback"}})
	defer u.Close(time.Time{})
	err := u.Connect(t.Context())
	if err == nil || errors.Is(err, oauth.ErrLoginRequired) {
		t.Fatalf("Connect = %v; want the server's refusal of the configured header", err)
	}
	if got := u.State(); got != Failed {
		t.Errorf("state = %v, want failed", got)
	}
	if logins, _ := p.Counts(); logins != 0 {
		t.Errorf("logins = %d, want none", logins)
	}
}

// TestIdleProbeMeetsALoginRefusal: an idle session whose probe is refused
// for want of a login (the tokens were revoked) moves to needs-auth, and
// the call that probed fails at once with a login required, not after
// the server's timeout.
func TestIdleProbeMeetsALoginRefusal(t *testing.T) {
	timeout := int64(5000)
	p, u := loggedIn(t, config.Server{Name: "s", Timeout: &timeout}, nil)
	p.Revoke(true)
	u.sup.mu.Lock()
	u.sup.sess.lastUsed.Store(0) // idle since the epoch: probed before its next use
	u.sup.mu.Unlock()
	_, err := callTool(t.Context(), u, "add", map[string]any{"a": 1, "b": 2})
	if !errors.Is(err, oauth.ErrLoginRequired) || errors.Is(err, ErrTimeout) {
		t.Fatalf("call = %v; want a login required, at once", err)
	}
	if got := u.State(); got != NeedsAuth {
		t.Errorf("state = %v, want needs-auth", got)
	}
}

// TestStepUpFailsTheRequestOnly: a request refused for want of a scope
// (403 insufficient_scope) fails, naming the login that asks for it; the
// session stays up. A fresh login with that scope, stored by another
// process, serves the next request on the same session.
func TestStepUpFailsTheRequestOnly(t *testing.T) {
	p, u := loggedIn(t, config.Server{Name: "s", Source: "/etc/my mcp.json"}, nil)
	store := u.opts.OAuth.Store
	p.RequireScope("admin")
	_, err := callTool(t.Context(), u, "add", map[string]any{"a": 1, "b": 2})
	if !errors.Is(err, oauth.ErrLoginRequired) || !strings.Contains(err.Error(), "run: switchboard login s --config '/etc/my mcp.json' --scopes admin") {
		t.Fatalf("call = %v; want the login that asks for admin", err)
	}
	if got := u.State(); got != Connected {
		t.Errorf("state = %v; a step-up keeps the session", got)
	}
	// The login of `switchboard login s --scopes admin`.
	lu := New(config.Server{Name: "s", URL: p.URL + "/mcp"}, &Options{OAuth: &oauth.Options{
		Store: store, Login: mcptest.Headless, RedirectURL: "http://127.0.0.1:1/callback", Scopes: []string{"admin"}}})
	defer lu.Close(time.Time{})
	if err := lu.Connect(t.Context()); err != nil {
		t.Fatalf("login with the scope: %v", err)
	}
	res, err := callTool(t.Context(), u, "add", map[string]any{"a": 1, "b": 2})
	if err != nil || mcptest.Text(res) != "3" {
		t.Fatalf("call after the step-up login = %v, %v", res, err)
	}
	if logins, _ := p.Counts(); logins != 2 || u.Snapshot().Reconnects != 0 {
		t.Errorf("logins %d, reconnects %d; want 2 and none", logins, u.Snapshot().Reconnects)
	}
}
