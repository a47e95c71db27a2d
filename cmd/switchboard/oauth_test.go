package main

import (
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/internal/hydratest"
	"github.com/switchboard-mcp/switchboard/internal/identity/issuertest"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// oauthAudience is the gateway's resource URL in these tests.
const oauthAudience = "http://127.0.0.1/mcp"

// writeOAuthConfig writes a config with one server and gateway.auth for
// the issuer is, scope "mcp" required.
func writeOAuthConfig(t *testing.T, is *issuertest.Issuer) string {
	t.Helper()
	path := writeConfig(t, map[string]mcptest.Script{"m": {}}, nil)
	editConfig(t, path, func(cfg map[string]any) {
		cfg["gateway"] = map[string]any{"auth": map[string]any{"issuer": is.URL(), "audience": oauthAudience, "scopes": []string{"mcp"}, "admin": "'admin' in identity.scopes"}}
	})
	return path
}

// editConfig has edit change the JSON config file at path.
func editConfig(t *testing.T, path string, edit func(cfg map[string]any)) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	edit(cfg)
	b, _ = json.Marshal(cfg)
	replaceFile(t, path, b) // whole, as an editor saves it
}

type bearerTransport struct {
	token string
	base  http.RoundTripper
}

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// TestServeOAuth: with gateway.auth, serve answers a request without a
// token 401 with the metadata's URL, serves the metadata, keeps /healthz
// open, and lists the tools to a client with a valid token.
func TestServeOAuth(t *testing.T) {
	isolate(t)
	is := issuertest.New(t)
	g := startServe(t, "--config", writeOAuthConfig(t, is))
	transport := &http.Transport{}
	t.Cleanup(transport.CloseIdleConnections)
	hc := &http.Client{Transport: transport}

	resp, err := hc.Post(g.url+"/mcp", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	want := `resource_metadata="http://127.0.0.1/.well-known/oauth-protected-resource/mcp"`
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), want) {
		t.Errorf("POST /mcp without a token = %d, WWW-Authenticate %q; want 401 with %s", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), want)
	}
	var meta struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
	}
	if code := getJSON(t, g.url+"/.well-known/oauth-protected-resource/mcp", &meta); code != http.StatusOK || meta.Resource != oauthAudience || len(meta.AuthorizationServers) != 1 || meta.AuthorizationServers[0] != is.URL() {
		t.Errorf("the metadata = %d %+v", code, meta)
	}
	if code := getJSON(t, g.url+"/healthz", nil); code != http.StatusOK {
		t.Errorf("/healthz = %d", code)
	}

	token := is.Token(t, is.Claims(oauthAudience, "mcp", time.Now()))
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "v"}, nil).Connect(t.Context(),
		&mcp.StreamableClientTransport{Endpoint: g.url + "/mcp", HTTPClient: &http.Client{Transport: bearerTransport{token, transport}}}, nil)
	if err != nil {
		t.Fatalf("connect with a token: %v\n%s", err, g.log)
	}
	defer cs.Close()
	if names := toolNames(t, cs); !strings.Contains(strings.Join(names, " "), "m__echo") {
		t.Errorf("tools with a token: %v", names)
	}
	if strings.Contains(g.log.String(), token) {
		t.Error("the log holds the token")
	}
}

// TestServeOAuthRefusals: gateway.auth and --auth-token-env exclude each
// other; with gateway.auth, a non-loopback --listen needs no --insecure.
func TestServeOAuthRefusals(t *testing.T) {
	isolate(t)
	is := issuertest.New(t)
	cfg := writeOAuthConfig(t, is)
	cmd := exec.Command(binary, "serve", "--config", cfg, "--auth-token-env", "SWITCHBOARD_TEST_TOKEN")
	cmd.Env = append(os.Environ(), "SWITCHBOARD_TEST_TOKEN=x")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(out), "--auth-token-env and the config's gateway.auth exclude each other") {
		t.Errorf("serve with both = %v, %q; want exit 1 saying why", err, out)
	}

	g := startServe(t, "--config", cfg, "--listen", "0.0.0.0:0")
	if code := getJSON(t, g.url+"/healthz", nil); code != http.StatusOK {
		t.Errorf("/healthz on 0.0.0.0 = %d", code)
	}
	if code := getJSON(t, g.url+"/status", nil); code != http.StatusUnauthorized {
		t.Errorf("/status without a token = %d, want 401", code)
	}
}

// TestServeOAuthReload: a change to gateway.auth while serve runs is
// logged as taking effect at the next start, and the running gateway
// keeps the one it started with.
func TestServeOAuthReload(t *testing.T) {
	isolate(t)
	is := issuertest.New(t)
	path := writeOAuthConfig(t, is)
	g := startServe(t, "--config", path)
	g.waitLog(t, settledRE)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	replaceFile(t, path, []byte(strings.Replace(string(b), `"scopes":["mcp"]`, `"scopes":["mcp","more"]`, 1)))
	g.waitLog(t, regexp.MustCompile(`level=WARN msg="the config's gateway.auth changed; it applies from the next start`))
	token := is.Token(t, is.Claims(oauthAudience, "mcp admin", time.Now()))
	req, _ := http.NewRequest(http.MethodGet, g.url+"/status", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	transport := &http.Transport{}
	defer transport.CloseIdleConnections()
	resp, err := (&http.Client{Transport: transport}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/status with an admin's token of the scopes the gateway started with = %d, want 200", resp.StatusCode)
	}
}

// TestServeOAuthIntrospection: with gateway.auth.introspection, serve
// lists the tools to a client with an opaque token of a real Hydra
// (checked at its introspection endpoint, with the client secret from the
// environment), and refuses a made-up token; without the secret's
// variable, serve does not start.
func TestServeOAuthIntrospection(t *testing.T) {
	h := hydratest.Start(t) // before isolate, which leaves the repository
	isolate(t)
	id, secret := h.Client(t, "opaque", []string{"mcp"}, []string{oauthAudience}, hydratest.OpaqueTokens())
	path := writeConfig(t, map[string]mcptest.Script{"m": {}}, nil)
	const env = "SWITCHBOARD_TEST_INTROSPECTION_SECRET"
	editConfig(t, path, func(cfg map[string]any) {
		cfg["gateway"] = map[string]any{"auth": map[string]any{"issuer": h.Issuer(), "audience": oauthAudience, "scopes": []string{"mcp"},
			"introspection": map[string]any{"url": h.IntrospectionURL(), "clientId": "switchboard", "clientSecretEnv": env}}}
	})

	t.Setenv(env, "")
	out, err := exec.Command(binary, "serve", "--config", path).CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || !strings.Contains(string(out), "gateway.auth.introspection.clientSecretEnv: the environment variable "+env+" is unset or empty") {
		t.Errorf("serve without the introspection secret = %v, %q; want an exit saying why", err, out)
	}

	t.Setenv(env, "introspection-secret")
	g := startServe(t, "--config", path)
	transport := &http.Transport{}
	t.Cleanup(transport.CloseIdleConnections)
	token := h.Token(t, id, secret, []string{"mcp"}, oauthAudience)
	if !strings.HasPrefix(token, "ory_at_") {
		t.Fatalf("Hydra gave %.10s..., not an opaque token", token)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "v"}, nil).Connect(t.Context(),
		&mcp.StreamableClientTransport{Endpoint: g.url + "/mcp", HTTPClient: &http.Client{Transport: bearerTransport{token, transport}}}, nil)
	if err != nil {
		t.Fatalf("connect with an opaque token: %v\n%s", err, g.log)
	}
	defer cs.Close()
	if names := toolNames(t, cs); !strings.Contains(strings.Join(names, " "), "m__echo") {
		t.Errorf("tools with an opaque token: %v", names)
	}

	req, _ := http.NewRequest(http.MethodGet, g.url+"/status", nil)
	req.Header.Set("Authorization", "Bearer ory_at_made-up.token")
	resp, err := (&http.Client{Transport: transport}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("/status with a made-up opaque token = %d, want 401", resp.StatusCode)
	}
	if log := g.log.String(); strings.Contains(log, token) || strings.Contains(log, "introspection-secret") {
		t.Error("the log holds the token or the secret")
	}
}
