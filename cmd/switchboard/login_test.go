package main

import (
	"encoding/json"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// TestLoginThroughTheGateway is the whole story of a server that requires
// OAuth, from outside: the gateway shows it in needs-auth, with the
// command to run (and does not count it as failed), and its call says so;
// `switchboard login` (with a browser that approves at once) stores a
// token, which the running gateway takes up; calls go through; no token appears in a log, a page, a metric,
// the tool cache or the CLI's output, and the gateway's own client token
// never goes upstream; logout forgets the token.
func TestLoginThroughTheGateway(t *testing.T) {
	isolate(t)
	_, a := mcptest.NewProtectedServer(t)
	path := writeConfig(t, nil, map[string]any{"tracker": map[string]any{"type": "http", "url": a.URL + "/mcp"}})
	browser, env := mcptest.BrowserCommand()
	t.Setenv("BROWSER", browser)
	for k, v := range env {
		t.Setenv(k, v)
	}
	t.Setenv("SB_TEST_TOKEN", "gateway-client-token")

	out, stderr, code := cli(t, "check", "--config", path)
	if code != 1 || !strings.Contains(out, "FAIL  tracker: needs-auth") || !strings.Contains(out, "run: switchboard login tracker") {
		t.Errorf("check before the login: exit %d, out %q, stderr %q", code, out, stderr)
	}

	g := startServe(t, "--config", path, "--auth-token-env", "SB_TEST_TOKEN")
	g.waitLogs(t,
		regexp.MustCompile(`server needs a login.*run: switchboard login tracker --config `+regexp.QuoteMeta(path)),
		regexp.MustCompile(`servers settled" connected=0 failed=0 needs_auth=1 `))
	// /readyz names the servers to a request with the token alone.
	var ready struct{ Servers map[string]string }
	if err := json.Unmarshal([]byte(fetchAuth(t, g.url+"/readyz", "application/json")), &ready); err != nil || ready.Servers["tracker"] != "needs-auth" {
		t.Errorf("/readyz = %v %v, want tracker needs-auth", ready.Servers, err)
	}
	var probe struct{ Status, Servers any }
	if code := getJSON(t, g.url+"/readyz", &probe); code != http.StatusOK || probe.Status != "ready" || probe.Servers != nil {
		t.Errorf("/readyz without the token = %d %+v, want 200 naming no server", code, probe)
	}
	report := gatewayReport(t, g.url)
	if len(report.Servers) != 1 || report.Servers[0].State != "needs-auth" || report.Servers[0].Action != "switchboard login tracker --config "+path {
		t.Errorf("/status = %+v, want needs-auth with the login to run", report.Servers)
	}

	out, stderr, code = cli(t, "login", "tracker", "--config", path)
	if code != 0 || !strings.Contains(out, "tracker: logged in") || !strings.Contains(stderr, a.URL+"/authorize?") {
		t.Fatalf("login: exit %d, out %q, stderr %q", code, out, stderr)
	}
	g.waitLog(t, regexp.MustCompile(`server back.*server=tracker`))
	cs := connectHTTPAuth(t, g.url, "gateway-client-token")
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "tracker__add", Arguments: map[string]any{"a": 40, "b": 2}})
	if err != nil || mcptest.Text(res) != "42" {
		t.Fatalf("tracker__add after the login = %v, %v", res, err)
	}
	out, _, code = cli(t, "login", "tracker", "--config", path)
	if code != 0 || !strings.Contains(out, "tracker: already logged in") {
		t.Errorf("second login: exit %d, out %q", code, out)
	}

	// Where the tokens must not be.
	said := []string{out, stderr, g.log.String(), fetchAuth(t, g.url+"/status", "text/html"), fetchAuth(t, g.url+"/status", "application/json"),
		fetchAuth(t, g.url+"/metrics", ""), fetchAuth(t, g.url+"/readyz", "")}
	filepath.WalkDir(os.Getenv("XDG_CACHE_HOME"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(p)
			said = append(said, string(b))
		}
		return nil
	})
	bearers := a.Bearers()
	for _, tok := range bearers {
		if tok == "gateway-client-token" {
			t.Errorf("the gateway forwarded its client's token upstream")
		}
		for _, s := range said {
			if strings.Contains(s, tok) {
				t.Errorf("token %q leaked into %.200q", tok, s)
			}
		}
	}
	if len(bearers) == 0 {
		t.Errorf("the server saw no token")
	}

	cs.Close()
	if err := g.stop(t, syscall.SIGTERM); err != nil {
		t.Errorf("exit after SIGTERM: %v", err)
	}
	out, _, code = cli(t, "logout", "tracker")
	if code != 0 || out != "tracker: logged out; its tokens are forgotten\n" {
		t.Errorf("logout: exit %d, out %q", code, out)
	}
	out, _, code = cli(t, "logout", "tracker")
	if code != 0 || out != "tracker: no login stored\n" {
		t.Errorf("second logout: exit %d, out %q", code, out)
	}
}

// TestLoginRefusesWhatDoesNotLogIn: login names what is wrong with the
// server it is given.
func TestLoginRefusesWhatDoesNotLogIn(t *testing.T) {
	isolate(t)
	path := writeConfig(t, map[string]mcptest.Script{"local": {}}, map[string]any{
		"static": map[string]any{"type": "http", "url": "http://127.0.0.1:1/mcp", "headers": map[string]any{"Authorization": "Bearer x"}},
	})
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"login", "ghost", "--config", path}, 1, "no server is configured as ghost"},
		{[]string{"login", "local", "--config", path}, 1, "it is a local command (stdio)"},
		{[]string{"login", "static", "--config", path}, 1, "its config sets the Authorization header (in " + path + ")"},
		{[]string{"login"}, 2, "want the NAME of a server"},
		{[]string{"login", "static", "--wait", "0s"}, 2, "want a positive duration"},
		{[]string{"logout", "a", "b"}, 2, `unexpected argument "b"`},
	} {
		_, stderr, code := cli(t, tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, code, stderr, tc.code, tc.want)
		}
	}
}

// connectHTTPAuth connects to the gateway with its client token.
func connectHTTPAuth(t *testing.T, url, token string) *mcp.ClientSession {
	t.Helper()
	transport := &http.Transport{}
	t.Cleanup(transport.CloseIdleConnections)
	client := &http.Client{Transport: &bearer{base: transport, token: token}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "v"}, nil).Connect(t.Context(),
		&mcp.StreamableClientTransport{Endpoint: url + "/mcp", HTTPClient: client}, nil)
	if err != nil {
		t.Fatalf("connect to the gateway: %v", err)
	}
	return cs
}

type bearer struct {
	base  http.RoundTripper
	token string
}

func (b *bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(req)
}

// fetchAuth GETs url with the gateway's client token, and returns the body.
func fetchAuth(t *testing.T, url, accept string) string {
	t.Helper()
	return fetchAs(t, url, accept, "gateway-client-token")
}

// gatewayReport reads the gateway's /status as JSON.
func gatewayReport(t *testing.T, url string) (report struct {
	Servers []struct{ State, Action string }
}) {
	t.Helper()
	if err := json.Unmarshal([]byte(fetchAuth(t, url+"/status", "application/json")), &report); err != nil {
		t.Fatal(err)
	}
	return report
}

// TestLoginThatNeverComesBack: a login whose browser never comes back
// fails after --wait, once (not once per handshake go-sdk tries), and
// stores nothing; a server that needs no login says so.
func TestLoginThatNeverComesBack(t *testing.T) {
	isolate(t)
	srv, a := mcptest.NewProtectedServer(t)
	open := httptestServer(t, srv.Handler())
	path := writeConfig(t, nil, map[string]any{
		"tracker": map[string]any{"type": "http", "url": a.URL + "/mcp"},
		"open":    map[string]any{"type": "http", "url": open + "/mcp"},
	})
	t.Setenv("BROWSER", "true")
	out, stderr, code := cli(t, "login", "tracker", "--config", path, "--wait", "100ms")
	if code != 1 || !strings.Contains(stderr, "the login's redirect never came back within 100ms") || strings.Count(stderr, "Open this URL") != 1 {
		t.Errorf("login without a redirect: exit %d, out %q, stderr %q", code, out, stderr)
	}
	if out, _, _ := cli(t, "logout", "tracker"); out != "tracker: no login stored\n" {
		t.Errorf("after a failed login, logout says %q", out)
	}
	if out, stderr, code := cli(t, "login", "open", "--config", path); code != 0 || out != "open: needs no login (6 tools)\n" {
		t.Errorf("login to a server that needs none: exit %d, out %q, stderr %q", code, out, stderr)
	}
}

// httptestServer serves h on a local port until the test ends, and
// returns its URL.
func httptestServer(t *testing.T, h http.Handler) string {
	t.Helper()
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s.URL
}
