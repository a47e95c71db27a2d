package oauth

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// newAuthServer starts an authorization server that protects /mcp, an
// MCP server with one tool, whoami.
func newAuthServer(t *testing.T) *mcptest.AuthServer {
	t.Helper()
	server := mcp.NewServer(&mcp.Implementation{Name: "protected"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "whoami"}, func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil, nil
	})
	a := mcptest.NewAuthServer(map[string]http.Handler{"/mcp": mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)})
	t.Cleanup(a.Close)
	return a
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
func handler(t *testing.T, a *mcptest.AuthServer, store *Store, name string, login bool) *Handler {
	t.Helper()
	opts := Options{Server: name, URL: a.URL + "/mcp", Store: store}
	if login {
		opts.Login, opts.RedirectURL = mcptest.Headless, "http://127.0.0.1:1/callback"
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
	if logins, refreshes := a.Counts(); logins != 1 || refreshes != 0 {
		t.Errorf("%d logins and %d refreshes, want 1 and 0", logins, refreshes)
	}
}

// TestRefreshBeforeExpiry: a stored token that expires within the margin is
// refreshed in the background, once for many concurrent requests: while
// the authorization server holds the refresh, the requests go on with the
// token in hand, which is still good (a slow authorization server holds up
// no request); the refreshed token is stored as soon as it comes.
func TestRefreshBeforeExpiry(t *testing.T) {
	a, store, key := nearExpiry(t)
	held, release := a.HoldRefreshes()
	defer release()
	h := handler(t, a, store, "s", false)
	stored := make(chan struct{})
	h.earlyRefreshed = func() { close(stored) }
	served := make(chan struct{})
	go func() {
		defer close(served)
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				if err := call(t.Context(), a.URL+"/mcp", h); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
	}()
	select {
	case <-served:
	case <-time.After(20 * time.Second):
		release()
		<-served
		t.Fatal("the requests waited for the refresh")
	}
	<-held // the refresh began, and waits still
	release()
	<-stored
	if logins, refreshes := a.Counts(); logins != 1 || refreshes != 1 {
		t.Errorf("%d logins, %d refreshes: want one refresh, before the token expired", logins, refreshes)
	}
	rec, err := store.Load(key, "s")
	if err != nil || rec.Token.AccessToken == "access-1" {
		t.Errorf("the store kept %v (%v), want the refreshed token", rec.Token.AccessToken, err)
	}
}

// nearExpiry returns an authorization server, a store that holds a login
// to its server "s" whose token (an hour's) is in its last minute, within
// the margin, and the login's key.
func nearExpiry(t *testing.T) (*mcptest.AuthServer, *Store, string) {
	t.Helper()
	a := newAuthServer(t)
	store := &Store{Dir: t.TempDir()}
	if err := call(t.Context(), a.URL+"/mcp", handler(t, a, store, "s", true)); err != nil {
		t.Fatal(err)
	}
	key := Key("s", a.URL+"/mcp")
	rec, err := store.Load(key, "s")
	if err != nil {
		t.Fatal(err)
	}
	rec.Token.Expiry = time.Now().Add(30 * time.Second)
	if err := store.Save(key, rec); err != nil {
		t.Fatal(err)
	}
	return a, store, key
}

// TestRefusedTokenJoinsTheEarlyRefresh: a token that the server refuses
// while its early refresh is in flight waits for that refresh, the only
// one: an authorization server that rotates refresh tokens could take a
// second for the reuse of the first.
func TestRefusedTokenJoinsTheEarlyRefresh(t *testing.T) {
	a, store, _ := nearExpiry(t)
	held, release := a.HoldRefreshes()
	defer release()
	h := handler(t, a, store, "s", false)
	awaiting := make(chan struct{}, 1)
	h.awaitingRefresh = func() { awaiting <- struct{}{} }
	client := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil)
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: a.URL + "/mcp", OAuthHandler: h}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	<-held // the handshake began the early refresh, which waits
	a.RefuseNext(1)
	refused := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "whoami", Arguments: map[string]any{}})
		refused <- err
	}()
	<-awaiting // the refused call waits for a refresh
	select {
	case <-held:
		t.Error("the refused call began a second refresh")
	default:
	}
	release()
	if err := <-refused; err != nil {
		t.Fatalf("the refused call, after the refresh: %v", err)
	}
	if _, refreshes := a.Counts(); refreshes != 1 {
		t.Errorf("%d refreshes, want 1", refreshes)
	}
}

func TestRefreshOnUnauthorized(t *testing.T) {
	a := newAuthServer(t)
	store := &Store{Dir: t.TempDir()}
	if err := call(t.Context(), a.URL+"/mcp", handler(t, a, store, "s", true)); err != nil {
		t.Fatal(err)
	}
	a.Revoke(false) // the access token no longer works; the refresh token does
	if err := call(t.Context(), a.URL+"/mcp", handler(t, a, store, "s", false)); err != nil {
		t.Fatalf("after a 401: %v; want a refresh and the retry to succeed", err)
	}
	if logins, refreshes := a.Counts(); logins != 1 || refreshes != 1 {
		t.Errorf("%d logins and %d refreshes, want 1 and 1", logins, refreshes)
	}
}

func TestRevokedRefreshTokenNeedsLogin(t *testing.T) {
	a := newAuthServer(t)
	store := &Store{Dir: t.TempDir()}
	if err := call(t.Context(), a.URL+"/mcp", handler(t, a, store, "s", true)); err != nil {
		t.Fatal(err)
	}
	a.Revoke(true)
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
	const authorize = "https://issuer/authorize?x=1&state=st"
	opened := make(chan string, 1)
	fetch := l.Fetcher(func(u string) error {
		opened <- u
		go browse(l.RedirectURL + "?code=c0de&state=st&iss=https%3A%2F%2Fissuer") // the browser, once the user approves
		return nil
	}, time.Minute)
	res, err := fetch(t.Context(), &auth.AuthorizationArgs{URL: authorize})
	if err != nil || res.Code != "c0de" || res.State != "st" || res.Iss != "https://issuer" || <-opened != authorize {
		t.Fatalf("fetch = %+v, %v", res, err)
	}
	fetch = l.Fetcher(func(string) error {
		go browse(l.RedirectURL + "?error=access_denied%1b%5b31m&state=st2")
		return nil
	}, time.Minute)
	_, err = fetch(t.Context(), &auth.AuthorizationArgs{URL: "https://issuer/authorize?state=st2"})
	if err == nil || !strings.Contains(err.Error(), `"access_denied\x1b[31m"`) {
		t.Errorf("a refused login: %v; want the refusal, quoted", err)
	}
}

// TestLoopbackIgnoresAnotherLoginsRedirect: only the login under way takes
// a redirect, and only one with its state: any other (an older tab, a
// forged link, a refusal without the state, a redirect while no login
// waits) gets a 400 and neither ends nor fails a login.
func TestLoopbackIgnoresAnotherLoginsRedirect(t *testing.T) {
	l, err := ListenLoopback(0)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	refused := func(q string) {
		t.Helper()
		if got := visit(t, l.RedirectURL+q); got != http.StatusBadRequest {
			t.Errorf("a redirect %s: status %d, want 400", q, got)
		}
	}
	refused("?code=early&state=st") // before the login
	fetch := l.Fetcher(func(string) error {
		for _, q := range []string{"?code=evil&state=other", "?code=evil", "?error=access_denied", "?error=access_denied&state=other"} {
			refused(q)
		}
		go browse(l.RedirectURL + "?code=c0de&state=st")
		return nil
	}, time.Minute)
	res, err := fetch(t.Context(), &auth.AuthorizationArgs{URL: "https://issuer/authorize?state=st"})
	if err != nil || res.Code != "c0de" || res.State != "st" {
		t.Fatalf("fetch = %+v, %v; want the login's own code", res, err)
	}
	refused("?code=again&state=st") // the login is over: a reload of its tab

	fetch = l.Fetcher(func(string) error {
		go browse(l.RedirectURL + "?code=n3xt&state=st2")
		return nil
	}, time.Minute)
	if res, err := fetch(t.Context(), &auth.AuthorizationArgs{URL: "https://issuer/authorize?state=st2"}); err != nil || res.Code != "n3xt" {
		t.Errorf("the next login = %+v, %v; want its own code", res, err)
	}
}

// visit is browse that reports the status.
func visit(t *testing.T, u string) int {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
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
		res, err := mcptest.Headless(ctx, args)
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
	if logins, _ := a.Counts(); logins != 0 {
		t.Errorf("%d codes exchanged, want none", logins)
	}
}

func TestConfiguredClientAndScopes(t *testing.T) {
	a := newAuthServer(t)
	var asked url.Values
	fetch := func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		u, _ := url.Parse(args.URL)
		asked = u.Query()
		return mcptest.Headless(ctx, args)
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

// TestLoginRefusesBadMetadata: a login to a server whose metadata names
// another issuer, or that serves none, fails, exchanges no code, stores
// nothing, and says what was wrong.
func TestLoginRefusesBadMetadata(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spoil func(*mcptest.AuthServer)
		want  string
	}{
		{"issuer mismatch", func(a *mcptest.AuthServer) { a.SetIssuer("https://elsewhere.example") }, "issuer"},
		{"no metadata", (*mcptest.AuthServer).HideMetadata, "publishes no metadata: register a client with it, and set its oauth.clientId in the config of s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newAuthServer(t)
			tc.spoil(a)
			store := &Store{Dir: t.TempDir()}
			err := call(t.Context(), a.URL+"/mcp", handler(t, a, store, "s", true))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("login = %v; want an error about the %s", err, tc.want)
			}
			if logins, _ := a.Counts(); logins != 0 {
				t.Errorf("%d codes exchanged, want none", logins)
			}
			if rec, err := store.Load(Key("s", a.URL+"/mcp"), "s"); rec != nil || err != nil {
				t.Errorf("stored %v, %v; want nothing", rec, err)
			}
		})
	}
}

// TestShortLivedTokensAreNotRefreshedPerRequest: a token that lives less
// than two margins is refreshed in its second half, not at every request.
func TestShortLivedTokensAreNotRefreshedPerRequest(t *testing.T) {
	a := newAuthServer(t)
	a.SetExpiresIn(45 * time.Second)
	store := &Store{Dir: t.TempDir()}
	if err := call(t.Context(), a.URL+"/mcp", handler(t, a, store, "s", true)); err != nil {
		t.Fatal(err)
	}
	h := handler(t, a, store, "s", false)
	for range 3 {
		if err := call(t.Context(), a.URL+"/mcp", h); err != nil {
			t.Fatal(err)
		}
	}
	if _, refreshes := a.Counts(); refreshes != 0 {
		t.Errorf("%d refreshes of a fresh 45 s token, want none", refreshes)
	}
}

func TestBrowserCommands(t *testing.T) {
	const u = "https://issuer/authorize?a=1&b=2"
	for _, tc := range []struct {
		browser string
		want    [][]string
	}{
		{"", nil},
		{"firefox", [][]string{{"firefox", u}}},
		{"firefox --new-tab", [][]string{{"firefox", "--new-tab", u}}},
		{"w3m:lynx", [][]string{{"w3m", u}, {"lynx", u}}},
		{"chromium --app=%s::open", [][]string{{"chromium", "--app=" + u}, {"open", u}}},
	} {
		browser := strings.ReplaceAll(tc.browser, ":", string(os.PathListSeparator))
		if diff := cmp.Diff(tc.want, browserCommands(browser, u)); diff != "" {
			t.Errorf("BROWSER=%q (-want +got):\n%s", tc.browser, diff)
		}
	}
}

// TestBrowserTriesTheNext: a browser command that does not start is
// reported, and the next one is tried.
func TestBrowserTriesTheNext(t *testing.T) {
	const u = "https://issuer/authorize"
	var out strings.Builder
	started := startFirst(&out, [][]string{{"/nonexistent/browser", u}, {"true", u}, {"false", u}})
	if diff := cmp.Diff([]string{"true", u}, started); diff != "" {
		t.Errorf("started (-want +got):\n%s", diff)
	}
	if got := out.String(); !strings.Contains(got, "could not start /nonexistent/browser") {
		t.Errorf("output %q; want the missing browser reported", got)
	}
}

// TestSlowRefreshHoldsUpNoOtherRequest: while the refresh of a refused
// token waits on a slow authorization server, another request to the same
// server, whose token it takes, is served; the refused request gets the
// refreshed token once the refresh ends.
func TestSlowRefreshHoldsUpNoOtherRequest(t *testing.T) {
	a := newAuthServer(t)
	store := &Store{Dir: t.TempDir()}
	if err := call(t.Context(), a.URL+"/mcp", handler(t, a, store, "s", true)); err != nil {
		t.Fatal(err)
	}
	h := handler(t, a, store, "s", false)
	client := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil)
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: a.URL + "/mcp", OAuthHandler: h}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	held, release := a.HoldRefreshes()
	defer release()
	a.RefuseNext(1)
	refused := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "whoami", Arguments: map[string]any{}})
		refused <- err
	}()
	select {
	case <-held:
	case err := <-refused:
		t.Fatalf("the refused call ended (%v) before its refresh began", err)
	}
	// The refresh waits: another request goes on with the token it has.
	// (Without the bound, a request held up would hang the test.)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "whoami", Arguments: map[string]any{}}); err != nil {
		t.Fatalf("a call while the refresh waits: %v", err)
	}
	release()
	if err := <-refused; err != nil {
		t.Fatalf("the refused call, after the refresh: %v", err)
	}
	if _, refreshes := a.Counts(); refreshes != 1 {
		t.Errorf("%d refreshes, want 1", refreshes)
	}
}
