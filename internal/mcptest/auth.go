package mcptest

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// An AuthServer is an OAuth 2.1 authorization server and the MCP endpoints
// it protects, on one listener: protected resource and authorization
// server metadata, dynamic client registration, an authorization endpoint
// that approves at once, a token endpoint that issues, refreshes and
// revokes, and each protected path, which wants a bearer token it issued
// and answers 401 with a challenge otherwise. It is as strict as a real
// one about a login: the authorization request must carry a client, a PKCE
// challenge (S256) and the protected resource (RFC 8707), and a code is
// exchanged once, by the client it was issued to, for the same redirect
// URI (and resource, if the token request names one), with the verifier of
// its challenge.
type AuthServer struct {
	*httptest.Server

	mu        sync.Mutex
	expiresIn int // seconds, of each access token
	n         int
	access    map[string]bool   // valid access tokens
	refresh   map[string]bool   // valid refresh tokens
	refreshes int               // refresh grants served
	logins    int               // authorization code grants served
	bearers   map[string]int    // the tokens the protected paths were shown
	issuer    string            // the issuer its metadata names; "" for its own URL
	hidden    bool              // it serves no metadata
	issued    int               // codes issued
	codes     map[string]grant  // the codes issued and not yet exchanged
	resources map[string]bool   // the protected resources' URLs
	scopes    map[string]string // the scope granted with each access or refresh token
	required  string            // a scope every MCP request needs; "" for none
	refuse    int               // requests to refuse with 401 whatever their token (RefuseNext)
	hold      chan struct{}     // refresh grants wait until it is closed (HoldRefreshes)
	held      chan struct{}     // gets a value as each refresh grant starts to wait
}

// NewProtectedServer returns a Server with the default script, and an
// AuthServer that protects it at /mcp, both stopped when the test ends.
func NewProtectedServer(t testing.TB) (*Server, *AuthServer) {
	t.Helper()
	srv := NewServer(Script{})
	a := NewAuthServer(map[string]http.Handler{"/mcp": srv.Handler()})
	t.Cleanup(a.Close)
	t.Cleanup(func() { srv.Close() }) // before a: httptest waits for open requests
	return srv, a
}

// NewAuthServer starts an AuthServer that protects each path of routes
// ("/mcp", say) with its handler. Close stops it.
func NewAuthServer(routes map[string]http.Handler) *AuthServer {
	a := &AuthServer{expiresIn: 3600, access: map[string]bool{}, refresh: map[string]bool{}, bearers: map[string]int{},
		codes: map[string]grant{}, scopes: map[string]string{}, resources: map[string]bool{}}
	mux := http.NewServeMux()
	a.Server = httptest.NewServer(mux)
	for path, h := range routes {
		a.resources[a.URL+path] = true
		prm := "/.well-known/oauth-protected-resource" + path
		mux.HandleFunc("GET "+prm, func(w http.ResponseWriter, r *http.Request) {
			if a.metadata() == "" {
				http.NotFound(w, r)
				return
			}
			writeJSON(w, http.StatusOK, map[string]any{"resource": a.URL + path, "authorization_servers": []string{a.URL}, "scopes_supported": []string{"tools"}})
		})
		mux.Handle(path, auth.RequireBearerToken(a.verify, &auth.RequireBearerTokenOptions{ResourceMetadataURL: a.URL + prm})(a.stepUp(h, a.URL+prm)))
	}
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		issuer := a.metadata()
		if issuer == "" {
			http.NotFound(w, r)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"issuer": issuer, "authorization_endpoint": a.URL + "/authorize", "token_endpoint": a.URL + "/token",
			"registration_endpoint": a.URL + "/register", "code_challenge_methods_supported": []string{"S256"},
			"response_types_supported": []string{"code"}, "scopes_supported": []string{"tools", "offline_access"}})
	})
	mux.HandleFunc("POST /register", func(w http.ResponseWriter, r *http.Request) {
		if a.metadata() == "" {
			http.NotFound(w, r)
			return
		}
		var meta map[string]any
		json.NewDecoder(r.Body).Decode(&meta)
		writeJSON(w, http.StatusCreated, map[string]any{"client_id": "registered-client", "redirect_uris": meta["redirect_uris"], "token_endpoint_auth_method": "none"})
	})
	mux.HandleFunc("GET /authorize", func(w http.ResponseWriter, r *http.Request) {
		if a.metadata() == "" {
			http.NotFound(w, r)
			return
		}
		q := r.URL.Query()
		to, err := url.Parse(q.Get("redirect_uri"))
		if err != nil || q.Get("redirect_uri") == "" || q.Get("client_id") == "" {
			// Nowhere safe to redirect to (RFC 6749 §4.1.2.1).
			http.Error(w, "bad redirect_uri or client_id", http.StatusBadRequest)
			return
		}
		answer := url.Values{"state": {q.Get("state")}}
		a.mu.Lock()
		switch {
		case q.Get("response_type") != "code" || q.Get("code_challenge") == "" || q.Get("code_challenge_method") != "S256":
			answer.Set("error", "invalid_request")
		case !a.resources[q.Get("resource")]:
			answer.Set("error", "invalid_target")
		default:
			a.issued++
			code := fmt.Sprintf("code-%d", a.issued)
			a.codes[code] = grant{scope: q.Get("scope"), challenge: q.Get("code_challenge"), client: q.Get("client_id"),
				redirect: q.Get("redirect_uri"), resource: q.Get("resource")}
			answer.Set("code", code)
		}
		a.mu.Unlock()
		to.RawQuery = answer.Encode()
		http.Redirect(w, r, to.String(), http.StatusFound)
	})
	mux.HandleFunc("POST /token", a.token)
	return a
}

func (a *AuthServer) verify(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.bearers[token]++
	if a.refuse > 0 {
		a.refuse--
		return nil, auth.ErrInvalidToken
	}
	if !a.access[token] {
		return nil, auth.ErrInvalidToken
	}
	return &auth.TokenInfo{Scopes: strings.Fields(a.scopes[token]), Expiration: time.Now().Add(time.Hour)}, nil
}

// stepUp answers 403 insufficient_scope to a request whose token lacks the
// required scope (see RequireScope).
func (a *AuthServer) stepUp(h http.Handler, prm string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		required := a.required
		a.mu.Unlock()
		if info := auth.TokenInfoFromContext(r.Context()); required != "" && (info == nil || !slices.Contains(info.Scopes, required)) {
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer error="insufficient_scope", scope=%q, resource_metadata=%q`, required, prm))
			http.Error(w, "insufficient scope", http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// RefuseNext answers the next n requests to the protected paths with 401,
// whatever their token: a server that lost track of its tokens for a moment.
func (a *AuthServer) RefuseNext(n int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.refuse = n
}

// HoldRefreshes makes every refresh grant wait until release is called (or
// its request ends): a slow authorization server. held gets a value as each
// one starts to wait; it holds up to 100 unread.
func (a *AuthServer) HoldRefreshes() (held <-chan struct{}, release func()) {
	a.mu.Lock()
	defer a.mu.Unlock()
	hold, c := make(chan struct{}), make(chan struct{}, 100)
	a.hold, a.held = hold, c
	return c, sync.OnceFunc(func() { close(hold) })
}

// RequireScope makes every MCP request need scope, which the tokens issued
// so far may lack: a step-up.
func (a *AuthServer) RequireScope(scope string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.required = scope
}

func (a *AuthServer) token(w http.ResponseWriter, r *http.Request) {
	if a.metadata() == "" {
		http.NotFound(w, r)
		return
	}
	r.ParseForm()
	a.mu.Lock()
	hold, held := a.hold, a.held
	a.mu.Unlock()
	if hold != nil && r.Form.Get("grant_type") == "refresh_token" {
		held <- struct{}{}
		select {
		case <-hold:
		case <-r.Context().Done():
			return
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	var scope string
	switch r.Form.Get("grant_type") {
	case "authorization_code":
		code := r.Form.Get("code")
		g, ok := a.codes[code]
		delete(a.codes, code) // once only, even when refused
		client := r.Form.Get("client_id")
		if id, _, basic := r.BasicAuth(); basic {
			client, _ = url.QueryUnescape(id) // client_secret_basic (RFC 6749 §2.3.1)
		}
		if !ok || !g.redeems(client, r.Form) {
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": "invalid_grant"})
			return
		}
		a.logins++
		scope = g.scope
	case "refresh_token":
		if !a.refresh[r.Form.Get("refresh_token")] {
			// The description repeats the token, as careless servers do:
			// whoever reports this error must not.
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": "invalid_grant", "error_description": "refresh token " + r.Form.Get("refresh_token") + " revoked"})
			return
		}
		delete(a.refresh, r.Form.Get("refresh_token"))
		a.refreshes++
		scope = a.scopes[r.Form.Get("refresh_token")]
	default:
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "unsupported_grant_type"})
		return
	}
	a.n++
	at, rt := fmt.Sprintf("access-%d", a.n), fmt.Sprintf("refresh-%d", a.n)
	a.access[at], a.refresh[rt] = true, true
	a.scopes[at], a.scopes[rt] = scope, scope
	writeJSON(w, http.StatusOK, map[string]any{"access_token": at, "refresh_token": rt, "token_type": "Bearer", "expires_in": a.expiresIn})
}

// A grant is what an authorization code was issued for.
type grant struct {
	scope, challenge, client, redirect, resource string
}

// redeems reports whether client's token request form may exchange g's
// code: the same client, redirect URI and resource (if it names one), and
// the verifier of g's challenge (RFC 7636 §4.6).
func (g grant) redeems(client string, form url.Values) bool {
	sum := sha256.Sum256([]byte(form.Get("code_verifier")))
	return client == g.client && form.Get("redirect_uri") == g.redirect &&
		(form.Get("resource") == "" || form.Get("resource") == g.resource) &&
		base64.RawURLEncoding.EncodeToString(sum[:]) == g.challenge
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// metadata returns the issuer the metadata names, or "" if the server
// serves none.
func (a *AuthServer) metadata() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case a.hidden:
		return ""
	case a.issuer != "":
		return a.issuer
	}
	return a.URL
}

// SetIssuer makes the authorization server's metadata name another
// issuer than the server it came from, which a client must refuse.
func (a *AuthServer) SetIssuer(issuer string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.issuer = issuer
}

// HideMetadata makes the server serve no metadata, protected resource or
// authorization server, and nothing at the endpoints a client falls back
// to without it (/register, /authorize, /token): its challenges lead
// nowhere.
func (a *AuthServer) HideMetadata() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.hidden = true
}

// SetExpiresIn sets the lifetime of the access tokens issued from now on.
func (a *AuthServer) SetExpiresIn(d time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.expiresIn = int(d / time.Second)
}

// Revoke makes every access token issued so far invalid; with refresh, the
// refresh tokens too.
func (a *AuthServer) Revoke(refresh bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	clear(a.access)
	if refresh {
		clear(a.refresh)
	}
}

// Counts returns how many logins (authorization code grants) and refreshes
// the token endpoint served.
func (a *AuthServer) Counts() (logins, refreshes int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.logins, a.refreshes
}

// Bearers returns the bearer tokens the protected paths were shown, sorted.
func (a *AuthServer) Bearers() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]string, 0, len(a.bearers))
	for t := range a.bearers {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// Close stops the server and closes the idle connections of
// http.DefaultTransport, which go-sdk's clients and the token requests use.
func (a *AuthServer) Close() {
	a.Server.Close()
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
}

// Headless is a login's browser for an AuthServer, which approves at once:
// it asks for the authorization URL, does not follow the redirect, and
// reports what the redirect carries, as the loopback listener would.
func Headless(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, args.URL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	to, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		return nil, err
	}
	q := to.Query()
	return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
}

// BrowserEnv, set in the environment, makes the test binary a browser for
// an AuthServer (see [BrowserCommand]).
const BrowserEnv = "MCPTEST_BROWSER"

// BrowserCommand returns a $BROWSER for `switchboard login` against an
// AuthServer, and the environment it needs: the current test binary (whose
// TestMain calls [RunIfChild]), which asks for the URL it is given and
// follows the redirects, to the login's loopback listener.
func BrowserCommand() (browser string, env map[string]string) {
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	gorace := strings.TrimSpace(os.Getenv("GORACE") + " atexit_sleep_ms=0")
	return exe + " -test.run=^$", map[string]string{BrowserEnv: "1", "GORACE": gorace}
}

// browse is the browser of BrowserCommand: it returns the exit status.
func browse(url string) int {
	resp, err := http.Get(url)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcptest browser:", err)
		return 1
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintln(os.Stderr, "mcptest browser:", resp.Status)
		return 1
	}
	return 0
}
