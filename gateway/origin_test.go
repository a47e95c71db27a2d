package gateway

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`

// TestListenerRefusesOtherSitesAndHosts: a request from another site's
// origin, or naming another host on the loopback listener, gets 403 on
// /mcp, /metrics, /status, /admin and /readyz (which names the servers);
// loopback origins and the allowed ones get through, and /healthz answers
// anyone; a body over the limit gets 413.
func TestListenerRefusesOtherSitesAndHosts(t *testing.T) {
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })
	_, g := setup(t, upstreams{"m": mcptest.NewServer(mcptest.Script{})}, []config.Server{entry("m", false)},
		&Options{AllowOrigins: []string{"https://app.example.com"}, Metrics: metrics, MaxRequestBytes: 1 << 10})
	srv := httptest.NewServer(g.Handler())
	defer srv.Close()
	client := srv.Client()
	defer client.CloseIdleConnections()
	do := func(method, path, origin, host, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), method, srv.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		if host != "" {
			req.Host = host
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, tc := range []struct {
		name, method, path, origin, host, body string
		want                                   int
	}{
		{"another site", "POST", "/mcp", "http://evil.example", "", initialize, http.StatusForbidden},
		{"another site, https", "POST", "/mcp", "https://evil.example:8443", "", initialize, http.StatusForbidden},
		{"an opaque origin", "POST", "/mcp", "null", "", initialize, http.StatusForbidden},
		{"another site reading metrics", "GET", "/metrics", "http://evil.example", "", "", http.StatusForbidden},
		{"a rebound host", "POST", "/mcp", "", "evil.example", initialize, http.StatusForbidden},
		{"a rebound host reading metrics", "GET", "/metrics", "", "evil.example:80", "", http.StatusForbidden},
		{"a loopback origin, any port", "POST", "/mcp", "http://localhost:6274", "", initialize, http.StatusOK},
		{"a loopback IP origin", "POST", "/mcp", "http://127.0.0.1:9", "", initialize, http.StatusOK},
		{"an allowed origin", "POST", "/mcp", "https://app.example.com", "", initialize, http.StatusOK},
		{"no origin (not a browser)", "POST", "/mcp", "", "", initialize, http.StatusOK},
		{"metrics from loopback", "GET", "/metrics", "", "", "", http.StatusOK},
		{"another site reading the status page", "GET", "/status", "http://evil.example", "", "", http.StatusForbidden},
		{"a rebound host reading the status page", "GET", "/status", "", "evil.example", "", http.StatusForbidden},
		{"the status page from loopback", "GET", "/status", "", "", "", http.StatusOK},
		{"another site reconnecting a server", "POST", "/admin/reconnect/m", "http://evil.example", "", "", http.StatusForbidden},
		{"a rebound host reconnecting a server", "POST", "/admin/reconnect/m", "", "evil.example", "", http.StatusForbidden},
		{"liveness is never guarded", "GET", "/healthz", "http://evil.example", "", "", http.StatusOK},
		{"liveness under any host's name", "GET", "/healthz", "", "evil.example", "", http.StatusOK},
		{"a rebound host reading readiness", "GET", "/readyz", "", "evil.example", "", http.StatusForbidden},
		{"another site reading readiness", "GET", "/readyz", "http://evil.example", "", "", http.StatusForbidden},
		{"readiness from loopback", "GET", "/readyz", "", "", "", http.StatusOK},
		{"a body over the limit", "POST", "/mcp", "", "", `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + string(bytes.Repeat([]byte("x"), 2<<10)) + `"}}`, http.StatusRequestEntityTooLarge},
	} {
		if code, body := do(tc.method, tc.path, tc.origin, tc.host, tc.body); code != tc.want {
			t.Errorf("%s: %d %q, want %d", tc.name, code, body, tc.want)
		}
	}
}

func TestCheckOrigin(t *testing.T) {
	for in, want := range map[string]string{
		"https://app.example.com":       "https://app.example.com",
		"http://localhost:6274/":        "http://localhost:6274",
		"https://app.example.com/path":  "",
		"app.example.com":               "",
		"ftp://app.example.com":         "",
		"https://user@app.example.com":  "",
		"https://app.example.com/?q=1":  "",
		"https://app.example.com/#frag": "",
	} {
		got, err := CheckOrigin(in)
		if got != want || (err != nil) != (want == "") {
			t.Errorf("CheckOrigin(%q) = %q, %v; want %q", in, got, err, want)
		}
		if err != nil && !strings.Contains(err.Error(), in) {
			t.Errorf("CheckOrigin(%q): the error %q does not name it", in, err)
		}
	}
}
