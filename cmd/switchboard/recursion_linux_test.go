package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// The end-to-end tests of a config that starts Switchboard: the binary,
// started by itself, through its own config. Each Switchboard that an
// entry starts is marked with markEnv in its environment (the entry's
// env), so that a recursion can be counted, and ended, under /proc.

const markEnv = "SWITCHBOARD_TEST_MARK"

// marked returns the processes whose environment holds mark (NAME=VALUE).
func marked(mark string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		environ, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err == nil && slices.Contains(strings.Split(string(environ), "\x00"), mark) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// killMarked kills the marked processes, again until none is left: one
// may start another meanwhile.
func killMarked(mark string) {
	for range 100 {
		pids := marked(mark)
		if len(pids) == 0 {
			return
		}
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// A herd watches the marked processes until the test ends. If there are
// ever more than limit at once, it kills them and the gateway on top
// (top), and closes exceeded: the recursion the test looks for must fail
// it, not eat the machine.
type herd struct {
	mark     string
	exceeded chan struct{}

	mu   sync.Mutex
	most int
}

func watchHerd(t *testing.T, mark string, limit int, top *os.Process) *herd {
	h := &herd{mark: mark, exceeded: make(chan struct{})}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			n := len(marked(mark))
			h.mu.Lock()
			h.most = max(h.most, n)
			h.mu.Unlock()
			if n > limit {
				top.Kill()
				killMarked(mark)
				close(h.exceeded)
				return
			}
		}
	}()
	t.Cleanup(func() {
		close(stop)
		<-done
		killMarked(mark)
	})
	return h
}

// mostAtOnce returns the most marked processes seen at once.
func (h *herd) mostAtOnce() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.most
}

// gone checks that no marked process is left, once the gateway on top has
// stopped: each may be ending still, for a moment.
func (h *herd) gone(t *testing.T) {
	t.Helper()
	for _, pid := range marked(h.mark) {
		if !mcptest.WatchExit(t, pid)(5 * time.Second) {
			t.Errorf("a Switchboard started by the config survived the gateway: %d", pid)
		}
	}
}

// writeJSONFile writes v to path, as JSON.
func writeJSONFile(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// statusRows returns the gateway's /status as JSON, by server.
func statusRows(t *testing.T, url string) map[string]struct{ State, Error string } {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url+"/status", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json")
	transport := &http.Transport{}
	defer transport.CloseIdleConnections()
	resp, err := (&http.Client{Transport: transport}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var report struct {
		Servers []struct{ Name, State, Error string }
	}
	if err := json.NewDecoder(resp.Body).Decode(&report); err != nil {
		t.Fatalf("/status: %v", err)
	}
	rows := make(map[string]struct{ State, Error string })
	for _, s := range report.Servers {
		rows[s.Name] = struct{ State, Error string }{s.State, s.Error}
	}
	return rows
}

var refusedRE = regexp.MustCompile(`server is Switchboard inside itself.* server=switchboard `)

// TestConfigThatStartsSwitchboardItself: the entry "switchboard" of a
// config runs `switchboard serve --stdio --config` that same config, as a
// reused claude_desktop_config.json does. The gateway on it starts that
// Switchboard, which refuses to run; the gateway shows the entry failed,
// with the reason and the fix, in its log, /status, `status` and `check`,
// and serves the other server's tools. There is never more than one such
// Switchboard at once, and none is left after the gateway.
func TestConfigThatStartsSwitchboardItself(t *testing.T) {
	isolate(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "claude_desktop_config.json")
	cmd, args, env := mcptest.StdioCommand(mcptest.Script{})
	writeJSONFile(t, path, map[string]any{"mcpServers": map[string]any{
		"switchboard": map[string]any{"command": binary, "args": []string{"serve", "--stdio", "--config", path},
			"env": map[string]string{markEnv: dir, "GORACE": "atexit_sleep_ms=0"}},
		"ok": map[string]any{"command": cmd, "args": args, "env": env},
	}})
	g := startServe(t, "--config", path)
	h := watchHerd(t, markEnv+"="+dir, 3, g.cmd.Process)

	g.waitLogs(t, settledRE, refusedRE)
	// The reason, with the fix, and what the Switchboard inside said;
	// a table, cut, says the first.
	reason := []string{
		`server "switchboard": connect: refused to run: Switchboard would start itself again; remove this entry, or give that Switchboard a config of its own (--config)`,
		`switchboard: refusing to start: server "switchboard" (in ` + path + `) started this Switchboard, so the config starts Switchboard itself`,
		"or give Switchboard a config of its own with --config",
	}
	hasReason := func(where, text string) {
		t.Helper()
		for i, want := range reason {
			if where == "check" && i > 0 {
				break
			}
			if !strings.Contains(text, want) {
				t.Errorf("%s lacks %q:\n%s", where, want, text)
			}
		}
	}
	rows := statusRows(t, g.url)
	if rows["switchboard"].State != "failed" || rows["ok"].State != "connected" {
		t.Errorf("/status: %+v; want switchboard failed, ok connected", rows)
	}
	hasReason("/status", rows["switchboard"].Error)
	cs := connectHTTP(t, g.url)
	names := strings.Join(toolNames(t, cs), " ")
	if !strings.Contains(names, "ok__echo") || strings.Contains(names, "switchboard__") {
		t.Errorf("tools: %s; want ok's, and none of the Switchboard inside", names)
	}
	cs.Close()

	out, _, code := cli(t, "status", "--json", "--config", path, "--timeout=1m")
	var st []struct{ Name, State, Error string }
	if err := json.Unmarshal([]byte(out), &st); code != 0 || err != nil {
		t.Fatalf("status --json: exit %d, %v\n%s", code, err, out)
	}
	for _, s := range st {
		if s.Name == "switchboard" {
			if s.State != "failed" {
				t.Errorf("status --json: switchboard is %s, want failed", s.State)
			}
			hasReason("status --json", s.Error)
		}
	}
	out, _, code = cli(t, "check", "--config", path)
	if code != 1 || !strings.Contains(out, "FAIL  switchboard: failed: ") || !strings.Contains(out, "ok    ok:") {
		t.Errorf("check: exit %d\n%s", code, out)
	}
	hasReason("check", out)

	if err := g.stop(t, syscall.SIGTERM); err != nil {
		t.Errorf("exit after SIGTERM: %v\n%s", err, g.log)
	}
	if n := h.mostAtOnce(); n > 1 {
		t.Errorf("%d Switchboards ran at once on the config; want one at most, which refused", n)
	}
	h.gone(t)
}

// TestChainThroughAnotherProgram: configs start Switchboard on one
// another in a ring, each through a shell (`sh -c 'exec switchboard serve
// --stdio --config NEXT'`), so that the entries differ from one level to
// the next. Two configs are stopped when the first entry comes round
// again; a ring longer than MaxChainDepth is stopped by the depth. Each
// shell records the chain it runs with; the deepest Switchboard exits (it
// refused), none deeper starts, and none is left after the gateway.
func TestChainThroughAnotherProgram(t *testing.T) {
	for _, tc := range []struct {
		name          string
		ring, deepest int
	}{
		{"two configs that start each other", 2, 2},
		{"a ring longer than the cap", config.MaxChainDepth + 2, config.MaxChainDepth},
	} {
		t.Run(tc.name, func(t *testing.T) {
			isolate(t)
			dir := t.TempDir()
			starts := filepath.Join(dir, "starts")
			file := func(i int) string { return filepath.Join(dir, "level"+strconv.Itoa(i%tc.ring)+".json") }
			for i := range tc.ring {
				writeJSONFile(t, file(i), map[string]any{"mcpServers": map[string]any{
					"next": map[string]any{
						"command": "/bin/sh",
						"args": []string{"-c", `echo "$$ $SWITCHBOARD_CHAIN" >> "$1"; exec "$2" serve --stdio --config "$3"`,
							"sh", starts, binary, file(i + 1)},
						"env":    map[string]string{markEnv: dir, "GORACE": "atexit_sleep_ms=0"},
						"prefix": "",
					},
				}})
			}
			g := startServe(t, "--config", file(0))
			h := watchHerd(t, markEnv+"="+dir, config.MaxChainDepth+2, g.cmd.Process)

			// Each line is "PID CHAIN", one per Switchboard started.
			depths := func() (depths []int, deepest int) {
				b, _ := os.ReadFile(starts)
				for line := range strings.Lines(string(b)) {
					pid, chain, _ := strings.Cut(strings.TrimSpace(line), " ")
					d := config.ParseChain(chain).Depth()
					depths = append(depths, d)
					if d == tc.deepest {
						deepest, _ = strconv.Atoi(pid)
					}
				}
				return depths, deepest
			}
			tick := time.NewTicker(20 * time.Millisecond)
			defer tick.Stop()
			patience := time.NewTimer(logPatience)
			defer patience.Stop()
			var pid int
			for pid == 0 {
				select {
				case <-tick.C:
					_, pid = depths()
				case <-h.exceeded:
					got, _ := depths()
					t.Fatalf("more than %d Switchboards ran at once; the chains' depths: %v", config.MaxChainDepth+2, got)
				case <-patience.C:
					got, _ := depths()
					t.Fatalf("no Switchboard %d deep within %v; the chains' depths: %v\n%s", tc.deepest, logPatience, got, g.log)
				}
			}
			if !mcptest.WatchExit(t, pid)(30 * time.Second) {
				t.Errorf("the Switchboard %d deep runs; want it to refuse", tc.deepest)
			}
			got, _ := depths()
			want := make([]int, tc.deepest)
			for i := range want {
				want[i] = i + 1
			}
			if !slices.Equal(got, want) {
				t.Errorf("the chains' depths: %v, want %v", got, want)
			}

			if err := g.stop(t, syscall.SIGTERM); err != nil {
				t.Errorf("exit after SIGTERM: %v\n%s", err, g.log)
			}
			if n := h.mostAtOnce(); n > tc.deepest {
				t.Errorf("%d Switchboards ran at once; want %d at most", n, tc.deepest)
			}
			h.gone(t)
		})
	}
}
