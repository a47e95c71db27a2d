package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/switchboard-mcp/switchboard/config"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// authServer is an authorization server and the MCP server it protects,
// in one listener: metadata, dynamic registration, an authorization
// endpoint that approves at once, a token endpoint that issues, refreshes
// and revokes, and /mcp, which wants a bearer token it issued.
type authServer struct {
	*httptest.Server
	expiresIn int // seconds, of each access token

	mu        sync.Mutex
	n         int
	access    map[string]bool // valid access tokens
	refresh   map[string]bool // valid refresh tokens
	refreshes int             // refresh grants served
	logins    int             // authorization code grants served
}

func newAuthServer(t *testing.T) *authServer {
	t.Helper()
	a := &authServer{expiresIn: 3600, access: map[string]bool{}, refresh: map[string]bool{}}
	mux := http.NewServeMux()
	a.Server = httptest.NewServer(mux)
	t.Cleanup(func() {
		a.Close()
		http.DefaultTransport.(*http.Transport).CloseIdleConnections() // the handlers' and the clients' pools
	})
	mux.HandleFunc("GET /.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"resource": a.URL + "/mcp", "authorization_servers": []string{a.URL}, "scopes_supported": []string{"tools"}})
	})
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"issuer": a.URL, "authorization_endpoint": a.URL + "/authorize", "token_endpoint": a.URL + "/token",
			"registration_endpoint": a.URL + "/register", "code_challenge_methods_supported": []string{"S256"},
			"response_types_supported": []string{"code"}, "scopes_supported": []string{"tools", "offline_access"}})
	})
	mux.HandleFunc("POST /register", func(w http.ResponseWriter, r *http.Request) {
		var meta map[string]any
		json.NewDecoder(r.Body).Decode(&meta)
		writeJSONStatus(w, http.StatusCreated, map[string]any{"client_id": "registered-client", "redirect_uris": meta["redirect_uris"], "token_endpoint_auth_method": "none"})
	})
	mux.HandleFunc("GET /authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		to, _ := url.Parse(q.Get("redirect_uri"))
		to.RawQuery = url.Values{"code": {"code-1"}, "state": {q.Get("state")}}.Encode()
		http.Redirect(w, r, to.String(), http.StatusFound)
	})
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		a.mu.Lock()
		defer a.mu.Unlock()
		switch r.Form.Get("grant_type") {
		case "authorization_code":
			a.logins++
		case "refresh_token":
			if !a.refresh[r.Form.Get("refresh_token")] {
				writeJSONStatus(w, http.StatusBadRequest, map[string]any{"error": "invalid_grant", "error_description": "refresh token " + r.Form.Get("refresh_token") + " revoked"})
				return
			}
			delete(a.refresh, r.Form.Get("refresh_token"))
			a.refreshes++
		default:
			writeJSONStatus(w, http.StatusBadRequest, map[string]any{"error": "unsupported_grant_type"})
			return
		}
		a.n++
		at, rt := fmt.Sprintf("access-%d", a.n), fmt.Sprintf("refresh-%d", a.n)
		a.access[at], a.refresh[rt] = true, true
		writeJSON(w, map[string]any{"access_token": at, "refresh_token": rt, "token_type": "Bearer", "expires_in": a.expiresIn})
	})
	server := mcp.NewServer(&mcp.Implementation{Name: "protected"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "whoami"}, func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil, nil
	})
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		a.mu.Lock()
		defer a.mu.Unlock()
		if !a.access[token] {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{Scopes: []string{"tools"}, Expiration: time.Now().Add(time.Hour)}, nil
	}
	mux.Handle("/mcp", auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{ResourceMetadataURL: a.URL + "/.well-known/oauth-protected-resource/mcp"})(
		mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)))
	return a
}

func writeJSON(w http.ResponseWriter, v any) { writeJSONStatus(w, http.StatusOK, v) }

func writeJSONStatus(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// revoke makes every token issued so far invalid; with refresh, the
// refresh tokens too.
func (a *authServer) revoke(refresh bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	clear(a.access)
	if refresh {
		clear(a.refresh)
	}
}

func (a *authServer) counts() (logins, refreshes int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.logins, a.refreshes
}

// headless is a login's browser that follows the authorization server's
// redirect at once, as the test's server approves at once, and reports
// where it went.
func headless(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
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
	return &auth.AuthorizationResult{Code: to.Query().Get("code"), State: to.Query().Get("state"), Iss: to.Query().Get("iss")}, nil
}

// call connects to the server's /mcp with h and calls whoami.
func call(ctx context.Context, url string, h auth.OAuthHandler) error {
	client := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, OAuthHandler: h}, nil)
	if err != nil {
		return err
	}
	defer cs.Close()
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "whoami", Arguments: map[string]any{}})
	return err
}

// handler returns a server's handler on store: with a headless login if
// login is set, else the one serve uses.
func handler(t *testing.T, a *authServer, store *Store, name string, login bool) *Handler {
	t.Helper()
	opts := Options{Server: name, URL: a.URL + "/mcp", Store: store}
	if login {
		opts.Login, opts.RedirectURL = headless, "http://127.0.0.1:1/callback"
	}
	h, err := NewHandler(opts)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestLoginThenServe(t *testing.T) {
	a := newAuthServer(t)
	store := &Store{Dir: filepath.Join(t.TempDir(), "oauth")}
	// serve, before any login: the server needs one.
	err := call(t.Context(), a.URL+"/mcp", handler(t, a, store, "tracker", false))
	if !errors.Is(err, ErrLoginRequired) || !strings.Contains(err.Error(), "run: switchboard login tracker") {
		t.Fatalf("before a login: %v; want ErrLoginRequired, naming the command", err)
	}
	// switchboard login: the whole flow, whose token is stored, 0600.
	if err := call(t.Context(), a.URL+"/mcp", handler(t, a, store, "tracker", true)); err != nil {
		t.Fatalf("login: %v", err)
	}
	path := filepath.Join(store.Dir, Key("tracker", a.URL+"/mcp")+".json")
	info, err := os.Stat(path)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("the stored token: %v, %v; want mode 0600", info, err)
	}
	if entries, _ := os.ReadDir(store.Dir); len(entries) != 1 {
		t.Errorf("the store holds %d files, want the record alone", len(entries))
	}
	// serve again, in another process: the stored token, no login.
	if err := call(t.Context(), a.URL+"/mcp", handler(t, a, store, "tracker", false)); err != nil {
		t.Fatalf("after the login: %v", err)
	}
	if logins, refreshes := a.counts(); logins != 1 || refreshes != 0 {
		t.Errorf("%d logins and %d refreshes, want 1 and 0", logins, refreshes)
	}
}

func TestRefreshBeforeExpiry(t *testing.T) {
	a := newAuthServer(t)
	a.expiresIn = 30 // within the refresh margin: refreshed before it is used
	store := &Store{Dir: t.TempDir()}
	if err := call(t.Context(), a.URL+"/mcp", handler(t, a, store, "s", true)); err != nil {
		t.Fatal(err)
	}
	_, before := a.counts()
	if err := call(t.Context(), a.URL+"/mcp", handler(t, a, store, "s", false)); err != nil {
		t.Fatal(err)
	}
	if logins, refreshes := a.counts(); logins != 1 || refreshes <= before {
		t.Errorf("%d logins, %d refreshes (%d before): want the token refreshed before it expired", logins, refreshes, before)
	}
	rec, err := store.Load(Key("s", a.URL+"/mcp"), "s")
	if err != nil || rec.Token.AccessToken == "access-1" {
		t.Errorf("the store kept %v (%v), want the refreshed token", rec.Token.AccessToken, err)
	}
}

func TestRefreshOnUnauthorized(t *testing.T) {
	a := newAuthServer(t)
	store := &Store{Dir: t.TempDir()}
	if err := call(t.Context(), a.URL+"/mcp", handler(t, a, store, "s", true)); err != nil {
		t.Fatal(err)
	}
	a.revoke(false) // the access token no longer works; the refresh token does
	if err := call(t.Context(), a.URL+"/mcp", handler(t, a, store, "s", false)); err != nil {
		t.Fatalf("after a 401: %v; want a refresh and the retry to succeed", err)
	}
	if logins, refreshes := a.counts(); logins != 1 || refreshes != 1 {
		t.Errorf("%d logins and %d refreshes, want 1 and 1", logins, refreshes)
	}
}

func TestRevokedRefreshTokenNeedsLogin(t *testing.T) {
	a := newAuthServer(t)
	store := &Store{Dir: t.TempDir()}
	if err := call(t.Context(), a.URL+"/mcp", handler(t, a, store, "s", true)); err != nil {
		t.Fatal(err)
	}
	a.revoke(true)
	err := call(t.Context(), a.URL+"/mcp", handler(t, a, store, "s", false))
	if !errors.Is(err, ErrLoginRequired) || !strings.Contains(err.Error(), "invalid_grant") {
		t.Fatalf("with the refresh token revoked: %v; want ErrLoginRequired, saying why", err)
	}
	for _, planted := range []string{"access-1", "refresh-1"} {
		if strings.Contains(err.Error(), planted) {
			t.Errorf("the error shows a token: %v", err)
		}
	}
}

func TestTwoServersOnOneAuthorizationServer(t *testing.T) {
	a := newAuthServer(t)
	store := &Store{Dir: t.TempDir()}
	for _, name := range []string{"one", "two"} {
		if err := call(t.Context(), a.URL+"/mcp", handler(t, a, store, name, true)); err != nil {
			t.Fatal(err)
		}
	}
	one, err1 := store.Load(Key("one", a.URL+"/mcp"), "one")
	two, err2 := store.Load(Key("two", a.URL+"/mcp"), "two")
	if err1 != nil || err2 != nil || one.Token.AccessToken == two.Token.AccessToken {
		t.Errorf("two servers' records: %v, %v (%v, %v); want one each", one, two, err1, err2)
	}
	if _, err := store.Delete(Key("one", a.URL+"/mcp")); err != nil {
		t.Fatal(err)
	}
	if err := call(t.Context(), a.URL+"/mcp", handler(t, a, store, "two", false)); err != nil {
		t.Errorf("the other server, after one's logout: %v", err)
	}
}

func TestStoreRefusesBadFiles(t *testing.T) {
	store := &Store{Dir: t.TempDir()}
	if rec, err := store.Load("absent", "absent"); rec != nil || err != nil {
		t.Errorf("Load of nothing = %v, %v; want nil, nil", rec, err)
	}
	write := func(key, data string, mode os.FileMode) {
		if err := os.WriteFile(filepath.Join(store.Dir, key+".json"), []byte(data), mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(filepath.Join(store.Dir, key+".json"), mode)
	}
	write("open", `{"token_url": "https://a/token", "token": {"access_token": "planted-secret"}}`, 0o644)
	write("corrupt", `{"token": `, 0o600)
	for key, want := range map[string]string{"open": "readable by others (mode 0644); run: chmod 600 ", "corrupt": "not a token record; run: switchboard logout corrupt && switchboard login corrupt"} {
		_, err := store.Load(key, key)
		var fe *FileError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "planted-secret") {
			t.Errorf("Load %s = %v; want a FileError saying %q", key, err, want)
		}
	}
}

func TestLoopbackRedirect(t *testing.T) {
	l, err := ListenLoopback(0)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	opened := make(chan string, 1)
	fetch := l.Fetcher(func(u string) error {
		opened <- u
		go browse(l.RedirectURL + "?code=c0de&state=st&iss=https%3A%2F%2Fissuer") // the browser, once the user approves
		return nil
	}, time.Minute)
	res, err := fetch(t.Context(), &auth.AuthorizationArgs{URL: "https://issuer/authorize?x=1"})
	if err != nil || res.Code != "c0de" || res.State != "st" || res.Iss != "https://issuer" || <-opened != "https://issuer/authorize?x=1" {
		t.Fatalf("fetch = %+v, %v", res, err)
	}
	go browse(l.RedirectURL + "?error=access_denied")
	if _, err := l.Fetcher(func(string) error { return nil }, time.Minute)(t.Context(), &auth.AuthorizationArgs{}); err == nil || !strings.Contains(err.Error(), "access_denied") {
		t.Errorf("a refused login: %v", err)
	}
}

// browse is a browser that visits u, with no connection kept.
func browse(u string) {
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	if resp, err := client.Get(u); err == nil {
		resp.Body.Close()
	}
}

func TestLoginWaitIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, err := awaitRedirect(context.Background(), make(chan redirect), 5*time.Minute)
		if !errors.Is(err, errNoRedirect) || !strings.Contains(err.Error(), "within 5m0s") {
			t.Errorf("a redirect that never comes: %v", err)
		}
	})
}

func TestLoginStateMismatch(t *testing.T) {
	a := newAuthServer(t)
	forged := func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		res, err := headless(ctx, args)
		if err == nil {
			res.State = "forged"
		}
		return res, err
	}
	h, err := NewHandler(Options{Server: "s", URL: a.URL + "/mcp", Store: &Store{Dir: t.TempDir()}, Login: forged, RedirectURL: "http://127.0.0.1:1/callback"})
	if err != nil {
		t.Fatal(err)
	}
	if err := call(t.Context(), a.URL+"/mcp", h); err == nil || !strings.Contains(err.Error(), "state mismatch") {
		t.Errorf("a redirect with another state: %v", err)
	}
	if logins, _ := a.counts(); logins != 0 {
		t.Errorf("%d codes exchanged, want none", logins)
	}
}

func TestConfiguredClientAndScopes(t *testing.T) {
	a := newAuthServer(t)
	var asked url.Values
	fetch := func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		u, _ := url.Parse(args.URL)
		asked = u.Query()
		return headless(ctx, args)
	}
	h, err := NewHandler(Options{Server: "s", URL: a.URL + "/mcp", Store: &Store{Dir: t.TempDir()}, Login: fetch, RedirectURL: "http://127.0.0.1:1/callback",
		OAuth: &config.OAuth{ClientID: "pre-registered", ClientSecret: "shh", Scopes: []string{"read", "write"}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := call(t.Context(), a.URL+"/mcp", h); err != nil {
		t.Fatal(err)
	}
	scopes := strings.Fields(asked.Get("scope")) // in no set order: go-sdk unions them
	slices.Sort(scopes)
	if asked.Get("client_id") != "pre-registered" || !slices.Equal(scopes, []string{"offline_access", "read", "write"}) ||
		asked.Get("resource") != a.URL+"/mcp" || asked.Get("code_challenge_method") != "S256" {
		t.Errorf("the authorization request: %v", asked)
	}
}
