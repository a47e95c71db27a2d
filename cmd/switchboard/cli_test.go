package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// cli runs the command line in this process, as the binary would, and
// returns its output and exit status.
func cli(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	e := &env{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, stopSignals: func() {}, executable: binary}
	err := e.run(t.Context(), args)
	code = exitCode(err, &errb)
	return out.String(), errb.String(), code
}

// isolate points discovery, the OAuth tokens and the tool cache at empty
// directories, so that no file of the machine's user is read, and no other
// test's.
func isolate(t *testing.T) {
	t.Helper()
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv(config.ChainEnv, "") // not started by a Switchboard, whatever ran the tests
	t.Chdir(t.TempDir())
}

// writeConfig writes a config file of stdio mcptest servers plus raw
// entries, and returns its path.
func writeConfig(t *testing.T, scripts map[string]mcptest.Script, raw map[string]any) string {
	t.Helper()
	servers := map[string]any{}
	for name, s := range scripts {
		cmd, args, env := mcptest.StdioCommand(s)
		servers[name] = map[string]any{"command": cmd, "args": args, "env": env}
	}
	for name, v := range raw {
		servers[name] = v
	}
	b, err := json.MarshalIndent(map[string]any{"mcpServers": servers}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestVersion: version names what the build stamped (-X main.version,
// -X main.commit, as the release build does), and names no commit when
// none was stamped.
func TestVersion(t *testing.T) {
	for _, tc := range []struct {
		name            string
		version, commit string
		want            string
	}{
		{"unstamped", "", "", "switchboard "}, // dev, or what the go command stamped
		{"version", "1.2.3", "", "switchboard 1.2.3 (go-sdk "},
		{"version and commit", "1.2.3", "abc1234def5678abc1234def5678abc1234def56", "switchboard 1.2.3 (commit abc1234, go-sdk "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stamp(t, tc.version, tc.commit)
			out, _, code := cli(t, "version")
			if code != 0 || !strings.HasPrefix(out, tc.want) || !strings.HasSuffix(out, runtime.Version()+")\n") {
				t.Errorf("version = %q (exit %d), want it to start %q", out, code, tc.want)
			}
			if tc.commit == "" && strings.Contains(out, "commit") {
				t.Errorf("version = %q names a commit, but none was stamped", out)
			}
		})
	}
}

// TestBuiltFrom: a binary built from a clone by the go command, without
// the release's stamp, names the commit git gave it.
func TestBuiltFrom(t *testing.T) {
	const full = "0123456789abcdef0123456789abcdef01234567"
	vcs := func(modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: full}, {Key: "vcs.modified", Value: modified}}
	}
	for _, tc := range []struct {
		name     string
		stamped  string
		settings []debug.BuildSetting
		want     string
	}{
		{"stamped wins", "fedcba9876543210", vcs("true"), "fedcba9"},
		{"from git", "", vcs("false"), "0123456"},
		{"from git, with changes", "", vcs("true"), "0123456-dirty"},
		{"nothing known", "", nil, ""},
	} {
		if got := builtFrom(tc.stamped, tc.settings); got != tc.want {
			t.Errorf("%s: builtFrom = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// stamp sets what -ldflags -X would have, for the length of the test.
func stamp(t *testing.T, v, c string) {
	oldVersion, oldCommit := version, commit
	version, commit = v, c
	t.Cleanup(func() { version, commit = oldVersion, oldCommit })
}

func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "Usage:"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"tools", "extra"}, `unexpected argument "extra"`},
		{[]string{"tools", "--no-such-flag"}, "flag provided but not defined"},
		{[]string{"call"}, "want TOOL [JSON-ARGS]"},
		{[]string{"call", "x", "[1,2]"}, "JSON-ARGS must be a JSON object"},
		{[]string{"call", "x", "{nope"}, "JSON-ARGS must be a JSON object"},
		{[]string{"serve", "--stdio", "--listen", "127.0.0.1:0"}, "exclude each other"},
		{[]string{"serve", "--max-conns", "-1"}, "serve: --max-conns -1: must not be negative"},
		{[]string{"serve", "--tool-search", "sometimes"}, `serve: invalid value "sometimes" for flag --tool-search: want off, on, auto or auto:N`},
		{[]string{"serve", "--tool-search", "auto:-1"}, `invalid value "auto:-1" for flag --tool-search: want off, on, auto or auto:N`},
		{[]string{"tools", "--timeout", "5"}, `tools: invalid value "5" for flag --timeout: want a duration with its unit, such as 500ms, 30s or 2m`},
		{[]string{"tools", "--search", "x", "--limit", "abc"}, `tools: invalid value "abc" for flag --limit: want a whole number`},
		{[]string{"tools", "--json=maybe"}, `tools: invalid boolean value "maybe" for --json: want true or false`},
	} {
		_, stderr, code := cli(t, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want exit 2 and %q", tc.args, code, stderr, tc.want)
		}
		// A bad flag is one line, and a hint: not the usage, which would
		// bury it.
		if tc.args != nil && (strings.Contains(stderr, "Usage:") || strings.Count(stderr, "\n") > 2) {
			t.Errorf("%q: stderr %q; want one line saying what is wrong, and where to read the usage", tc.args, stderr)
		}
	}
}

func TestHelp(t *testing.T) {
	out, _, code := cli(t, "help")
	if code != 0 || !strings.Contains(out, "switchboard serve") {
		t.Errorf("help = %q (exit %d)", out, code)
	}
	if _, _, code := cli(t, "tools", "-h"); code != 0 {
		t.Errorf("tools -h: exit %d, want 0", code)
	}
}

func TestToolsOnEmbeddedDefault(t *testing.T) {
	isolate(t)
	out, stderr, code := cli(t, "tools")
	if code != 0 {
		t.Fatalf("tools: exit %d, stderr %s", code, stderr)
	}
	for _, want := range []string{"NAME", "clock__now", "clock__echo", "notes__note_add", "notes__note_list"} {
		if !strings.Contains(out, want) {
			t.Errorf("tools output lacks %q:\n%s\nstderr:\n%s", want, out, stderr)
		}
	}
	for _, filtered := range []string{"clock__note_add", "notes__now"} {
		if strings.Contains(out, filtered) {
			t.Errorf("tools output has %q, which the default config filters out:\n%s", filtered, out)
		}
	}
}

// TestToolsSearch: tools --search prints the best matches first, with
// their scores, in text and JSON; a request with no words or a limit below
// 1 is a usage error.
func TestToolsSearch(t *testing.T) {
	isolate(t)
	out, stderr, code := cli(t, "tools", "--search", "what time is it in Tokyo", "--limit", "1")
	if code != 0 {
		t.Fatalf("tools --search: exit %d, stderr %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "SCORE") || !strings.Contains(lines[1], "clock__now") {
		t.Errorf("tools --search --limit 1:\n%s", out)
	}
	out, stderr, code = cli(t, "tools", "--search", "add a note", "--json")
	var got []struct {
		Name  string
		Score float64
	}
	if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil || len(got) == 0 || got[0].Score <= 0 {
		t.Errorf("tools --search --json: exit %d, %v, %v\n%s", code, err, got, stderr)
	}
	for _, args := range [][]string{{"--search", ""}, {"--search", "  "}, {"--search", "the of and"}, {"--search", "time", "--limit", "0"}, {"--limit", "3"}} {
		if _, stderr, code := cli(t, append([]string{"tools"}, args...)...); code != 2 || !strings.Contains(stderr, "tools: ") {
			t.Errorf("tools %q: exit %d, stderr %s; want a usage error", args, code, stderr)
		}
	}
}

func TestToolsJSON(t *testing.T) {
	isolate(t)
	cfg := writeConfig(t, map[string]mcptest.Script{"m": {Tools: []mcptest.ToolSpec{{Name: "b"}, {Name: "a", Description: "first\nsecond"}}}}, nil)
	out, stderr, code := cli(t, "tools", "--config", cfg, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var got []struct{ Name, Server, Tool, Description string }
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	want := []struct{ Name, Server, Tool, Description string }{
		{"m__a", "m", "a", "first\nsecond"},
		{"m__b", "m", "b", ""},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tools --json (-want +got):\n%s", diff)
	}
}

func TestCall(t *testing.T) {
	isolate(t)
	cfg := writeConfig(t, map[string]mcptest.Script{"m": {}}, nil)
	out, stderr, code := cli(t, "call", "--config", cfg, "m__add", `{"a": 1, "b": 2}`)
	if code != 0 || out != "3\n" {
		t.Errorf("call m__add: exit %d, out %q, stderr %q", code, out, stderr)
	}
	out, stderr, code = cli(t, "call", "--config", cfg, "m__echo")
	if code != 0 || out != "{}\n" {
		t.Errorf("call m__echo without arguments: exit %d, out %q, stderr %q", code, out, stderr)
	}
	out, stderr, code = cli(t, "call", "--config", cfg, "m__fail")
	if code != 1 || out != "" || !strings.Contains(stderr, "tool fail failed") {
		t.Errorf("call m__fail: exit %d, out %q, stderr %q; want exit 1 and the error on stderr", code, out, stderr)
	}
	_, stderr, code = cli(t, "call", "--config", cfg, "m__nope")
	if code != 1 || !strings.Contains(stderr, `call tool: unknown tool "m__nope"`) {
		t.Errorf("call m__nope: exit %d, stderr %q", code, stderr)
	}
}

func TestStatusAndCheck(t *testing.T) {
	isolate(t)
	good := writeConfig(t, map[string]mcptest.Script{"ok": {}}, map[string]any{"off": map[string]any{"command": "x", "enabled": false}})
	out, stderr, code := cli(t, "check", "--config", good)
	if code != 0 || !strings.Contains(out, "ok    ok:") || !strings.Contains(out, "skip  off: disabled") {
		t.Errorf("check on a good config: exit %d, out %q, stderr %q", code, out, stderr)
	}

	bad := writeConfig(t, map[string]mcptest.Script{"ok": {}}, map[string]any{
		"ghost":  map[string]any{"command": "switchboard-no-such-command"},
		"broken": map[string]any{"type": "http"},
	})
	out, stderr, code = cli(t, "check", "--config", bad)
	if code != 1 {
		t.Errorf("check with a missing command: exit %d, want 1\n%s%s", code, out, stderr)
	}
	for _, want := range []string{`FAIL  ghost: failed: server "ghost": connect: command "switchboard-no-such-command" not found`,
		`FAIL  broken: failed: ` + bad + `: server "broken": url: required`, "ok    ok: "} {
		if !strings.Contains(out, want) {
			t.Errorf("check output lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out+stderr, `server "broken"`); n != 1 {
		t.Errorf("check reports the rejected entry %d times, want once:\n%s%s", n, out, stderr)
	}
	if !strings.Contains(stderr, "2 of 3 enabled servers not ready") {
		t.Errorf("check does not say how many servers are not ready: %q", stderr)
	}

	out, _, code = cli(t, "status", "--config", bad, "--json", "--timeout=1m")
	if code != 0 {
		t.Fatalf("status --json: exit %d", code)
	}
	var st []struct {
		Name, State, Error string
		Tools              int
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("status --json is not JSON: %v\n%s", err, out)
	}
	states := map[string]string{}
	for _, s := range st {
		states[s.Name] = s.State
	}
	if diff := cmp.Diff(map[string]string{"ok": "connected", "ghost": "failed", "broken": "failed"}, states); diff != "" {
		t.Errorf("status --json states (-want +got):\n%s", diff)
	}
	out, _, _ = cli(t, "status", "--config", bad, "--timeout=1m")
	if !strings.Contains(out, "SERVER") || !strings.Contains(out, "ghost") {
		t.Errorf("status table:\n%s", out)
	}
}

func TestMalformedConfig(t *testing.T) {
	isolate(t)
	path := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(path, []byte("{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\",,}\n  }\n}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := cli(t, "tools", "--config", path)
	if code != 1 || !strings.Contains(stderr, path+":3:") {
		t.Errorf("malformed config: exit %d, stderr %q; want exit 1 with file:line:column", code, stderr)
	}
}

func TestMissingConfigFile(t *testing.T) {
	isolate(t)
	_, stderr, code := cli(t, "status", "--config", "/nonexistent/mcp.json")
	if code != 1 || !strings.Contains(stderr, "/nonexistent/mcp.json") {
		t.Errorf("missing config: exit %d, stderr %q", code, stderr)
	}
}

func TestSecretNeverPrinted(t *testing.T) {
	isolate(t)
	const secret = "sk-test-0123456789abcdef"
	t.Setenv("SWITCHBOARD_TEST_TOKEN", secret)
	cfg := writeConfig(t, nil, map[string]any{
		"remote": map[string]any{"url": "http://127.0.0.1:1/mcp?key=${SWITCHBOARD_TEST_TOKEN}", "headers": map[string]any{"Authorization": "Bearer ${SWITCHBOARD_TEST_TOKEN}"}},
		"local":  map[string]any{"command": "switchboard-no-such-command", "args": []string{"--token", "${SWITCHBOARD_TEST_TOKEN}"}},
	})
	for _, args := range [][]string{{"check"}, {"status"}, {"status", "--json"}, {"tools"}, {"call", "--config", cfg, "remote__x"}} {
		if args[0] != "call" {
			args = append(args, "--config", cfg)
		}
		out, stderr, _ := cli(t, args...)
		if strings.Contains(out+stderr, secret) {
			t.Errorf("%v printed the secret:\n%s\n%s", args, out, stderr)
		}
	}
}

// TestCallStartsOnlyTheOwner: `call` connects only the server whose prefix
// the tool carries, so a server that hangs, or is not needed, costs
// nothing; a tool that no server's prefix fits starts none, and one whose
// entry the config rejected says why.
func TestCallStartsOnlyTheOwner(t *testing.T) {
	isolate(t)
	good, hang := t.TempDir(), t.TempDir()
	cfg := writeConfig(t, map[string]mcptest.Script{
		"good": {StateDir: good},
		"hang": {StateDir: hang, HangOnInitialize: true},
	}, map[string]any{"broken": map[string]any{"type": "http"}})
	out, stderr, code := cli(t, "call", "--config", cfg, "good__add", `{"a": 1, "b": 2}`)
	if code != 0 || out != "3\n" {
		t.Fatalf("call good__add: exit %d, out %q, stderr %q", code, out, stderr)
	}
	_, stderr, code = cli(t, "call", "--config", cfg, "broken__add")
	if code != 1 || !strings.Contains(stderr, `call tool "broken__add": failed; last error: `+cfg+`: server "broken": url: required`) {
		t.Errorf("call of a rejected server's tool: exit %d, stderr %q; want 1, the rejection when loading and in the call's error", code, stderr)
	}
	if counts, err := mcptest.ReadCounts(hang); err == nil && counts.Starts != 0 {
		t.Errorf("the hanging server was started %d times for calls to others' tools", counts.Starts)
	}
	if counts, err := mcptest.ReadCounts(good); err != nil || counts.Starts != 1 {
		t.Errorf("the owner was started %d times (%v), want once", counts.Starts, err)
	}
	// A name no server can have by its prefix: every server is asked
	// for its tools, so that the error can suggest names; the one that
	// hangs is waited for no longer than --timeout, and named.
	_, stderr, code = cli(t, "call", "--config", cfg, "nobody__add", "--timeout", "500ms")
	if code != 1 || !strings.Contains(stderr, `unknown tool`) || !strings.Contains(stderr, `"hang" is still connecting after 500ms`) {
		t.Errorf("call of a tool no server owns: exit %d, stderr %q; want 1, unknown tool, and the server still connecting", code, stderr)
	}
}

// TestToolsReportsFailedServers: `tools` prints what it has, names each
// server that is not connected once on stderr (a rejected entry too), says
// how many are not connected and how many the config rejected, and exits 1.
func TestToolsReportsFailedServers(t *testing.T) {
	isolate(t)
	cfg := writeConfig(t, map[string]mcptest.Script{"ok": {}}, map[string]any{
		"ghost":  map[string]any{"command": "switchboard-no-such-command"},
		"broken": map[string]any{"type": "http"},
		"off":    map[string]any{"command": "x", "enabled": false},
	})
	out, stderr, code := cli(t, "tools", "--config", cfg)
	if code != 1 {
		t.Errorf("tools with a failed server: exit %d, want 1", code)
	}
	if !strings.Contains(out, "ok__echo") {
		t.Errorf("tools output lacks the connected server's tools:\n%s", out)
	}
	for server, want := range map[string]int{`server "ghost"`: 1, `server "broken"`: 1, `server "off"`: 0} {
		if n := strings.Count(stderr, server); n != want {
			t.Errorf("stderr names %s %d times, want %d:\n%s", server, n, want, stderr)
		}
	}
	if !strings.Contains(stderr, "1 of 3 enabled servers not connected, 1 rejected by the config; their tools are missing") {
		t.Errorf("stderr does not say how many servers are missing:\n%s", stderr)
	}
}

// TestStatusShowsNoAddress: the status of a server that cannot be reached
// names what failed, but shows neither its URL nor its address, in the
// table and in JSON.
func TestStatusShowsNoAddress(t *testing.T) {
	isolate(t)
	cfg := writeConfig(t, nil, map[string]any{"remote": map[string]any{"url": "http://127.0.0.1:1/mcp?key=abc"}})
	for _, args := range [][]string{{"status", "--config", cfg, "--timeout=1m"}, {"status", "--json", "--config", cfg, "--timeout=1m"}} {
		out, stderr, _ := cli(t, args...)
		if !strings.Contains(out, "connection refused") {
			t.Errorf("%v does not say what failed:\n%s%s", args, out, stderr)
		}
		if strings.Contains(out, "127.0.0.1") || strings.Contains(out, "key=abc") {
			t.Errorf("%v shows the server's address:\n%s", args, out)
		}
	}
}

// TestServerThatPrintsOnStdout: a stdio server that prints a banner on
// stdout lists its tools, answers its calls, and status says what it
// skipped.
func TestServerThatPrintsOnStdout(t *testing.T) {
	isolate(t)
	cfg := writeConfig(t, map[string]mcptest.Script{"noisy": {GarbageOnStart: true, Garbage: "Server v1 listening on stdio"}}, nil)
	const warning = `level=WARN msg="skipped lines on stdout that are not JSON-RPC" server=noisy lines=1 first="Server v1 listening on stdio"`
	out, stderr, code := cli(t, "call", "--config", cfg, "noisy__add", `{"a": 1, "b": 2}`)
	if code != 0 || strings.TrimSpace(out) != "3" || !strings.Contains(stderr, warning) {
		t.Errorf("call: exit %d, out %q, stderr %q; want 3, and a warning of the skipped line", code, out, stderr)
	}
	// Once per cache entry: the next run, on the same config, warns no
	// more.
	out, stderr, code = cli(t, "call", "--config", cfg, "noisy__add", `{"a": 1, "b": 2}`)
	if code != 0 || strings.TrimSpace(out) != "3" || stderr != "" {
		t.Errorf("call again: exit %d, out %q, stderr %q; want 3, and no warning", code, out, stderr)
	}
	out, _, code = cli(t, "status", "--config", cfg, "--timeout=1m")
	if want := "\nnoisy: skipped 1 line on stdout (not JSON-RPC)\n"; code != 0 || !strings.Contains(out, "noisy   connected") || !strings.HasSuffix(out, want) {
		t.Errorf("status: exit %d, out:\n%s\nwant it connected, and ending with %q", code, out, want)
	}
	out, _, _ = cli(t, "status", "--config", cfg, "--json", "--timeout=1m")
	if !strings.Contains(out, `"skippedLines": 1`) {
		t.Errorf("status --json lacks the skipped line:\n%s", out)
	}
}
