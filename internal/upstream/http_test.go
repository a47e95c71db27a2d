package upstream

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

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

func TestHTTPTransports(t *testing.T) {
	for _, tc := range []struct {
		typ  config.Transport
		path string
	}{
		{config.HTTP, "/mcp"},
		{config.SSE, "/sse"},
	} {
		t.Run(string(tc.typ), func(t *testing.T) {
			srv := mcptest.NewServer(mcptest.Script{})
			mux := http.NewServeMux()
			mux.Handle("/mcp", srv.Handler())
			mux.Handle("/sse", srv.SSEHandler())
			rec := &recordHeaders{h: mux, auth: map[string]bool{}}
			hs := httptest.NewServer(rec)
			defer hs.Close()
			defer srv.Close() // before hs: httptest waits for open requests

			t.Setenv("SWITCHBOARD_TEST_TOKEN", "tok-123456")
			u := New(config.Server{
				Name:    "remote",
				Type:    tc.typ,
				URL:     hs.URL + tc.path,
				Headers: map[string]string{"Authorization": "Bearer ${SWITCHBOARD_TEST_TOKEN}"},
			}, nil)
			defer u.Close()
			if err := u.Connect(t.Context()); err != nil {
				t.Fatalf("Connect: %v", err)
			}
			res, err := callTool(t.Context(), u, "add", map[string]any{"a": 1, "b": 1})
			if err != nil || mcptest.Text(res) != "2" {
				t.Fatalf("add = %v, %v", res, err)
			}
			u.Close()
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
	defer u.Close()
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
