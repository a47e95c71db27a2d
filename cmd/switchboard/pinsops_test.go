package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/internal/mcptest"
	"github.com/switchboard-mcp/switchboard/internal/pins"
)

// listedTools returns the tools that a server of script lists, as a
// gateway sees them.
func listedTools(t *testing.T, script mcptest.Script) []*mcp.Tool {
	t.Helper()
	srv := mcptest.NewServer(script)
	defer srv.Close()
	tr, err := srv.ConnectInMemory(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "v"}, nil).Connect(t.Context(), tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return res.Tools
}

// pinTools pins tools of server in the pins file at path, each changed by
// edit (which may be nil), as another process (switchboard pins approve)
// does.
func pinTools(t *testing.T, path, server string, tools []*mcp.Tool, edit func(*mcp.Tool)) {
	t.Helper()
	err := pins.Update(path, func(f *pins.File) error {
		for _, tool := range tools {
			c := *tool
			if edit != nil {
				edit(&c)
			}
			if err := f.Set(server, &c, time.Now()); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// waitTools waits, one tools/list_changed at a time from changed, until
// the tools that cs lists satisfy ok, and returns them.
func waitTools(t *testing.T, cs *mcp.ClientSession, changed <-chan struct{}, what string, ok func([]string) bool) []string {
	t.Helper()
	timer := time.NewTimer(logPatience)
	defer timer.Stop()
	for {
		names := toolNames(t, cs)
		if ok(names) {
			return names
		}
		select {
		case <-changed:
		case <-timer.C:
			t.Fatalf("%s: still %v after %v", what, names, logPatience)
		}
	}
}

func has(name string) func([]string) bool {
	return func(names []string) bool { return slices.Contains(names, name) }
}

func hasNot(name string) func([]string) bool {
	return func(names []string) bool { return !slices.Contains(names, name) }
}

// withPinning writes the config at path again with a top-level "pinning".
func withPinning(t *testing.T, path string, pinning any) {
	editConfig(t, path, func(cfg map[string]any) { cfg["pinning"] = pinning })
}

// TestServeFollowsThePinsFile: under enforce, a tool whose definition
// differs from its pin is held; another process that pins the new
// definition (as switchboard pins approve does) releases it, with
// list_changed to a connected client, and no restart. A pins file that
// cannot be read is logged once, and the gateway serves on. After a config
// reload that names another pins file, in a directory that does not exist
// yet, the gateway follows that one.
func TestServeFollowsThePinsFile(t *testing.T) {
	isolate(t)
	state := t.TempDir()
	alpha := mcptest.Script{StateDir: state, Tools: []mcptest.ToolSpec{{Name: "echo", Description: "Echoes."}, {Name: "other"}}}
	path := writeConfig(t, map[string]mcptest.Script{"alpha": alpha}, nil)
	withPinning(t, path, map[string]any{"mode": "enforce", "file": "pins/pins.json"})
	pinsFile := filepath.Join(filepath.Dir(path), "pins", "pins.json")
	listed := listedTools(t, alpha)
	// alpha was pinned when echo said something else.
	pinTools(t, pinsFile, "alpha", listed, func(tool *mcp.Tool) {
		if tool.Name == "echo" {
			tool.Description = "Echoes its text."
		}
	})

	g := startServe(t, "--config", path)
	g.waitLogs(t, settledRE, regexp.MustCompile(`msg="tool pinning: a tool's definition changed since it was pinned" server=alpha tool=echo held=true fields=\[description\]`))
	changed := make(chan struct{}, 1)
	cs := connectHTTPWith(t, g.url, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
		select {
		case changed <- struct{}{}:
		default:
		}
	}})
	if names := toolNames(t, cs); slices.Contains(names, "alpha__echo") || !slices.Contains(names, "alpha__other") {
		t.Fatalf("tools with echo held: %v", names)
	}
	// /status, /metrics and switchboard status --gateway show it held.
	var report struct {
		Servers []struct {
			Name       string
			Pinning    string
			Held       int
			PinChanges []struct{ Name, State, Approve string } `json:"pin_changes"`
		}
		Pins struct{ File, Error string }
	}
	if err := json.Unmarshal([]byte(fetch(t, g.url+"/status", "application/json")), &report); err != nil {
		t.Fatal(err)
	}
	if s := report.Servers; len(s) != 1 || s[0].Pinning != "enforce" || s[0].Held != 1 || len(s[0].PinChanges) != 1 ||
		s[0].PinChanges[0].Name != "alpha__echo" || s[0].PinChanges[0].State != "changed" || !strings.HasPrefix(s[0].PinChanges[0].Approve, "switchboard pins approve ") ||
		report.Pins.File != pinsFile || report.Pins.Error != "" {
		t.Errorf("/status with echo held: %+v", report)
	}
	if text := fetch(t, g.url+"/metrics", ""); !strings.Contains(text, `switchboard_tools_held{server="alpha"} 1`) ||
		!strings.Contains(text, `switchboard_tools_unpinned{server="alpha"} 1`) {
		t.Errorf("/metrics with echo held:\n%s", grepLines(text, "switchboard_tools"))
	}
	if out, _, _ := cli(t, "status", "--gateway", g.url); !strings.Contains(out, "alpha: 1 tool held until a person approves it (--json gives the commands): alpha__echo") {
		t.Errorf("status --gateway with echo held:\n%s", out)
	}

	// Approved by another process: released, with no restart.
	pinTools(t, pinsFile, "alpha", listed[:1], nil)
	waitTools(t, cs, changed, "echo released by its approval", has("alpha__echo"))
	if res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "alpha__echo", Arguments: map[string]any{"text": "hi"}}); err != nil || res.IsError {
		t.Errorf("a call of the released tool: %v %v", res, err)
	}

	// A pins file that cannot be read: one log line, and the gateway
	// serves on, with alpha's tools held (enforce).
	if err := os.WriteFile(pinsFile, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	g.waitLog(t, regexp.MustCompile(`msg="tool pinning: the pins file cannot be read`))
	waitTools(t, cs, changed, "echo held while the pins file cannot be read", hasNot("alpha__echo"))
	if out, _, _ := cli(t, "status", "--gateway", g.url); !strings.Contains(out, "the pins file cannot be read (the tools of servers under enforce are held): ") ||
		!strings.Contains(out, pinsFile) {
		t.Errorf("status --gateway with an unreadable pins file:\n%s", out)
	}
	if err := g.cmd.Process.Signal(syscall.SIGHUP); err != nil { // reads it again
		t.Fatal(err)
	}
	g.waitLog(t, regexp.MustCompile(`msg="config reloaded" cause=SIGHUP`))

	// Another pins file, in a directory made later: followed.
	withPinning(t, path, map[string]any{"mode": "enforce", "file": "later/pins.json"})
	later := filepath.Join(filepath.Dir(path), "later", "pins.json")
	g.waitLogs(t, regexp.MustCompile(`msg="config reloaded" cause="file changed"`),
		regexp.MustCompile(`msg="tool pinning: tools pinned on first use" server=alpha tools=2 file=`+regexp.QuoteMeta(later)))
	waitTools(t, cs, changed, "echo pinned on first use in the new pins file", has("alpha__echo"))
	pinTools(t, later, "alpha", listed[:1], func(tool *mcp.Tool) { tool.Description = "Something else." })
	waitTools(t, cs, changed, "echo held after its pin changed in the new pins file", hasNot("alpha__echo"))
	cs.Close()
	if err := g.stop(t, syscall.SIGTERM); err != nil {
		t.Errorf("exit after SIGTERM: %v\n%s", err, g.log.String())
	}
	if n := strings.Count(g.log.String(), "the pins file cannot be read"); n != 1 {
		t.Errorf("the unreadable pins file was logged %d times, want once:\n%s", n, g.log.String())
	}
	assertNoSurvivors(t, state)
}

// TestStatusShowsHeldTools: switchboard status, under enforce, says which
// tools are held, and under warn which are not as pinned; --json gives
// each server's pinning, its held tools and the commands that approve them.
func TestStatusShowsHeldTools(t *testing.T) {
	isolate(t)
	spec := mcptest.Script{Tools: []mcptest.ToolSpec{{Name: "echo", Description: "Echoes."}, {Name: "other"}}}
	path := writeConfig(t, map[string]mcptest.Script{"alpha": spec, "beta": spec}, nil)
	editConfig(t, path, func(cfg map[string]any) {
		cfg["mcpServers"].(map[string]any)["beta"].(map[string]any)["pinning"] = "warn"
		cfg["pinning"] = map[string]any{"mode": "enforce", "file": "pins.json"}
	})
	pinsFile := filepath.Join(filepath.Dir(path), "pins.json")
	listed := listedTools(t, spec)
	for _, server := range []string{"alpha", "beta"} {
		pinTools(t, pinsFile, server, listed, func(tool *mcp.Tool) {
			if tool.Name == "echo" {
				tool.Description = "Echoes its text."
			}
		})
	}

	out, stderr, code := cli(t, "status", "--config", path)
	if code != 0 {
		t.Fatalf("status: exit %d\n%s", code, stderr)
	}
	for _, want := range []string{
		"alpha: 1 tool held until a person approves it (--json gives the commands): alpha__echo",
		"beta: 1 tool not as pinned, not held (warn): beta__echo",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	out, stderr, code = cli(t, "status", "--config", path, "--json")
	if code != 0 {
		t.Fatalf("status --json: exit %d\n%s", code, stderr)
	}
	var servers []struct {
		Name       string
		Pinning    string
		Held       []string
		PinChanges []struct {
			Name, State, Approve string
			Held                 bool
			Fields               []string
		}
		PinsError string
	}
	if err := json.Unmarshal([]byte(out), &servers); err != nil || len(servers) != 2 {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	alpha, beta := servers[0], servers[1]
	if alpha.Pinning != "enforce" || !slices.Equal(alpha.Held, []string{"alpha__echo"}) || len(alpha.PinChanges) != 1 ||
		!alpha.PinChanges[0].Held || !slices.Equal(alpha.PinChanges[0].Fields, []string{"description"}) ||
		!strings.Contains(alpha.PinChanges[0].Approve, "switchboard pins approve alpha/echo") {
		t.Errorf("status --json, alpha: %+v", alpha)
	}
	if beta.Pinning != "warn" || len(beta.Held) != 0 || len(beta.PinChanges) != 1 || beta.PinChanges[0].Held {
		t.Errorf("status --json, beta: %+v", beta)
	}

	// A pins file that cannot be read.
	if err := os.WriteFile(pinsFile, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _, _ = cli(t, "status", "--config", path)
	if !strings.Contains(out, "the pins file cannot be read (the tools of servers under enforce are held): ") || !strings.Contains(out, pinsFile) {
		t.Errorf("status with an unreadable pins file:\n%s", out)
	}
	out, _, _ = cli(t, "status", "--config", path, "--json")
	if !strings.Contains(out, `"pinsError": "`) {
		t.Errorf("status --json with an unreadable pins file:\n%s", out)
	}
}
