package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// replaceFile writes data to path the way editors save: to a temporary file
// beside it, renamed over it.
func replaceFile(t *testing.T, path string, data []byte) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), ".mcp.json.tmp")
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// TestServeReloadsItsConfig: an edit of the config file (an atomic save)
// adds a server, with no restart, and its clients see the new tools; a
// broken edit is refused with one line naming the file, and the gateway
// serves on; SIGHUP reloads too, and does not stop the gateway.
func TestServeReloadsItsConfig(t *testing.T) {
	isolate(t)
	state := t.TempDir()
	path := writeConfig(t, map[string]mcptest.Script{"alpha": {StateDir: state, Tools: []mcptest.ToolSpec{{Name: "echo"}}}}, nil)
	original, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	g := startServe(t, "--config", path)
	g.waitLog(t, settledRE)
	changed := make(chan struct{}, 10)
	cs := connectHTTPWith(t, g.url, &mcp.ClientOptions{ToolListChangedHandler: func(_ context.Context, _ *mcp.ToolListChangedRequest) {
		changed <- struct{}{}
	}})

	// Add beta, as an editor saves.
	withBeta := writeConfig(t, map[string]mcptest.Script{
		"alpha": {StateDir: state, Tools: []mcptest.ToolSpec{{Name: "echo"}}},
		"beta":  {StateDir: state, Tools: []mcptest.ToolSpec{{Name: "echo"}}},
	}, nil)
	data, err := os.ReadFile(withBeta)
	if err != nil {
		t.Fatal(err)
	}
	replaceFile(t, path, data)
	g.waitLogs(t, regexp.MustCompile(`msg="config reloaded" cause="file changed" added=\[beta\]`),
		regexp.MustCompile(`msg="server connected" server=beta`))
	<-changed
	if names := toolNames(t, cs); !slices.Contains(names, "beta__echo") || !slices.Contains(names, "alpha__echo") {
		t.Errorf("tools after adding beta: %v", names)
	}

	// Break it: refused, and the gateway serves on.
	replaceFile(t, path, []byte("{\"mcpServers\": {,}"))
	line := g.waitLog(t, regexp.MustCompile(`msg="config not reloaded; the running config stays".*`))[0]
	if !strings.Contains(line, path) {
		t.Errorf("the refusal does not name the file: %s", line)
	}
	if res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "beta__echo", Arguments: map[string]any{"text": "still"}}); err != nil || mcptest.Text(res) != `{"text":"still"}` {
		t.Errorf("a call after a broken edit: %v %v", res, err)
	}
	// /metrics and /status tell of the refusal too.
	if text := fetch(t, g.url+"/metrics", ""); !strings.Contains(text, "switchboard_config_last_reload_successful 0") ||
		!strings.Contains(text, `switchboard_config_reloads_total{outcome="refused"} 1`) ||
		!strings.Contains(text, `switchboard_config_reloads_total{outcome="ok"} 1`) {
		t.Errorf("/metrics after a refused reload:\n%s", grepLines(text, "switchboard_config"))
	}
	var report struct {
		LastReload struct{ Error string } `json:"last_reload"`
	}
	if err := json.Unmarshal([]byte(fetch(t, g.url+"/status", "application/json")), &report); err != nil ||
		!strings.Contains(report.LastReload.Error, "refused; the running config stays: "+path) {
		t.Errorf("/status after a refused reload: %+v, %v", report, err)
	}

	// SIGHUP reloads (the file is still broken), and stops nothing.
	if err := g.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	g.waitLog(t, regexp.MustCompile(`msg="config not reloaded; the running config stays" cause=SIGHUP`))

	// Back to alpha alone, written in place, with a value that is ignored:
	// its warning is a log line like the others.
	var alone map[string]any
	if err := json.Unmarshal(original, &alone); err != nil {
		t.Fatal(err)
	}
	alone["toolSearch"] = "sometimes"
	data, err = json.Marshal(alone)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	g.waitLogs(t, regexp.MustCompile(`level=WARN msg="config warning" warning=".*toolSearch.*sometimes`),
		regexp.MustCompile(`msg="config reloaded" cause="file changed" added=\[\] removed=\[beta\]`))
	if strings.Contains(g.log.String(), "switchboard: warning") {
		t.Errorf("a reload's warning is not a structured log line:\n%s", g.log.String())
	}
	if text := fetch(t, g.url+"/metrics", ""); !strings.Contains(text, "switchboard_config_last_reload_successful 1") {
		t.Errorf("/metrics after a good reload:\n%s", grepLines(text, "switchboard_config"))
	}
	if names := toolNames(t, cs); slices.Contains(names, "beta__echo") {
		t.Errorf("tools after removing beta: %v", names)
	}
	cs.Close()
	if err := g.stop(t, syscall.SIGTERM); err != nil {
		t.Errorf("exit after SIGTERM: %v\n%s", err, g.log.String())
	}
	assertNoSurvivors(t, state)
}

// TestServeReloadsAConfigMapSwap: a config mounted from a Kubernetes
// ConfigMap is a link through a ..data link that the kubelet swaps for a new
// one on update; the file itself sees no event, and the change is picked up.
func TestServeReloadsAConfigMapSwap(t *testing.T) {
	isolate(t)
	state := t.TempDir()
	version := func(name string, servers map[string]mcptest.Script) {
		data, err := os.ReadFile(writeConfig(t, servers, nil))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(name, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(name, "mcp.json"), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	mount := t.TempDir()
	alpha := mcptest.Script{StateDir: state, Tools: []mcptest.ToolSpec{{Name: "echo"}}}
	version(filepath.Join(mount, "..v1"), map[string]mcptest.Script{"alpha": alpha})
	for old, link := range map[string]string{"..v1": "..data", "..data/mcp.json": "mcp.json"} {
		if err := os.Symlink(old, filepath.Join(mount, link)); err != nil {
			t.Fatal(err)
		}
	}
	g := startServe(t, "--config", filepath.Join(mount, "mcp.json"))
	g.waitLog(t, settledRE)

	version(filepath.Join(mount, "..v2"), map[string]mcptest.Script{"alpha": alpha, "beta": alpha})
	if err := os.Symlink("..v2", filepath.Join(mount, "..data_tmp")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(mount, "..data_tmp"), filepath.Join(mount, "..data")); err != nil {
		t.Fatal(err)
	}
	g.waitLogs(t, regexp.MustCompile(`msg="config reloaded" cause="file changed" added=\[beta\]`),
		regexp.MustCompile(`msg="server connected" server=beta`))
	if err := g.stop(t, syscall.SIGTERM); err != nil {
		t.Errorf("exit after SIGTERM: %v\n%s", err, g.log.String())
	}
	assertNoSurvivors(t, state)
}

// TestServeWatchesADirectoryCreatedLater: the user config's directory
// need not exist when serve starts; a config written there later is loaded.
func TestServeWatchesADirectoryCreatedLater(t *testing.T) {
	isolate(t)
	xdg := filepath.Join(t.TempDir(), "not", "yet")
	t.Setenv("XDG_CONFIG_HOME", xdg)
	state := t.TempDir()
	g := startServe(t) // on the embedded default
	g.waitLog(t, settledRE)
	data, err := os.ReadFile(writeConfig(t, map[string]mcptest.Script{"alpha": {StateDir: state}}, nil))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(xdg, "switchboard"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(xdg, "switchboard", "mcp.json"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	// alpha may connect before the removed servers are closed, and so
	// before the reload is logged.
	g.waitLogs(t, regexp.MustCompile(`msg="config reloaded" cause="file changed" added=\[alpha\] removed="\[clock notes\]"`),
		regexp.MustCompile(`msg="server connected" server=alpha`))
	if err := g.stop(t, syscall.SIGTERM); err != nil {
		t.Errorf("exit after SIGTERM: %v\n%s", err, g.log.String())
	}
	assertNoSurvivors(t, state)
}

// versionLine is the first line of status --gateway: the gateway's version
// ("dev", or what the go command stamps from git when it may) and what it
// sees.
var versionLine = regexp.MustCompile(`^switchboard \S+: all servers up, up `)

// TestReconnectVerb: switchboard reconnect asks a running gateway, with its
// token, to reconnect a server, and says how it went; a server the gateway
// does not have is an error.
func TestReconnectVerb(t *testing.T) {
	isolate(t)
	state := t.TempDir()
	// Each process of alpha prints a banner on stdout, which is skipped.
	path := writeConfig(t, map[string]mcptest.Script{"alpha": {StateDir: state, GarbageOnStart: true}}, nil)
	t.Setenv("SB_TEST_TOKEN", "r3connect")
	g := startServe(t, "--config", path, "--auth-token-env", "SB_TEST_TOKEN")
	g.waitLog(t, settledRE)
	out, stderr, code := cli(t, "reconnect", "alpha", "--gateway", g.url, "--auth-token-env", "SB_TEST_TOKEN")
	if code != 0 || out != "alpha: connected\n" {
		t.Errorf("reconnect alpha: exit %d, out %q, stderr %q", code, out, stderr)
	}
	if _, stderr, code := cli(t, "reconnect", "ghost", "--gateway", g.url, "--auth-token-env", "SB_TEST_TOKEN"); code != 1 || !strings.Contains(stderr, "no server is configured as ghost") {
		t.Errorf("reconnect ghost: exit %d, stderr %q", code, stderr)
	}
	if _, stderr, code := cli(t, "reconnect", "alpha", "--gateway", g.url); code != 1 || !strings.Contains(stderr, "401") {
		t.Errorf("reconnect without the token: exit %d, stderr %q", code, stderr)
	}
	if _, _, code := cli(t, "reconnect"); code != 2 {
		t.Errorf("reconnect without a name: exit %d, want 2", code)
	}

	// status --gateway shows the reconnect, as the gateway counted it, the
	// process, and the banners of both processes.
	out, stderr, code = cli(t, "status", "--gateway", g.url, "--auth-token-env", "SB_TEST_TOKEN")
	if row := regexp.MustCompile(`(?m)^alpha\s+connected\s+stdio\s+\d+\s+1\s+[1-9]\d*\s+0\s+-\s+-\s*$`); code != 0 || !row.MatchString(out) ||
		!versionLine.MatchString(out) || !strings.HasSuffix(out, "\n\nalpha: skipped 2 lines on stdout (not JSON-RPC)\n") {
		t.Errorf("status --gateway: exit %d, out %q, stderr %q", code, out, stderr)
	}
	out, _, code = cli(t, "status", "--gateway", g.url+"/mcp", "--auth-token-env", "SB_TEST_TOKEN", "--json") // the URL serve logs
	var report struct {
		Servers []struct {
			Name       string `json:"name"`
			Reconnects int    `json:"reconnects"`
		} `json:"servers"`
	}
	if err := json.Unmarshal([]byte(out), &report); code != 0 || err != nil || len(report.Servers) != 1 || report.Servers[0].Reconnects != 1 {
		t.Errorf("status --gateway --json: exit %d, %v, out %q", code, err, out)
	}
	if _, stderr, code := cli(t, "status", "--gateway", g.url); code != 1 || !strings.Contains(stderr, "401") {
		t.Errorf("status --gateway without the token: exit %d, stderr %q", code, stderr)
	}
	if _, _, code := cli(t, "status", "--gateway", g.url, "--config", path); code != 2 {
		t.Errorf("status with --gateway and --config: exit %d, want 2", code)
	}
	if err := g.stop(t, syscall.SIGTERM); err != nil {
		t.Errorf("exit after SIGTERM: %v", err)
	}
	assertNoSurvivors(t, state)
}

// fetch GETs url, with accept as its Accept header if set, and returns the
// body of a 200 answer.
func fetch(t *testing.T, url, accept string) string {
	t.Helper()
	return fetchAs(t, url, accept, "")
}

// fetchAs is fetch with a bearer token, if not empty.
func fetchAs(t *testing.T, url, accept, token string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s, %v", url, resp.Status, err)
	}
	return string(body)
}
