package gateway

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/identity"
	"github.com/switchboard-mcp/switchboard/internal/identity/issuertest"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
	"github.com/switchboard-mcp/switchboard/internal/policy"
)

const resource = "http://127.0.0.1:7777/mcp"

// fakeClock is the verifier's clock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// oauthOptions returns gateway options that take the tokens of a fake
// issuer, with scope "mcp" required and the scope "admin" making an admin,
// and the verifier's clock.
func oauthOptions(t testing.TB) (*Options, *issuertest.Issuer, *fakeClock) {
	is := issuertest.New(t)
	clk := &fakeClock{t: time.Now()}
	v := identity.New(identity.Config{Issuer: is.URL(), Audience: resource, Scopes: []string{"mcp"}}, &identity.Options{Now: clk.Now, Transport: is.Transport()})
	admin, err := policy.New([]policy.Rule{{When: "'admin' in identity.scopes"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &Options{OAuth: &OAuth{
		admin:                admin,
		Verifier:             v.Verify,
		Resource:             resource,
		AuthorizationServers: []string{is.URL()},
		Scopes:               []string{"mcp"},
		ClockSkew:            v.Leeway(),
	}}, is, clk
}

// TestOAuthRefusals: without a valid token, /mcp, /metrics and /status
// answer 401 with the metadata's URL, a token without the scope 403
// insufficient_scope; /metrics and /status answer an admin's token alone,
// 403 to another; /healthz and /readyz stay open; nothing panics.
func TestOAuthRefusals(t *testing.T) {
	opts, is, _ := oauthOptions(t)
	opts.Metrics = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	_, g := setup(t, upstreams{"m": mcptest.NewServer(mcptest.Script{})}, []config.Server{entry("m", false)}, opts)
	h := g.Handler()
	good := is.Token(t, is.Claims(resource, "mcp", time.Now()))
	admin := is.Token(t, is.Claims(resource, "mcp admin", time.Now()))
	noScope := is.Token(t, is.Claims(resource, "other", time.Now()))
	pathKid := issuertest.Sign(t, issuertest.NewKey(t, "ES256").WithKid("../../etc/passwd"), is.Claims(resource, "mcp", time.Now()))
	const meta = `resource_metadata="http://127.0.0.1:7777/.well-known/oauth-protected-resource/mcp"`
	for _, tc := range []struct {
		path, header string
		want         int
		wantAuth     string // in WWW-Authenticate
	}{
		{"/mcp", "", http.StatusUnauthorized, `Bearer ` + meta},
		{"/mcp", "Bearer", http.StatusUnauthorized, meta},
		{"/mcp", "Basic YWxpY2U6c2VjcmV0", http.StatusUnauthorized, meta},
		{"/mcp", "Bearer a.b.c", http.StatusUnauthorized, `error="invalid_token", ` + meta},
		{"/mcp", "Bearer " + pathKid, http.StatusUnauthorized, `error="invalid_token"`},
		{"/mcp", "Bearer " + strings.Repeat("a", 20<<10), http.StatusUnauthorized, `error="invalid_token"`},
		{"/mcp", "Bearer " + noScope, http.StatusForbidden, `Bearer error="insufficient_scope", ` + meta + `, scope="mcp"`},
		{"/status", "", http.StatusUnauthorized, meta},
		{"/status", "Bearer " + good, http.StatusForbidden, ""},
		{"/status", "Bearer " + admin, http.StatusOK, ""},
		{"/metrics", "", http.StatusUnauthorized, meta},
		{"/metrics", "Bearer " + good, http.StatusForbidden, ""},
		{"/metrics", "Bearer " + admin, http.StatusOK, ""},
		{"/healthz", "", http.StatusOK, ""},
		{"/readyz", "", http.StatusOK, ""},
	} {
		srv := httptest.NewServer(h)
		method := http.MethodGet
		if tc.path == "/mcp" {
			method = http.MethodPost
		}
		req, _ := http.NewRequestWithContext(t.Context(), method, srv.URL+tc.path, strings.NewReader(`{}`))
		if tc.header != "" {
			req.Header.Set("Authorization", tc.header)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		srv.Close()
		name := tc.header
		if len(name) > 40 {
			name = name[:40] + "..."
		}
		if resp.StatusCode != tc.want {
			t.Errorf("%s %s with %q = %d, want %d", method, tc.path, name, resp.StatusCode, tc.want)
		}
		if got := resp.Header.Get("WWW-Authenticate"); !strings.Contains(got, tc.wantAuth) || tc.wantAuth == "" && got != "" {
			t.Errorf("%s %s with %q: WWW-Authenticate %q, want %q", method, tc.path, name, got, tc.wantAuth)
		}
	}
	// /readyz names the servers only to a valid token.
	if _, body := get(t, h, "/readyz", nil); strings.Contains(body, `"m"`) {
		t.Errorf("/readyz without a token names the servers: %s", body)
	}
	if _, body := get(t, h, "/readyz", http.Header{"Authorization": {"Bearer " + good}}); !strings.Contains(body, `"m"`) {
		t.Errorf("/readyz with a token does not name the servers: %s", body)
	}
}

// TestOAuthMetadata: the protected resource metadata is served at the
// well-known path and below it at the resource's path (RFC 9728, 3.1).
func TestOAuthMetadata(t *testing.T) {
	opts, is, _ := oauthOptions(t)
	_, g := setup(t, upstreams{"m": mcptest.NewServer(mcptest.Script{})}, []config.Server{entry("m", false)}, opts)
	for _, path := range []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"} {
		code, body := get(t, g.Handler(), path, nil)
		if code != http.StatusOK {
			t.Fatalf("GET %s = %d", path, code)
		}
		var got struct {
			Resource             string   `json:"resource"`
			AuthorizationServers []string `json:"authorization_servers"`
			ScopesSupported      []string `json:"scopes_supported"`
		}
		if err := json.Unmarshal([]byte(body), &got); err != nil {
			t.Fatal(err)
		}
		if got.Resource != resource || !cmp.Equal(got.AuthorizationServers, []string{is.URL()}) || !cmp.Equal(got.ScopesSupported, []string{"mcp"}) {
			t.Errorf("GET %s = %s", path, body)
		}
	}
}

// TestOAuthSession: a client with a valid token lists and calls tools; its
// session records who it is; each request is verified, so that once the
// token has expired the next request is refused; and the client's token
// never reaches an HTTP upstream, which gets only its configured headers.
func TestOAuthSession(t *testing.T) {
	up := mcptest.NewServer(mcptest.Script{})
	t.Cleanup(func() { up.Close() })
	var mu sync.Mutex
	var seen []string
	upSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization")+"|"+r.Header.Get("X-Up"))
		mu.Unlock()
		up.Handler().ServeHTTP(w, r)
	}))
	t.Cleanup(upSrv.Close)
	opts, is, clk := oauthOptions(t)
	srvCfg := config.Server{Name: "m", Type: config.HTTP, URL: upSrv.URL, Headers: map[string]string{"X-Up": "configured"}}
	_, g := start(t, []config.Server{srvCfg}, &switchboard.Options{}, opts)
	srv := httptest.NewServer(g.Handler())
	defer srv.Close()

	claims := is.Claims(resource, "mcp read", time.Now())
	claims["groups"] = []string{"eng"}
	token := is.Token(t, claims)
	transport := &http.Transport{}
	defer transport.CloseIdleConnections()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "v"}, nil).Connect(t.Context(),
		&mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp", HTTPClient: &http.Client{Transport: bearer{token, transport}}, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatalf("connect with a token: %v", err)
	}
	defer cs.Close()
	if names := listNames(t, cs); len(names) == 0 {
		t.Fatal("no tools")
	}
	if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "m__echo", Arguments: map[string]any{}}); err != nil {
		t.Fatalf("call: %v", err)
	}
	var ids []*identity.Identity
	for ss := range g.server.Sessions() {
		if st := g.sessions.of(ss); st != nil {
			ids = append(ids, st.Identity())
		}
	}
	if len(ids) != 1 || ids[0] == nil || ids[0].Subject != "alice" || ids[0].Client != "cli" || !cmp.Equal(ids[0].Groups, []string{"eng"}) || !cmp.Equal(ids[0].Scopes, []string{"mcp", "read"}) {
		t.Errorf("session identities = %+v, want alice's", ids)
	}
	mu.Lock()
	for _, s := range seen {
		if strings.Contains(s, token) || s != "|configured" {
			t.Errorf("the upstream saw Authorization|X-Up %q, want only its configured header", s)
		}
	}
	mu.Unlock()

	clk.Add(2 * time.Hour) // the token expired an hour ago
	if _, err := cs.ListTools(t.Context(), nil); err == nil {
		t.Error("a request with an expired token was served")
	}
}

// TestNewOAuthIntrospection: NewOAuth of a gateway.auth with
// "introspection" checks opaque tokens at its endpoint, authenticated with
// the client ID and the secret of the named environment variable, and
// refuses to start when that variable is unset.
func TestNewOAuthIntrospection(t *testing.T) {
	const env = "SWITCHBOARD_TEST_INTROSPECTION_SECRET"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		user, pass, _ := r.BasicAuth()
		r.ParseForm()
		if user != "gw" || pass != "introspection-secret" || r.PostForm.Get("token") != "opaque-1" {
			w.Write([]byte(`{"active": false}`))
			return
		}
		w.Write([]byte(`{"active": true, "sub": "alice", "client_id": "app", "scope": "mcp", "aud": ["` + resource + `"], "exp": 4102444800}`))
	}))
	defer srv.Close()
	a := &config.GatewayAuth{Issuer: "https://id.example.test", Audience: resource, Scopes: []string{"mcp"},
		Introspection: &config.AuthIntrospection{URL: srv.URL, ClientID: "gw", ClientSecretEnv: env}}

	t.Setenv(env, "")
	if _, err := NewOAuth(a, nil); err == nil || !strings.Contains(err.Error(), "gateway.auth.introspection.clientSecretEnv: the environment variable "+env+" is unset") {
		t.Errorf("NewOAuth with the secret's variable unset: %v", err)
	}
	t.Setenv(env, "introspection-secret")
	o, err := NewOAuth(a, nil)
	if err != nil {
		t.Fatal(err)
	}
	ti, err := o.Verifier(t.Context(), "opaque-1", nil)
	if err != nil {
		t.Fatalf("an opaque token: %v", err)
	}
	if id := identity.FromTokenInfo(ti); id.Subject != "alice" || id.Client != "app" {
		t.Errorf("identity %+v", id)
	}
	if _, err := o.Verifier(t.Context(), "opaque-2", nil); err == nil {
		t.Error("an inactive opaque token was accepted")
	}
}
