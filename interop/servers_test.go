//lint:file-ignore SA1019 The real servers log, and the tests check that their logs reach the client; a Peer has every method.
package interop

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/gateway"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// The servers of the real config, by name (each its tools' prefix).
const (
	everything = "everything" // server-everything over stdio
	remote     = "remote"     // server-everything over Streamable HTTP
	memory     = "memory"     // server-memory
	files      = "files"      // server-filesystem
	thinking   = "thinking"   // server-sequential-thinking
)

// stdioServers are the real servers that run as child processes.
var stdioServers = []string{everything, memory, files, thinking}

// realServers is one config of real servers, as a user would write it,
// and server-everything's HTTP face, which the test runs so that it can
// kill it and start it again on the same port.
type realServers struct {
	p       peers
	config  string // the file
	root    string // server-filesystem's directory
	memFile string // server-memory's MEMORY_FILE_PATH
	port    int    // server-everything's HTTP port

	mu   sync.Mutex
	http *exec.Cmd
}

// startRealServers writes the config and starts server-everything's HTTP
// face; both end with the test.
func startRealServers(t *testing.T, p peers) *realServers {
	t.Helper()
	dir := t.TempDir()
	r := &realServers{p: p, root: filepath.Join(dir, "files"), memFile: filepath.Join(dir, "memory.jsonl"), port: quietPort(t)}
	if err := os.Mkdir(r.root, 0o700); err != nil {
		t.Fatal(err)
	}
	// The children find Node 22 on their PATH, in the library as in the
	// gateway.
	env := map[string]string{"PATH": p.nodeBin + string(os.PathListSeparator) + os.Getenv("PATH")}
	r.config = writeConfig(t, map[string]any{
		everything: map[string]any{"command": p.serverEverything, "args": []string{"stdio"}, "env": env},
		remote:     map[string]any{"type": "http", "url": fmt.Sprintf("http://127.0.0.1:%d/mcp", r.port)},
		memory:     map[string]any{"command": p.bin("mcp-server-memory"), "env": map[string]string{"PATH": env["PATH"], "MEMORY_FILE_PATH": r.memFile}},
		files:      map[string]any{"command": p.bin("mcp-server-filesystem"), "args": []string{r.root}, "env": env},
		thinking:   map[string]any{"command": p.bin("mcp-server-sequential-thinking"), "env": env},
	})
	r.startHTTP(t)
	t.Cleanup(r.killHTTP)
	return r
}

// quietPort returns a port that was free a moment ago, below the
// ephemeral range: while the HTTP server is down, no outgoing connection
// on the machine can take it as its source port, and its restart on the
// same port cannot find it in use.
func quietPort(t *testing.T) int {
	t.Helper()
	for port := 20000 + rand.IntN(8000); port < 30000; port++ {
		if ln, err := net.Listen("tcp", fmt.Sprintf("0.0.0.0:%d", port)); err == nil {
			ln.Close()
			return port
		}
	}
	t.Fatal("no free port between 20000 and 30000")
	return 0
}

// startHTTP starts server-everything's Streamable HTTP face on r.port and
// returns once it listens.
func (r *realServers) startHTTP(t *testing.T) {
	t.Helper()
	cmd := r.p.command(t, context.Background(), r.p.serverEverything, "streamableHttp")
	cmd.Env = append(cmd.Env, fmt.Sprintf("PORT=%d", r.port))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	r.http = cmd
	r.mu.Unlock()
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if strings.Contains(sc.Text(), "listening on port") {
			go func() {
				for sc.Scan() {
				}
			}()
			return
		}
	}
	t.Fatalf("server-everything over HTTP ended before it listened: %v", cmd.Wait())
}

// killHTTP kills server-everything's HTTP face, and waits for it.
func (r *realServers) killHTTP() {
	r.mu.Lock()
	cmd := r.http
	r.http = nil
	r.mu.Unlock()
	if cmd != nil {
		cmd.Process.Kill()
		cmd.Wait()
	}
}

// kill kills the process pid, as a crash would.
func kill(t *testing.T, name string, pid int) {
	t.Helper()
	if pid <= 0 {
		t.Fatalf("%s: no process ID in the status", name)
	}
	proc, err := os.FindProcess(pid)
	if err == nil {
		err = proc.Kill()
	}
	if err != nil {
		t.Fatalf("killing %s (%d): %v", name, pid, err)
	}
}

// aCall is a tool call of one real server, and what its result must say.
type aCall struct {
	tool string
	args map[string]any
	want string
}

// check fails the test unless the call's result says what c wants.
func (c aCall) check(t *testing.T, res *mcp.CallToolResult, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", c.tool, err)
	}
	if text := mcptest.Text(res); res.IsError || !strings.Contains(text, c.want) {
		t.Fatalf("%s: isError %v, %q; want %q", c.tool, res.IsError, text, c.want)
	}
}

// calls returns a call of each server that shows it works. Run in
// order: the memory and file calls read what the ones before wrote.
func (r *realServers) calls() []aCall {
	note := filepath.Join(r.root, "note.txt")
	return []aCall{
		{everything + "__echo", map[string]any{"message": "hello through switchboard"}, "hello through switchboard"},
		{remote + "__get-sum", map[string]any{"a": 40, "b": 2}, "42"},
		{memory + "__create_entities", map[string]any{"entities": []any{map[string]any{"name": "switchboard", "entityType": "project", "observations": []string{"routes calls"}}}}, "switchboard"},
		{memory + "__read_graph", map[string]any{}, "routes calls"},
		{files + "__write_file", map[string]any{"path": note, "content": "written through switchboard"}, "note.txt"},
		{files + "__read_text_file", map[string]any{"path": note}, "written through switchboard"},
		{thinking + "__sequentialthinking", map[string]any{"thought": "one step", "nextThoughtNeeded": false, "thoughtNumber": 1, "totalThoughts": 1}, "thoughtNumber"},
	}
}

// wantTools checks a list of public tool names: every name has the prefix
// of a configured server; each server shows all its tools, as many as its
// status counts and, for the servers whose list does not depend on the
// client, as many as it has; and those that server-everything registers
// after its list_changed at connect are there.
func wantTools(t *testing.T, names []string, counted map[string]int) {
	t.Helper()
	prefixes := []string{everything, remote, memory, files, thinking}
	listed := map[string]int{}
	for _, n := range names {
		prefix, _, ok := strings.Cut(n, "__")
		if !ok || !slices.Contains(prefixes, prefix) {
			t.Errorf("tool %q has no server's prefix", n)
		}
		listed[prefix]++
	}
	has := map[string]int{memory: 9, files: 14, thinking: 1} // at the versions of package.json
	for _, server := range prefixes {
		if listed[server] != counted[server] || has[server] != 0 && listed[server] != has[server] {
			t.Errorf("%s: %d tools listed, %d in its status; it has %d", server, listed[server], counted[server], has[server])
		}
	}
	for _, want := range []string{
		everything + "__echo", everything + "__trigger-long-running-operation",
		everything + "__trigger-elicitation-request", // registered after initialize, announced by list_changed
		remote + "__get-sum", remote + "__trigger-elicitation-request",
		memory + "__create_entities", memory + "__read_graph",
		files + "__read_text_file", files + "__list_allowed_directories",
		thinking + "__sequentialthinking",
	} {
		if !slices.Contains(names, want) {
			t.Errorf("tools: no %s in %v", want, names)
		}
	}
}

// TestRealServersThroughTheLibrary: a Manager, embedded as an agent host
// embeds it, serves the real servers of one config: every tool under its
// prefix, calls of each server, prompts and resources; it recovers each
// stdio server killed mid-session and the HTTP one killed and started
// again on its port, with calls during the outage; and a call that may
// have run when its server died is not replayed.
func TestRealServersThroughTheLibrary(t *testing.T) {
	p := findPeers(t)
	r := startRealServers(t, p)
	data, err := os.ReadFile(r.config)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse(r.config, data)
	if err != nil {
		t.Fatal(err)
	}
	m := switchboard.New(cfg, &switchboard.Options{Cache: switchboard.CacheOff})
	defer m.Close()
	defer m.Subscribe(func(ev switchboard.Event) {
		if ev.Kind == switchboard.EventReloadFailed {
			t.Errorf("%s's %s: %v", ev.Server, ev.List, ev.Err)
		}
	})()
	ctx, cancel := context.WithTimeout(context.Background(), peerTimeout)
	defer cancel()

	toolNames := func() []string {
		var names []string
		for _, tool := range m.Tools(ctx, nil) {
			names = append(names, tool.Name)
		}
		return names
	}
	// Connected, and server-everything's conditional tools listed: its
	// list_changed comes right after initialize, before or after our first
	// list, which it must not break either way.
	waitFor(ctx, t, m, "every server connected, with server-everything's tools after its list_changed", func() bool {
		return len(m.Status().Connected()) == 5 && slices.Contains(toolNames(), everything+"__trigger-elicitation-request")
	}, func() { m.Connect(ctx) })
	counted := map[string]int{}
	for _, s := range m.Status() {
		counted[s.Name] = s.Tools
	}
	wantTools(t, toolNames(), counted)

	call := func(c aCall) {
		t.Helper()
		res, err := m.CallTool(ctx, nil, &mcp.CallToolParams{Name: c.tool, Arguments: c.args})
		c.check(t, res, err)
	}
	for _, c := range r.calls() {
		call(c)
	}
	if _, err := os.Stat(r.memFile); err != nil {
		t.Errorf("server-memory did not write MEMORY_FILE_PATH: %v", err)
	}

	prompts := m.Prompts(ctx, nil)
	if i := slices.IndexFunc(prompts, func(p switchboard.Prompt) bool { return p.Name == everything+"__simple-prompt" }); i < 0 {
		t.Errorf("prompts: no %s__simple-prompt in %d prompts", everything, len(prompts))
	} else if res, err := m.GetPrompt(ctx, nil, &mcp.GetPromptParams{Name: prompts[i].Name}); err != nil || len(res.Messages) == 0 {
		t.Errorf("prompts/get %s: %v", prompts[i].Name, err)
	}
	resources := m.Resources(ctx, nil)
	if len(resources) == 0 {
		t.Fatal("resources: none")
	}
	if res, err := m.ReadResource(ctx, nil, &mcp.ReadResourceParams{URI: resources[0].Resource.URI}); err != nil || len(res.Contents) == 0 {
		t.Errorf("resources/read %s: %v", resources[0].Resource.URI, err)
	}

	status := func(name string) switchboard.ServerStatus {
		for _, s := range m.Status() {
			if s.Name == name {
				return s
			}
		}
		t.Fatalf("no status of %s", name)
		return switchboard.ServerStatus{}
	}

	// A call that may have run when its server died is not replayed: the
	// server's elicitation reaches the caller's peer once, the server is
	// killed while the peer is asked, and the call fails as ambiguous.
	notReplayed := func(server string, kill func()) {
		t.Helper()
		peer := newHoldingPeer()
		done := make(chan error, 1)
		go func() {
			_, err := m.CallTool(switchboard.WithPeer(ctx, peer), nil, &mcp.CallToolParams{Name: server + "__trigger-elicitation-request", Arguments: map[string]any{}})
			done <- err
		}()
		select {
		case <-peer.asked:
		case err := <-done:
			t.Fatalf("%s__trigger-elicitation-request returned before it asked: %v", server, err)
		}
		kill()
		close(peer.release)
		if err := <-done; !errors.Is(err, switchboard.ErrAmbiguous) {
			t.Errorf("%s: a call whose server died while it ran: %v, want ErrAmbiguous", server, err)
		}
		if n := peer.elicitations.Load(); n != 1 {
			t.Errorf("%s asked the peer %d times: the call was replayed", server, n)
		}
	}
	killed := status(everything)
	notReplayed(everything, func() { kill(t, everything, killed.PID) })

	// Each stdio server killed mid-session: the next call is served by a
	// new process. server-memory finds what it wrote before.
	for _, name := range stdioServers {
		before := killed
		if name != everything { // killed above
			before = status(name)
			kill(t, name, before.PID)
		}
		for _, c := range r.calls() {
			if strings.HasPrefix(c.tool, name+"__") && !strings.HasSuffix(c.tool, "__create_entities") {
				call(c)
			}
		}
		if after := status(name); after.PID == before.PID || after.Reconnects == 0 {
			t.Errorf("%s after a kill: PID %d (was %d), %d reconnects", name, after.PID, before.PID, after.Reconnects)
		}
	}

	// The HTTP server killed, mid-call, and started again on its port,
	// with calls made during the outage: each waits for the next attempt
	// to connect, and either succeeds or fails naming the server and why;
	// the calls after the restart succeed, on a new session.
	notReplayed(remote, r.killHTTP)
	outage := make(chan error, 3)
	for i := range cap(outage) {
		go func() {
			res, err := m.CallTool(ctx, nil, &mcp.CallToolParams{Name: remote + "__get-sum", Arguments: map[string]any{"a": i, "b": 100}})
			if err == nil && !strings.Contains(mcptest.Text(res), fmt.Sprint(100+i)) {
				err = fmt.Errorf("result %q", mcptest.Text(res))
			}
			outage <- err
		}()
	}
	waitFor(ctx, t, m, "the HTTP server seen down", func() bool { return status(remote).State != switchboard.StateConnected }, nil)
	r.startHTTP(t)
	for range cap(outage) {
		var unavailable *switchboard.UnavailableError
		if err := <-outage; err != nil && (!errors.As(err, &unavailable) || !strings.Contains(err.Error(), `server "remote"`)) {
			t.Errorf("a call during the HTTP server's outage: %v; want success, or the server named as unavailable", err)
		}
	}
	call(r.calls()[1])
	if s := status(remote); s.State != switchboard.StateConnected || s.Reconnects == 0 {
		t.Errorf("the HTTP server after its restart: %s, %d reconnects", s.State, s.Reconnects)
	}
}

// waitFor calls start, if any, then waits until cond holds, checking it
// after each of the manager's events, and fails the test if ctx ends
// first.
func waitFor(ctx context.Context, t *testing.T, m *switchboard.Manager, what string, cond func() bool, start func()) {
	t.Helper()
	changed := make(chan struct{}, 1)
	unsubscribe := m.Subscribe(func(switchboard.Event) {
		select {
		case changed <- struct{}{}:
		default:
		}
	})
	defer unsubscribe()
	if start != nil {
		start()
	}
	for !cond() {
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", what, ctx.Err())
		}
	}
}

// holdingPeer is a caller's client that holds a server's elicitation
// until released, then declines it.
type holdingPeer struct {
	asked, release chan struct{}
	elicitations   atomic.Int32
}

func newHoldingPeer() *holdingPeer {
	return &holdingPeer{asked: make(chan struct{}), release: make(chan struct{})}
}

func (p *holdingPeer) Session() any          { return p }
func (p *holdingPeer) Done() <-chan struct{} { return nil }

func (p *holdingPeer) Elicit(ctx context.Context, _ *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	if p.elicitations.Add(1) == 1 {
		close(p.asked)
	}
	select {
	case <-p.release:
	case <-ctx.Done():
	}
	return &mcp.ElicitResult{Action: "decline"}, nil
}

var errNotOffered = errors.New("not offered by this client")

func (p *holdingPeer) CreateMessage(context.Context, *mcp.CreateMessageWithToolsParams) (*mcp.CreateMessageWithToolsResult, error) {
	return nil, errNotOffered
}
func (p *holdingPeer) NotifyElicitationComplete(context.Context, *mcp.ElicitationCompleteParams) error {
	return nil
}
func (p *holdingPeer) Log(context.Context, *mcp.LoggingMessageParams) error { return nil }
func (p *holdingPeer) NotifyProgress(context.Context, *mcp.ProgressNotificationParams) error {
	return nil
}
func (p *holdingPeer) ListRoots(context.Context, *mcp.ListRootsParams) (*mcp.ListRootsResult, error) {
	return nil, errNotOffered
}

// gatewayStatus returns what the gateway's /status says of each server.
func gatewayStatus(t *testing.T, mcpURL string) map[string]gateway.StatusRow {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, strings.TrimSuffix(mcpURL, "/mcp")+"/status", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var report gateway.StatusReport
	if err := json.NewDecoder(resp.Body).Decode(&report); err != nil {
		t.Fatalf("/status: %v", err)
	}
	rows := make(map[string]gateway.StatusRow)
	for _, s := range report.Servers {
		rows[s.Name] = s
	}
	return rows
}

// TestRealServersThroughTheGateway: switchboard serve puts the same real
// servers behind one endpoint for a go-sdk client: every tool under its
// prefix, calls of each server, prompts and resources; progress with the
// client's token and a server's log message reach the client; each stdio
// server, found by the PID on /status and killed mid-session, and the HTTP
// one, killed and started again on its port with calls during the outage,
// recover; a call that may have run when its server died is not replayed.
func TestRealServersThroughTheGateway(t *testing.T) {
	p := findPeers(t)
	r := startRealServers(t, p)
	gw := p.startGateway(t, r.config, everything, remote, memory, files, thinking)
	url := gw.url
	ctx, cancel := context.WithTimeout(context.Background(), peerTimeout)
	defer cancel()

	var hold atomic.Pointer[holdingPeer] // holds a server's elicitation, as in the library's test
	hold.Store(newHoldingPeer())
	progress := make(chan *mcp.ProgressNotificationParams, 16)
	logs := make(chan *mcp.LoggingMessageParams, 16)
	toolsChanged := make(chan struct{}, 1)
	client := mcp.NewClient(&mcp.Implementation{Name: "interop", Version: "test"}, &mcp.ClientOptions{
		ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return hold.Load().Elicit(ctx, req.Params)
		},
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			progress <- req.Params
		},
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			select {
			case logs <- req.Params:
			default:
			}
		},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case toolsChanged <- struct{}{}:
			default:
			}
		},
	})
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	// Every tool, server-everything's conditional ones once the gateway has
	// handled its list_changed (and told us).
	var names []string
	for {
		if names, err = mcptest.ToolNames(ctx, cs); err != nil {
			t.Fatal(err)
		}
		if slices.Contains(names, everything+"__trigger-elicitation-request") {
			break
		}
		select {
		case <-toolsChanged:
		case <-ctx.Done():
			t.Fatalf("server-everything's conditional tools never listed: %v", names)
		}
	}
	counted := map[string]int{}
	for name, row := range gatewayStatus(t, url) {
		counted[name] = row.Tools
	}
	wantTools(t, names, counted)

	call := func(c aCall) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: c.tool, Arguments: c.args})
		c.check(t, res, err)
	}
	for _, c := range r.calls() {
		call(c)
	}

	prompts, err := cs.ListPrompts(ctx, nil)
	if err != nil || !slices.ContainsFunc(prompts.Prompts, func(p *mcp.Prompt) bool { return p.Name == everything+"__simple-prompt" }) {
		t.Errorf("prompts/list: %v, without %s__simple-prompt", err, everything)
	}
	if res, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: everything + "__simple-prompt"}); err != nil || len(res.Messages) == 0 {
		t.Errorf("prompts/get %s__simple-prompt: %v", everything, err)
	}
	resources, err := cs.ListResources(ctx, nil)
	if err != nil || len(resources.Resources) == 0 {
		t.Fatalf("resources/list: %v", err)
	}
	if res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: resources.Resources[0].URI}); err != nil || len(res.Contents) == 0 {
		t.Errorf("resources/read %s: %v", resources.Resources[0].URI, err)
	}

	// Progress, with the client's own token, from both faces of
	// server-everything.
	for _, server := range []string{everything, remote} {
		token := "progress-of-" + server
		params := &mcp.CallToolParams{Name: server + "__trigger-long-running-operation", Arguments: map[string]any{"duration": 1, "steps": 2}}
		params.SetProgressToken(token)
		if _, err := cs.CallTool(ctx, params); err != nil {
			t.Fatalf("%s: %v", params.Name, err)
		}
		// The go-sdk client hands the result over before its handlers have
		// run for what came before it: wait for them.
		for n := 0; n < 2; {
			select {
			case pr := <-progress:
				if pr.ProgressToken != token {
					t.Fatalf("%s: progress with the token %v, want %q", params.Name, pr.ProgressToken, token)
				}
				n++
			case <-ctx.Done():
				t.Fatalf("%s: %d progress notifications with the token %q, want 2", params.Name, n, token)
			}
		}
	}

	// A log message that the server sends while it serves the call reaches
	// the client that made it.
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}
	for len(logs) > 0 {
		<-logs // none is expected before the toggle; what came is not its
	}
	call(aCall{everything + "__toggle-simulated-logging", map[string]any{}, "Started simulated"})
	select {
	case msg := <-logs:
		// "Debug-level message", ..., "Alert level-message" (sic).
		if data := fmt.Sprint(msg.Data); !strings.Contains(data, "level") || !strings.Contains(data, "message") {
			t.Errorf("log message %+v, want server-everything's simulated one", msg)
		}
	case <-ctx.Done():
		t.Error("no log message from toggle-simulated-logging")
	}
	call(aCall{everything + "__toggle-simulated-logging", map[string]any{}, "Stopped simulated"})

	// A call that may have run when its server died is not replayed: the
	// server's elicitation reaches the client once, the server is killed
	// while the client is asked, and the call fails saying it may have run.
	notReplayed := func(server string, kill func()) {
		t.Helper()
		h := newHoldingPeer()
		hold.Store(h)
		type outcome struct {
			res *mcp.CallToolResult
			err error
		}
		done := make(chan outcome, 1)
		go func() {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: server + "__trigger-elicitation-request", Arguments: map[string]any{}})
			done <- outcome{res, err}
		}()
		select {
		case <-h.asked:
		case o := <-done:
			t.Fatalf("%s__trigger-elicitation-request returned before it asked: %v, %v", server, o.res, o.err)
		}
		kill()
		close(h.release)
		o := <-done
		said := fmt.Sprint(o.err)
		if o.res != nil {
			said += mcptest.Text(o.res)
		}
		if o.err == nil && !o.res.IsError || !strings.Contains(said, "may have run") {
			t.Errorf("%s: a call whose server died while it ran: %q; want an error that says it may have run", server, said)
		}
		if n := h.elicitations.Load(); n != 1 {
			t.Errorf("%s asked the client %d times: the call was replayed", server, n)
		}
	}
	before := gatewayStatus(t, url)
	notReplayed(everything, func() { kill(t, everything, before[everything].PID) })

	// Each stdio server killed mid-session: the next call is served by a
	// new process, which /status shows.
	for _, name := range stdioServers {
		if name != everything { // killed above
			kill(t, name, before[name].PID)
		}
		for _, c := range r.calls() {
			if strings.HasPrefix(c.tool, name+"__") && !strings.HasSuffix(c.tool, "__create_entities") {
				call(c)
			}
		}
		if after := gatewayStatus(t, url)[name]; after.PID == before[name].PID || after.PID == 0 || after.Reconnects == 0 {
			t.Errorf("%s after a kill: %+v (was %+v)", name, after, before[name])
		}
	}

	// The HTTP server killed, mid-call, and started again on its port,
	// calls made during the outage: each succeeds, or fails naming the
	// server; the calls after the restart succeed.
	mark := gw.log.mark()
	notReplayed(remote, r.killHTTP)
	outage := make(chan string, 3)
	for i := range cap(outage) {
		go func() {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: remote + "__get-sum", Arguments: map[string]any{"a": i, "b": 100}})
			switch {
			case err != nil:
				outage <- err.Error()
			case res.IsError && !strings.Contains(mcptest.Text(res), `server "remote"`):
				outage <- mcptest.Text(res)
			case !res.IsError && !strings.Contains(mcptest.Text(res), fmt.Sprint(100+i)):
				outage <- mcptest.Text(res)
			default:
				outage <- ""
			}
		}()
	}
	if !gw.log.awaitFrom(ctx, mark, func(line string) bool { return stateLine(line, remote, "server down; reconnecting") }) {
		t.Fatalf("the HTTP server never seen down:\n%s", gw.log)
	}
	r.startHTTP(t)
	for range cap(outage) {
		if bad := <-outage; bad != "" {
			t.Errorf("a call during the HTTP server's outage: %s; want success, or the server named", bad)
		}
	}
	call(r.calls()[1])
	if s := gatewayStatus(t, url)[remote]; s.State != "connected" || s.Reconnects == 0 {
		t.Errorf("the HTTP server after its restart: %+v", s)
	}
}
