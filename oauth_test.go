package switchboard

import (
	"errors"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
	"github.com/switchboard-mcp/switchboard/internal/oauth"
	"github.com/switchboard-mcp/switchboard/internal/upstream"
)

// TestNeedsAuthKeepsCachedTools: through the library, a server whose login
// was forgotten is needs-auth, with an event naming it; the tools it had
// stay listed from the persistent cache, and a call fails at once with
// ErrLoginRequired, naming the server and the command to run. A login
// stored meanwhile brings it back.
func TestNeedsAuthKeepsCachedTools(t *testing.T) {
	srv := mcptest.NewServer(mcptest.Script{})
	a := mcptest.NewAuthServer(map[string]http.Handler{"/mcp": srv.Handler()})
	t.Cleanup(a.Close)
	t.Cleanup(func() { srv.Close() })
	dirs := t.TempDir()
	opts := &Options{OAuthDir: filepath.Join(dirs, "oauth"), CacheDir: filepath.Join(dirs, "cache"), StartupGate: -1}
	cfg := &config.Config{Servers: []config.Server{{Name: "tracker", Type: config.HTTP, URL: a.URL + "/mcp"}}}
	store := &oauth.Store{Dir: opts.OAuthDir}
	login := func() {
		t.Helper()
		u := upstream.New(cfg.Servers[0], &upstream.Options{OAuth: &oauth.Options{Store: store, Login: mcptest.Headless, RedirectURL: "http://127.0.0.1:1/callback"}})
		defer u.Close(time.Time{})
		if err := u.Connect(t.Context()); err != nil {
			t.Fatalf("login: %v", err)
		}
	}

	// Logged in: the tools are listed, and cached.
	login()
	m := New(cfg, opts)
	if err := m.Connect(t.Context()); err != nil {
		t.Fatal(err)
	}
	want := len(m.Tools(t.Context(), nil))
	if want == 0 {
		t.Fatal("no tools listed")
	}
	m.Close()

	// Logged out: needs-auth, the cached tools, a call that says what to do.
	if _, err := store.Forget("tracker"); err != nil {
		t.Fatal(err)
	}
	gated := *opts
	gated.StartupGate = 0 // the default gate, behind which the cache is read
	m = New(cfg, &gated)
	defer m.Close()
	var mu sync.Mutex
	var events []Event
	needsAuth := make(chan struct{}, 1)
	m.Subscribe(func(ev Event) {
		mu.Lock()
		defer mu.Unlock()
		if ev.Kind == EventState && ev.State == StateNeedsAuth {
			events = append(events, ev)
			select {
			case needsAuth <- struct{}{}:
			default:
			}
		}
	})
	if err := m.Connect(t.Context()); err != nil {
		t.Fatal(err)
	}
	<-needsAuth // Connect may return at the gate, before the server answers
	if s := m.Status()[0]; s.State != StateNeedsAuth || !errors.Is(s.Err, ErrLoginRequired) {
		t.Fatalf("status = %v, %v; want needs-auth with a login required", s.State, s.Err)
	}
	if got := len(m.Tools(t.Context(), nil)); got != want {
		t.Errorf("%d tools listed in needs-auth, want the %d cached", got, want)
	}
	_, err := m.CallTool(t.Context(), nil, &mcp.CallToolParams{Name: "tracker__add", Arguments: map[string]any{"a": 1, "b": 2}})
	if !errors.Is(err, ErrLoginRequired) || !strings.Contains(err.Error(), `server "tracker"`) || !strings.Contains(err.Error(), "run: switchboard login tracker") {
		t.Errorf("call in needs-auth = %v", err)
	}
	if !slices.Contains(m.Status().Failed(), "tracker") {
		t.Errorf("Failed() = %v, want tracker", m.Status().Failed())
	}

	// Logged in again, from elsewhere: back without a restart.
	login()
	if err := m.Reconnect(t.Context(), "tracker"); err != nil {
		t.Fatal(err)
	}
	res, err := m.CallTool(t.Context(), nil, &mcp.CallToolParams{Name: "tracker__add", Arguments: map[string]any{"a": 1, "b": 2}})
	if err != nil || mcptest.Text(res) != "3" {
		t.Errorf("call after the login = %v, %v", res, err)
	}
	m.Close() // delivers every event
	mu.Lock()
	defer mu.Unlock()
	if len(events) != 1 || events[0].Server != "tracker" || !errors.Is(events[0].Err, ErrLoginRequired) {
		t.Errorf("needs-auth events = %+v, want one for tracker, with the cause", events)
	}
}
