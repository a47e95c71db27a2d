package upstream

import (
	"cmp"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// recordHeaders wraps h and remembers the Authorization headers it saw.
type recordHeaders struct {
	h    http.Handler
	mu   sync.Mutex
	auth map[string]bool
}

func (r *recordHeaders) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	r.auth[req.Header.Get("Authorization")] = true
	r.mu.Unlock()
	r.h.ServeHTTP(w, req)
}

// TestHTTPTransports: an http or sse server is called with its configured
// headers, also at the end of a redirect within its origin (from via).
func TestHTTPTransports(t *testing.T) {
	for _, tc := range []struct {
		typ       config.Transport
		path, via string
	}{
		{config.HTTP, "/mcp", ""},
		{config.SSE, "/sse", ""},
		{config.HTTP, "/mcp", "/old"},
		{config.SSE, "/sse", "/old"},
	} {
		t.Run(string(tc.typ)+tc.via, func(t *testing.T) {
			srv := mcptest.NewServer(mcptest.Script{})
			mux := http.NewServeMux()
			mux.Handle("/mcp", srv.Handler())
			mux.Handle("/sse", srv.SSEHandler())
			mux.Handle("/old", http.RedirectHandler(tc.path, http.StatusPermanentRedirect))
			rec := &recordHeaders{h: mux, auth: map[string]bool{}}
			hs := httptest.NewServer(rec)
			defer hs.Close()
			defer srv.Close() // before hs: httptest waits for open requests

			t.Setenv("SWITCHBOARD_TEST_TOKEN", "tok-123456")
			u := New(config.Server{
				Name:    "remote",
				Type:    tc.typ,
				URL:     hs.URL + cmp.Or(tc.via, tc.path),
				Headers: map[string]string{"Authorization": "Bearer ${SWITCHBOARD_TEST_TOKEN}"},
			}, nil)
			defer u.Close(time.Time{})
			if err := u.Connect(t.Context()); err != nil {
				t.Fatalf("Connect: %v", err)
			}
			res, err := callTool(t.Context(), u, "add", map[string]any{"a": 1, "b": 1})
			if err != nil || mcptest.Text(res) != "2" {
				t.Fatalf("add = %v, %v", res, err)
			}
			u.Close(time.Time{})
			rec.mu.Lock()
			defer rec.mu.Unlock()
			if !rec.auth["Bearer tok-123456"] || len(rec.auth) != 1 {
				t.Errorf("Authorization headers seen: %v; want only the resolved configured one", rec.auth)
			}
		})
	}
}

func TestHTTPConnectionRefusedIsRedacted(t *testing.T) {
	const secret = "sk-live-abcdef123456"
	t.Setenv("SWITCHBOARD_TEST_SECRET", secret)
	// Port 1 on loopback refuses connections.
	u := New(config.Server{Name: "down", URL: "http://user:pw@127.0.0.1:1/mcp?key=${SWITCHBOARD_TEST_SECRET}"}, nil)
	defer u.Close(time.Time{})
	err := u.Connect(t.Context())
	if err == nil {
		t.Fatal("Connect succeeded against a closed port")
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, `server "down": connect:`) || !strings.Contains(msg, "refused") {
		t.Errorf("error = %q, want it to name the server and say the connection was refused", msg)
	}
	for _, leak := range []string{secret, "user:pw", "key="} {
		if strings.Contains(msg, leak) {
			t.Errorf("error %q shows %q", msg, leak)
		}
	}
}

// TestHTTPPoolKeepsItsConnections: a steady load of concurrent calls to an
// HTTP server reuses its connections. With the default pool, which keeps
// two idle connections per host, 16 callers would dial a new connection
// for many calls.
func TestHTTPPoolKeepsItsConnections(t *testing.T) {
	srv := mcptest.NewServer(mcptest.Script{})
	var dialed atomic.Int64
	hs := httptest.NewUnstartedServer(srv.Handler())
	hs.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		if state == http.StateNew {
			dialed.Add(1)
		}
	}
	hs.Start()
	defer hs.Close()
	defer srv.Close()
	u := New(config.Server{Name: "remote", Type: config.HTTP, URL: hs.URL}, nil)
	defer u.Close(time.Time{})
	if err := u.Connect(t.Context()); err != nil {
		t.Fatalf("Connect: %v", err)
	}
	const callers, calls = 16, 40
	round := func() {
		var wg sync.WaitGroup
		for range callers {
			wg.Go(func() {
				for range calls {
					if res, err := callTool(t.Context(), u, "add", map[string]any{"a": 1, "b": 1}); err != nil || mcptest.Text(res) != "2" {
						t.Errorf("add = %v, %v", res, err)
						return
					}
				}
			})
		}
		wg.Wait()
	}
	round()
	before := dialed.Load()
	round()
	// A connection may be in a response's last moments as the next call
	// starts, the more so on a busy machine: allow a few per caller. (Here
	// the pool dials 2 to 14, and 35 under the race detector on a loaded
	// machine; the default pool dials 90 to 150.)
	if n := dialed.Load() - before; n > 4*callers {
		t.Errorf("%d calls from %d callers dialed %d new connections, want at most four per caller", callers*calls, callers, n)
	}
}
