package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// served is a running `switchboard serve`.
type served struct {
	cmd   *exec.Cmd
	url   string           // http://host:port
	lines chan string      // stderr, line by line; closed at exit
	log   *strings.Builder // every stderr line so far, for failure messages
	done  chan struct{}    // closed when the process has exited
	err   error            // its exit error, once done is closed
}

var urlRE = regexp.MustCompile(`url=http://([^ ]+)/mcp`)

// startServe runs the binary with serve and args, and waits for its MCP URL.
func startServe(t *testing.T, args ...string) *served {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	g := &served{cmd: cmd, lines: make(chan string, 1000), log: &strings.Builder{}, done: make(chan struct{})}
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		defer close(g.lines)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			g.lines <- sc.Text()
		}
	}()
	go func() {
		<-scanned // Wait closes the pipe: read it all first
		g.err = cmd.Wait()
		close(g.done)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-g.done
	})
	g.url = "http://" + g.waitLog(t, urlRE)[1]
	return g
}

// logPatience bounds how long a test waits for a line of the gateway's
// log, so that one that never comes fails the test with the log, not at
// the test binary's timeout.
const logPatience = time.Minute

// waitLog reads stderr until a line matches re, and returns the match.
func (g *served) waitLog(t *testing.T, re *regexp.Regexp) []string {
	t.Helper()
	var m []string
	g.readLog(t, re.String(), func(line string) bool {
		m = re.FindStringSubmatch(line)
		return m != nil
	})
	return m
}

// waitLogs reads stderr until every one of res has matched a line, in any
// order.
func (g *served) waitLogs(t *testing.T, res ...*regexp.Regexp) {
	t.Helper()
	g.readLog(t, fmt.Sprint(res), func(line string) bool {
		res = slices.DeleteFunc(res, func(re *regexp.Regexp) bool { return re.MatchString(line) })
		return len(res) == 0
	})
}

// readLog reads stderr, line by line, until done returns true, within
// logPatience; want says what it waits for.
func (g *served) readLog(t *testing.T, want string, done func(line string) bool) {
	t.Helper()
	timer := time.NewTimer(logPatience)
	defer timer.Stop()
	for {
		select {
		case line, ok := <-g.lines:
			if !ok {
				t.Fatalf("gateway exited before logging %s:\n%s", want, g.log)
			}
			g.log.WriteString(line + "\n")
			if done(line) {
				return
			}
		case <-timer.C:
			t.Fatalf("gateway did not log %s within %v:\n%s", want, logPatience, g.log)
		}
	}
}

// stop sends sig and waits for the process to exit.
func (g *served) stop(t *testing.T, sig os.Signal) error {
	t.Helper()
	if err := g.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	for line := range g.lines {
		g.log.WriteString(line + "\n")
	}
	<-g.done
	return g.err
}

func connectHTTP(t *testing.T, url string) *mcp.ClientSession {
	t.Helper()
	return connectHTTPWith(t, url, nil)
}

// connectHTTPWith is connectHTTP with client options.
func connectHTTPWith(t *testing.T, url string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	transport := &http.Transport{}
	t.Cleanup(transport.CloseIdleConnections)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "v"}, opts).Connect(t.Context(),
		&mcp.StreamableClientTransport{Endpoint: url + "/mcp", HTTPClient: &http.Client{Transport: transport}}, nil)
	if err != nil {
		t.Fatalf("connect to the gateway: %v", err)
	}
	return cs
}

func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	names, err := mcptest.ToolNames(t.Context(), cs)
	if err != nil {
		t.Fatal(err)
	}
	return names
}

func getJSON(t *testing.T, url string, v any) int {
	t.Helper()
	transport := &http.Transport{}
	defer transport.CloseIdleConnections()
	resp, err := (&http.Client{Transport: transport}).Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if v != nil {
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
	}
	return resp.StatusCode
}

var settledRE = regexp.MustCompile(`servers settled`)

func TestServeHTTPEndToEnd(t *testing.T) {
	isolate(t)
	state := t.TempDir()
	cfg := writeConfig(t, map[string]mcptest.Script{
		"alpha": {StateDir: state, Tools: []mcptest.ToolSpec{{Name: "echo"}}},
		"beta":  {StateDir: state},
		// Past the startup gate: the gateway serves before it connects, and
		// adds its tools when it does.
		"late": {StateDir: state, StartDelay: 700 * time.Millisecond},
	}, map[string]any{"ghost": map[string]any{"command": "switchboard-no-such-command"}})
	g := startServe(t, "--config", cfg)

	if code := getJSON(t, g.url+"/healthz", nil); code != http.StatusOK {
		t.Errorf("/healthz = %d", code)
	}
	g.waitLog(t, settledRE)
	var ready struct {
		Status  string
		Servers map[string]string
	}
	if code := getJSON(t, g.url+"/readyz", &ready); code != http.StatusOK || ready.Status != "ready" {
		t.Errorf("/readyz = %d %+v, want 200 ready (no server is required)", code, ready)
	}
	if ready.Servers["ghost"] != "failed" || ready.Servers["alpha"] != "connected" || ready.Servers["late"] != "connected" {
		t.Errorf("/readyz servers = %v", ready.Servers)
	}

	cs := connectHTTP(t, g.url)
	names := toolNames(t, cs)
	for _, want := range []string{"alpha__echo", "beta__add", "beta__increment", "late__echo"} {
		if !strings.Contains(strings.Join(names, " "), want) {
			t.Errorf("tools %v lack %s", names, want)
		}
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "beta__add", Arguments: map[string]any{"a": 40, "b": 2}})
	if err != nil || mcptest.Text(res) != "42" {
		t.Fatalf("beta__add = %v, %v", res, err)
	}
	cs.Close()
	resp, err := http.Get(g.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`switchboard_tool_calls_total{outcome="ok",server="beta",tool="beta__add"} 1`,
		`switchboard_upstream_state{server="ghost",state="failed"} 1`,
		`switchboard_tools_exposed{server="late"} 6`,
	} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("/metrics lacks %s\n%s", want, grepLines(string(metrics), "switchboard_"))
		}
	}

	if err := g.stop(t, syscall.SIGTERM); err != nil {
		t.Errorf("exit after SIGTERM: %v\n%s", err, g.log)
	}
	assertNoSurvivors(t, state)
}

// assertNoSurvivors checks that every upstream process recorded in state is
// gone.
func assertNoSurvivors(t *testing.T, state string) {
	t.Helper()
	counts, err := mcptest.ReadCounts(state)
	if err != nil {
		t.Fatal(err)
	}
	if len(counts.PIDs) == 0 {
		t.Fatal("no upstream process was recorded")
	}
	for _, pid := range counts.PIDs {
		if err := mcptest.Gone(pid); err != nil {
			t.Errorf("an upstream process survived the gateway: %v", err)
		}
	}
}

func TestServeStdio(t *testing.T) {
	isolate(t)
	cfg := writeConfig(t, map[string]mcptest.Script{"m": {}}, nil)
	cmd := exec.Command(binary, "serve", "--stdio", "--config", cfg)
	cmd.Stderr = io.Discard
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "v"}, nil).Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect over stdio: %v", err)
	}
	if names := toolNames(t, cs); !strings.Contains(strings.Join(names, " "), "m__echo") {
		t.Errorf("tools over stdio: %v", names)
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "m__echo", Arguments: map[string]any{"hi": "there"}})
	if err != nil || mcptest.Text(res) != `{"hi":"there"}` {
		t.Errorf("m__echo over stdio = %v, %v", res, err)
	}
	if err := cs.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
}

func TestServeRefusesNonLoopbackWithoutAuth(t *testing.T) {
	isolate(t)
	cmd := exec.Command(binary, "serve", "--listen", "0.0.0.0:0")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(out), "not a loopback address") {
		t.Errorf("serve --listen 0.0.0.0:0 = %v, %q; want exit 1 saying why", err, out)
	}
}

func TestServeAuthTokenMustBeSet(t *testing.T) {
	isolate(t)
	cmd := exec.Command(binary, "serve", "--auth-token-env", "SWITCHBOARD_TEST_UNSET_TOKEN")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "SWITCHBOARD_TEST_UNSET_TOKEN") {
		t.Errorf("serve with an unset token variable = %v, %q", err, out)
	}
}

func grepLines(s, prefix string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
