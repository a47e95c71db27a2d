package switchboard_test

import (
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// TestLogin: a login to a protected server sends the user to its
// authorization page, once, and stores a token that a manager with the
// same directory uses; the next login keeps it; a server that needs none
// says so; logout forgets the token.
func TestLogin(t *testing.T) {
	srv, a := mcptest.NewProtectedServer(t)
	open := httptest.NewServer(srv.Handler())
	t.Cleanup(open.Close)
	dir := filepath.Join(t.TempDir(), "oauth")
	tracker := config.Server{Name: "tracker", Type: config.HTTP, URL: a.URL + "/mcp"}

	var opened atomic.Int32
	var prompt strings.Builder
	opts := &switchboard.LoginOptions{OAuthDir: dir, Prompt: &prompt, Open: func(url string) error {
		opened.Add(1)
		return approve(url)
	}}
	res, err := switchboard.Login(t.Context(), tracker, opts)
	if err != nil || res.Outcome != switchboard.LoginStored || res.Tools == 0 {
		t.Fatalf("Login = %+v, %v; want stored, with tools", res, err)
	}
	if opened.Load() != 1 || !strings.Contains(prompt.String(), a.URL+"/authorize?") {
		t.Errorf("the login opened %d URLs and printed %q; want the authorization URL once", opened.Load(), prompt.String())
	}

	m := switchboard.New(&config.Config{Servers: []config.Server{tracker}}, &switchboard.Options{OAuthDir: dir, Cache: switchboard.CacheOff, StartupGate: -1, Strict: true})
	defer m.Close()
	if err := m.Connect(t.Context()); err != nil {
		t.Errorf("a manager with the login's directory: %v", err)
	}

	if res, err := switchboard.Login(t.Context(), tracker, opts); err != nil || res.Outcome != switchboard.LoginKept || opened.Load() != 1 {
		t.Errorf("second Login = %+v, %v, with %d URLs opened; want kept, with none more", res, err, opened.Load()-1)
	}
	unprotected := config.Server{Name: "open", Type: config.HTTP, URL: open.URL + "/mcp"}
	if res, err := switchboard.Login(t.Context(), unprotected, opts); err != nil || res.Outcome != switchboard.LoginNotNeeded {
		t.Errorf("Login to a server that needs none = %+v, %v; want not needed", res, err)
	}

	for _, want := range []bool{true, false} {
		if forgot, err := switchboard.Logout("tracker", dir); forgot != want || err != nil {
			t.Errorf("Logout = %v, %v; want %v", forgot, err, want)
		}
	}
}

// TestLoginFails: a login whose browser never comes back fails after the
// wait, having sent the user once (not once per handshake go-sdk tries);
// a server that has nothing to log in to is refused, naming why.
func TestLoginFails(t *testing.T) {
	_, a := mcptest.NewProtectedServer(t)
	dir := filepath.Join(t.TempDir(), "oauth")

	var opened atomic.Int32
	opts := &switchboard.LoginOptions{OAuthDir: dir, Wait: 100 * time.Millisecond, Prompt: &strings.Builder{}, Open: func(string) error {
		opened.Add(1)
		return nil // the user never finishes
	}}
	_, err := switchboard.Login(t.Context(), config.Server{Name: "tracker", Type: config.HTTP, URL: a.URL + "/mcp"}, opts)
	if err == nil || !strings.HasPrefix(err.Error(), "login tracker: ") || !strings.Contains(err.Error(), "the login's redirect never came back within 100ms") || opened.Load() != 1 {
		t.Errorf("Login without a redirect = %v, with %d URLs opened; want the wait's error, once", err, opened.Load())
	}
	if forgot, err := switchboard.Logout("tracker", dir); forgot || err != nil {
		t.Errorf("after a failed login, Logout = %v, %v; want nothing stored", forgot, err)
	}

	for _, tc := range []struct {
		srv  config.Server
		want string
	}{
		{config.Server{Name: "local", Command: "x"}, "login local: it is a local command (stdio): there is nothing to log in to"},
		{config.Server{Name: "static", Type: config.HTTP, URL: a.URL + "/mcp", Source: "mcp.json", Headers: map[string]string{"authorization": "Bearer x"}},
			"login static: its config sets the Authorization header (in mcp.json), which it uses instead of a login"},
		{config.Server{Name: "nowhere", Type: config.HTTP}, "login nowhere: "},
	} {
		if _, err := switchboard.Login(t.Context(), tc.srv, opts); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("Login(%s) = %v, want %q", tc.srv.Name, err, tc.want)
		}
	}
	if opened.Load() != 1 {
		t.Errorf("a refused login opened a URL")
	}
}
