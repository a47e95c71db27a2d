package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

func TestHealthAndReadiness(t *testing.T) {
	secret := "s3cr3t-value"
	ups := upstreams{"up": mcptest.NewServer(mcptest.Script{}), "down": nil}
	down := entry("down", true)
	down.URL, down.Command, down.Type = "https://user:"+secret+"@example.invalid/mcp?token="+secret, "", config.HTTP
	_, g := setup(t, ups, []config.Server{entry("up", true), down, {Name: "off", Command: "x", Enabled: new(bool)}}, nil)
	h := g.Handler()

	code, body := get(t, h, "/healthz", nil)
	if code != http.StatusOK || body != "{\"status\":\"ok\"}\n" {
		t.Errorf("/healthz = %d %q, want 200 {\"status\":\"ok\"}", code, body)
	}
	code, body = get(t, h, "/readyz", nil)
	if code != http.StatusServiceUnavailable {
		t.Errorf("/readyz = %d, want 503 with a required server down", code)
	}
	var got readiness
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatalf("/readyz body %q: %v", body, err)
	}
	want := readiness{Status: "not_ready", Servers: map[string]string{"up": "connected", "down": "failed", "off": "disabled"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("/readyz (-want +got):\n%s", diff)
	}
	for _, leak := range []string{secret, "example.invalid", "refused"} {
		if strings.Contains(body, leak) {
			t.Errorf("/readyz body %q contains %q", body, leak)
		}
	}
}

func TestReadyWhenRequiredConnected(t *testing.T) {
	ups := upstreams{"up": mcptest.NewServer(mcptest.Script{}), "opt": nil}
	_, g := setup(t, ups, []config.Server{entry("up", true), entry("opt", false)}, nil)
	code, body := get(t, g.Handler(), "/readyz", nil)
	if code != http.StatusOK || !strings.Contains(body, `"status":"ready"`) {
		t.Errorf("/readyz = %d %s, want 200 ready", code, body)
	}
}

func TestAuthToken(t *testing.T) {
	ups := upstreams{"m": mcptest.NewServer(mcptest.Script{})}
	_, g := setup(t, ups, []config.Server{entry("m", false)}, &Options{AuthToken: "letmein"})
	h := g.Handler()
	for _, tc := range []struct {
		path   string
		header string
		want   int
	}{
		{"/mcp", "", http.StatusUnauthorized},
		{"/mcp", "Bearer wrong", http.StatusUnauthorized},
		{"/mcp", "Basic letmein", http.StatusUnauthorized},
		{"/mcp", "Bearerletmein", http.StatusUnauthorized},
		{"/status", "bearer letmein", http.StatusOK}, // the scheme is case-insensitive
		{"/status", "BEARER letmein", http.StatusOK},
		{"/status", "Bearer  letmein", http.StatusUnauthorized},
		{"/healthz", "", http.StatusOK},
		{"/readyz", "", http.StatusOK},
	} {
		hdr := http.Header{}
		if tc.header != "" {
			hdr.Set("Authorization", tc.header)
		}
		if code, _ := get(t, h, tc.path, hdr); code != tc.want {
			t.Errorf("GET %s with %q = %d, want %d", tc.path, tc.header, code, tc.want)
		}
	}
	// With the token, an MCP client gets through.
	srv := httptest.NewServer(h)
	defer srv.Close()
	httpClient := &http.Client{Transport: bearer{"letmein", http.DefaultTransport}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "v"}, nil).Connect(t.Context(),
		&mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp", HTTPClient: httpClient}, nil)
	if err != nil {
		t.Fatalf("connect with the token: %v", err)
	}
	if got := len(listNames(t, cs)); got == 0 {
		t.Error("no tools over authorized HTTP")
	}
	cs.Close()
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
}

type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", fmt.Sprintf("Bearer %s", b.token))
	return b.base.RoundTrip(r)
}

func TestDrainWaitsForCalls(t *testing.T) {
	var c inflight
	c.init()
	if err := c.wait(t.Context()); err != nil {
		t.Fatalf("wait with nothing in flight = %v", err)
	}
	c.add()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := c.wait(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("wait with a call in flight = %v, want the context's error", err)
	}
	c.done()
	if err := c.wait(t.Context()); err != nil {
		t.Errorf("wait after the call = %v", err)
	}
}

// TestTokenGuardsMetricsNotProbes: with a token, /mcp and /metrics need it;
// /healthz and /readyz never do, but /readyz names the servers only to a
// request with it.
func TestTokenGuardsMetricsNotProbes(t *testing.T) {
	const token = "t0ken-value"
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "switchboard_up 1\n") })
	_, g := setup(t, upstreams{"m": mcptest.NewServer(mcptest.Script{})}, []config.Server{entry("m", false)}, &Options{AuthToken: token, Metrics: metrics})
	h := g.Handler()
	bearer := http.Header{"Authorization": {"Bearer " + token}}
	wrong := http.Header{"Authorization": {"Bearer nope"}}
	for _, tc := range []struct {
		path   string
		header http.Header
		want   int
	}{
		{"/metrics", nil, http.StatusUnauthorized},
		{"/metrics", wrong, http.StatusUnauthorized},
		{"/metrics", bearer, http.StatusOK},
		{"/mcp", nil, http.StatusUnauthorized},
		{"/healthz", nil, http.StatusOK},
		{"/readyz", nil, http.StatusOK},
		{"/readyz", wrong, http.StatusOK},
		{"/readyz", bearer, http.StatusOK},
	} {
		code, body := get(t, h, tc.path, tc.header)
		if code != tc.want {
			t.Errorf("GET %s with %v: %d, want %d", tc.path, tc.header, code, tc.want)
		}
		if named := strings.Contains(body, `"servers":{"m":`); tc.path == "/readyz" && named != (tc.header.Get("Authorization") == "Bearer "+token) {
			t.Errorf("GET /readyz with %v: %s; want the servers named with the token alone", tc.header, body)
		}
		if strings.Contains(body, token) {
			t.Errorf("GET %s: the body shows the token", tc.path)
		}
	}
}

// TestAdminReconnect: POST /admin/reconnect/NAME reconnects a server now,
// and says how it went; it needs the token when one is set.
func TestAdminReconnect(t *testing.T) {
	const token = "adm1n"
	srv := mcptest.NewServer(mcptest.Script{})
	_, g := setup(t, upstreams{"m": srv}, []config.Server{entry("m", false), {Name: "off", Command: "x", Enabled: new(false)}}, &Options{AuthToken: token})
	hs := httptest.NewServer(g.Handler())
	defer hs.Close()
	defer hs.Client().CloseIdleConnections()
	post := func(path string, auth bool) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), "POST", hs.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if auth {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := hs.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	before := srv.Counts().Starts
	if code, body := post("/admin/reconnect/m", true); code != http.StatusOK || !strings.Contains(body, `"state":"connected"`) {
		t.Errorf("reconnect m: %d %s", code, body)
	}
	if after := srv.Counts().Starts; after != before+1 {
		t.Errorf("the server saw %d handshakes, want %d: no new session", after, before+1)
	}
	for _, tc := range []struct {
		path string
		auth bool
		want int
	}{
		{"/admin/reconnect/m", false, http.StatusUnauthorized},
		{"/admin/reconnect/ghost", true, http.StatusNotFound},
		{"/admin/reconnect/off", true, http.StatusConflict},
	} {
		if code, body := post(tc.path, tc.auth); code != tc.want {
			t.Errorf("POST %s (auth %v): %d %s, want %d", tc.path, tc.auth, code, body, tc.want)
		}
	}
}
