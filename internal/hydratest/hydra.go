package hydratest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// Version is the Hydra release that .ci/install-hydra builds and that
// [Start] runs.
const Version = "v2.3.0"

// RequireEnv is the environment variable that, set to "require" (as CI
// sets it), turns a missing Hydra binary from a skipped test into a failed
// one.
const RequireEnv = "SWITCHBOARD_HYDRA"

const (
	// readyTimeout bounds how long [Start] waits for both of Hydra's APIs
	// to answer /health/ready; it is ready in well under a second here,
	// with its in-memory database migrated.
	readyTimeout = 30 * time.Second

	// readyPoll is how often [Start] asks /health/ready while it waits.
	readyPoll = 20 * time.Millisecond

	// stopTimeout bounds how long the cleanup waits for Hydra to exit
	// after SIGTERM (it takes about 2 s) before it kills it.
	stopTimeout = 10 * time.Second

	// callTimeout bounds each call to Hydra's APIs.
	callTimeout = 15 * time.Second

	// startAttempts is how many times [Start] starts Hydra on new ports
	// when a port it picked was taken before Hydra bound it.
	startAttempts = 5

	// maxBody bounds how much of an answer from Hydra is read.
	maxBody = 1 << 20

	// maxOutput bounds how much of Hydra's output is kept (its last
	// bytes), to show when it fails.
	maxOutput = 64 << 10
)

// accessTokenKeys and idTokenKeys are Hydra's key sets: the first signs
// the JWT access tokens, the second ID tokens. Both are published in the
// issuer's JWKS.
const (
	accessTokenKeys = "hydra.jwt.access-token"
	idTokenKeys     = "hydra.openid.id-token"
)

// Hydra is a running Ory Hydra, started by [Start] and stopped when the
// test that started it ends. Its methods may be called from any goroutine
// of that test, but report failures with t.Fatal, so not from goroutines
// the test spawned.
type Hydra struct {
	issuer string // the public API's URL, no trailing slash; the tokens' iss
	admin  string // the admin API's URL, no trailing slash
	client *http.Client
}

// Start runs Hydra for t and returns it ready: both APIs answer
// /health/ready and its access tokens are signed with an ES256 key (made
// up front, which spares the first token request the generation of an
// RSA-4096 key). Hydra is stopped, SIGTERM then a kill after a bound, when
// t ends. Where the binary is missing, Start skips t, or fails it if
// SWITCHBOARD_HYDRA=require.
func Start(t testing.TB) *Hydra {
	t.Helper()
	bin, err := findBinary()
	if err != nil {
		reportMissing(t, os.Getenv(RequireEnv) == "require", err)
		return nil
	}
	h := &Hydra{client: &http.Client{Transport: &http.Transport{}}}
	t.Cleanup(h.client.CloseIdleConnections)
	for attempt := 1; ; attempt++ {
		err := h.start(t, bin)
		if err == nil {
			break
		}
		if !errors.Is(err, errAddrInUse) || attempt == startAttempts {
			t.Fatalf("hydratest: %v", err)
		}
		t.Logf("hydratest: attempt %d: %v; trying other ports", attempt, err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), callTimeout)
	defer cancel()
	for _, set := range []string{accessTokenKeys, idTokenKeys} {
		if _, err := h.createKey(ctx, set); err != nil {
			t.Fatalf("hydratest: %v", err)
		}
	}
	return h
}

// Issuer returns Hydra's issuer URL, the tokens' `iss` (no trailing
// slash). Its OpenID configuration is at Issuer() +
// "/.well-known/openid-configuration" and its JWKS at Issuer() +
// "/.well-known/jwks.json".
func (h *Hydra) Issuer() string { return h.issuer }

// IntrospectionURL returns the URL of Hydra's RFC 7662 introspection
// endpoint. It is on the admin API, which asks for no client
// authentication, and the OpenID configuration does not name it.
func (h *Hydra) IntrospectionURL() string { return h.admin + "/admin/oauth2/introspect" }

// A ClientOption changes a client that [Hydra.Client] registers.
type ClientOption func(map[string]any)

// AccessTokenLifespan gives the client's access tokens a lifespan of d
// (Hydra's default is an hour): exp = iat + d, in whole seconds. d is
// rounded down to the millisecond, and must be at least that.
func AccessTokenLifespan(d time.Duration) ClientOption {
	return func(c map[string]any) {
		c["client_credentials_grant_access_token_lifespan"] = strconv.FormatInt(d.Milliseconds(), 10) + "ms"
	}
}

// OpaqueTokens gives the client opaque access tokens (`ory_at_...`), to be
// checked by introspection, instead of JWTs.
func OpaqueTokens() ClientOption {
	return func(c map[string]any) { c["access_token_strategy"] = "opaque" }
}

// Client registers a client-credentials client that may ask for scopes
// and audience, authenticating with HTTP Basic (client_secret_basic), and
// returns its ID and a secret made for it. An empty id lets Hydra choose
// one. IDs are unique within a Hydra.
func (h *Hydra) Client(t testing.TB, id string, scopes, audience []string, opts ...ClientOption) (clientID, secret string) {
	t.Helper()
	if audience == nil {
		audience = []string{}
	}
	secret = rand.Text()
	c := map[string]any{
		"client_secret":              secret,
		"grant_types":                []string{"client_credentials"},
		"scope":                      strings.Join(scopes, " "),
		"audience":                   audience,
		"token_endpoint_auth_method": "client_secret_basic",
	}
	if id != "" {
		c["client_id"] = id
	}
	for _, o := range opts {
		o(c)
	}
	body, err := json.Marshal(c)
	if err != nil {
		t.Fatalf("hydratest: client %q: %v", id, err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), callTimeout)
	defer cancel()
	var got struct {
		ClientID string `json:"client_id"`
	}
	if err := h.call(ctx, http.MethodPost, h.admin+"/admin/clients", "application/json", bytes.NewReader(body), nil, http.StatusCreated, &got); err != nil {
		t.Fatalf("hydratest: registering client %q: %v", id, err)
	}
	return got.ClientID, secret
}

// Token asks Hydra's token endpoint for an access token in the client
// credentials grant, with scopes and audience (Hydra grants only what is
// asked for; "" asks for none), and returns it.
func (h *Hydra) Token(t testing.TB, clientID, secret string, scopes []string, audience string) string {
	t.Helper()
	form := url.Values{"grant_type": {"client_credentials"}}
	if len(scopes) > 0 {
		form.Set("scope", strings.Join(scopes, " "))
	}
	if audience != "" {
		form.Set("audience", audience)
	}
	ctx, cancel := context.WithTimeout(t.Context(), callTimeout)
	defer cancel()
	var got struct {
		AccessToken string `json:"access_token"`
	}
	auth := func(r *http.Request) {
		// RFC 6749 §2.3.1: the ID and secret are form-encoded first.
		r.SetBasicAuth(url.QueryEscape(clientID), url.QueryEscape(secret))
	}
	if err := h.call(ctx, http.MethodPost, h.issuer+"/oauth2/token", "application/x-www-form-urlencoded",
		strings.NewReader(form.Encode()), auth, http.StatusOK, &got); err != nil {
		t.Fatalf("hydratest: token for client %q: %v", clientID, err)
	}
	if got.AccessToken == "" {
		t.Fatalf("hydratest: token for client %q: POST /oauth2/token: no access_token in the answer", clientID)
	}
	return got.AccessToken
}

// RotateKey adds an ES256 key to Hydra's access-token key set and returns
// its key ID. Hydra signs the tokens it issues from then on with it, at
// once, and keeps the older keys in its JWKS.
func (h *Hydra) RotateKey(t testing.TB) (kid string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), callTimeout)
	defer cancel()
	kid, err := h.createKey(ctx, accessTokenKeys)
	if err != nil {
		t.Fatalf("hydratest: rotating the signing key: %v", err)
	}
	return kid
}

// Introspect asks Hydra about token (RFC 7662) and returns its answer:
// "active" (a bool), and for an active token "client_id", "sub", "scope"
// (space-separated), "aud", "iss", "exp", "iat" and "token_use". A JWT
// signed by an older key than Hydra's newest introspects inactive.
func (h *Hydra) Introspect(t testing.TB, token string) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), callTimeout)
	defer cancel()
	form := url.Values{"token": {token}}
	var got map[string]any
	if err := h.call(ctx, http.MethodPost, h.IntrospectionURL(), "application/x-www-form-urlencoded",
		strings.NewReader(form.Encode()), nil, http.StatusOK, &got); err != nil {
		t.Fatalf("hydratest: introspection: %v", err)
	}
	return got
}

// createKey adds an ES256 signing key with a new key ID to set, and
// returns the key ID.
func (h *Hydra) createKey(ctx context.Context, set string) (string, error) {
	body, err := json.Marshal(map[string]string{"alg": "ES256", "use": "sig", "kid": strings.ToLower(rand.Text())})
	if err != nil {
		return "", err
	}
	var got struct {
		Keys []struct {
			KeyID string `json:"kid"`
		} `json:"keys"`
	}
	if err := h.call(ctx, http.MethodPost, h.admin+"/admin/keys/"+set, "application/json",
		bytes.NewReader(body), nil, http.StatusCreated, &got); err != nil {
		return "", err
	}
	if len(got.Keys) == 0 || got.Keys[0].KeyID == "" {
		return "", fmt.Errorf("POST /admin/keys/%s: no key in the answer", set)
	}
	return got.Keys[0].KeyID, nil
}

// call sends a request to Hydra, checks that the status is want, and
// decodes the JSON answer into out. Its errors name the method and path
// and carry Hydra's answer (never the request, which may hold a secret or
// a token).
func (h *Hydra) call(ctx context.Context, method, rawURL, contentType string, body io.Reader, edit func(*http.Request), want int, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, rawURL, body)
	if err != nil {
		return err
	}
	op := method + " " + req.URL.Path
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Accept", "application/json")
	if edit != nil {
		edit(req)
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return fmt.Errorf("%s: reading the answer: %w", op, err)
	}
	if resp.StatusCode != want {
		return fmt.Errorf("%s: Hydra answered %s: %s", op, resp.Status, bytes.TrimSpace(data))
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s: decoding the answer: %w", op, err)
	}
	return nil
}

// errAddrInUse says that Hydra could not listen on a port picked for it:
// something took it between the pick and Hydra's bind.
var errAddrInUse = errors.New("a port picked for Hydra was taken")

// start runs Hydra on two free ports and waits until both of its APIs are
// ready, registering its stop with t.Cleanup. It returns errAddrInUse
// (wrapped) if Hydra exited because a port was taken.
func (h *Hydra) start(t testing.TB, bin string) error {
	t.Helper()
	public, err := pickPort()
	if err != nil {
		return err
	}
	admin, err := pickPort()
	if err != nil {
		return err
	}
	h.issuer = "http://" + public
	h.admin = "http://" + admin
	publicHost, publicPort, _ := net.SplitHostPort(public)
	adminHost, adminPort, _ := net.SplitHostPort(admin)

	out := &mcptest.Tail{Max: maxOutput}
	cmd := exec.Command(bin, "serve", "all", "--dev", "--sqa-opt-out")
	// Hydra reads its configuration from the environment: it gets only
	// this, so that nothing of the test's environment changes it.
	cmd.Env = []string{
		"DSN=memory",
		"SERVE_PUBLIC_HOST=" + publicHost, "SERVE_PUBLIC_PORT=" + publicPort,
		"SERVE_ADMIN_HOST=" + adminHost, "SERVE_ADMIN_PORT=" + adminPort,
		"URLS_SELF_ISSUER=" + h.issuer,
		"SECRETS_SYSTEM=" + rand.Text(),
		"STRATEGIES_ACCESS_TOKEN=jwt",
		"LOG_LEVEL=warn",
		"SQA_OPT_OUT=true",
	}
	cmd.Stdout = out
	cmd.Stderr = out
	dieWithTheTests(cmd)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", bin, err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		stop(t, cmd, exited)
		if t.Failed() {
			t.Logf("hydratest: Hydra's output (the last %d KiB at most):\n%s", maxOutput>>10, out.String())
		}
	})

	deadline := time.NewTimer(readyTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(readyPoll)
	defer tick.Stop()
	for {
		if h.ready(t.Context()) {
			return nil
		}
		select {
		case <-exited:
			if strings.Contains(out.String(), "address already in use") {
				return fmt.Errorf("%w: Hydra exited (%v)", errAddrInUse, waitErr)
			}
			return fmt.Errorf("Hydra exited before it was ready (%v); its output:\n%s", waitErr, out.String())
		case <-deadline.C:
			return fmt.Errorf("Hydra was not ready within %v (readyTimeout): GET %s/health/ready and %s/health/ready; its output:\n%s",
				readyTimeout, h.issuer, h.admin, out.String())
		case <-t.Context().Done():
			return t.Context().Err()
		case <-tick.C:
		}
	}
}

// ready reports whether both of Hydra's APIs answer /health/ready with 200.
func (h *Hydra) ready(ctx context.Context) bool {
	for _, base := range []string{h.issuer, h.admin} {
		ctx, cancel := context.WithTimeout(ctx, time.Second)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/health/ready", nil)
		if err != nil {
			cancel()
			return false
		}
		resp, err := h.client.Do(req)
		cancel()
		if err != nil {
			return false
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxBody))
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return false
		}
	}
	return true
}

// stop ends Hydra: SIGTERM, then a kill if it has not exited within
// stopTimeout. It returns once the process has exited and been waited for.
func stop(t testing.TB, cmd *exec.Cmd, exited <-chan struct{}) {
	select {
	case <-exited:
		return
	default:
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		_ = cmd.Process.Kill() // no SIGTERM on Windows
	}
	timer := time.NewTimer(stopTimeout)
	defer timer.Stop()
	select {
	case <-exited:
	case <-timer.C:
		t.Logf("hydratest: Hydra did not exit within %v of SIGTERM (stopTimeout); killing it", stopTimeout)
		_ = cmd.Process.Kill()
		<-exited
	}
}

// pickPort picks the ports for Hydra; a test replaces it.
var pickPort = freePort

// freePort returns a loopback address with a port that was free a moment
// ago.
func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("picking a port for Hydra: %w", err)
	}
	addr := l.Addr().String()
	return addr, l.Close()
}

// errNoBinary says that no Hydra binary was found.
var errNoBinary = errors.New("no Ory Hydra binary")

// findBinary returns the path of Hydra: .ci/bin/hydra under the module
// root (the first directory up from the working directory, which go test
// sets to the package's, that holds a go.mod), or else hydra on PATH.
func findBinary() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	local := ""
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			local = filepath.Join(dir, ".ci", "bin", "hydra")
			if _, err := os.Stat(local); err == nil {
				return local, nil
			}
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	if path, err := exec.LookPath("hydra"); err == nil {
		return path, nil
	}
	if local == "" {
		return "", fmt.Errorf("%w on PATH", errNoBinary)
	}
	return "", fmt.Errorf("%w at %s or on PATH", errNoBinary, local)
}

// reportMissing skips t, saying that Hydra is missing (err) and how to
// install it, or fails it if required.
func reportMissing(t testing.TB, required bool, err error) {
	t.Helper()
	msg := fmt.Sprintf("hydratest: %v: build Ory Hydra %s into .ci/bin with .ci/install-hydra, run from the repository root (about 2 minutes the first time)", err, Version)
	if required {
		t.Fatalf("%s; %s=require, so the tests that need it fail", msg, RequireEnv)
		return
	}
	t.Skipf("%s; skipping (%s=require makes this a failure)", msg, RequireEnv)
}
