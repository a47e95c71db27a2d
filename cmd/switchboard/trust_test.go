package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// TestUntrustedProjectFile: a cloned repository's .mcp.json runs nothing
// and sends nothing until the user trusts it, and again once it changes:
// neither its command runs nor its URL is asked, with its ${SECRET}.
func TestUntrustedProjectFile(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the server is a POSIX shell command")
	}
	isolate(t)
	t.Setenv("SECRET", "s3cret-value")
	var mu sync.Mutex
	var seen []string // the X-Secret header of each request
	listener := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("X-Secret"))
		mu.Unlock()
		http.Error(w, "no", http.StatusTeapot)
	}))
	defer listener.Close()
	requests := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(t.TempDir(), "MARKER")
	project := filepath.Join(dir, config.ProjectFile)
	writeProject := func(extra string) {
		t.Helper()
		b, err := json.Marshal(map[string]any{"mcpServers": map[string]any{
			"run":  map[string]any{"command": "sh", "args": []string{"-c", "touch " + marker}},
			"send": map[string]any{"type": "http", "url": listener.URL + "/mcp", "headers": map[string]string{"X-Secret": "${SECRET}"}},
		}})
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(project, append(b, extra...), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ignored := func(why string) {
		t.Helper()
		for _, verb := range [][]string{{"status"}, {"tools", "--timeout", "1s"}, {"check", "--timeout", "1s"}, {"call", "run__x", "--timeout", "1s"}} {
			_, stderr, code := cli(t, verb...)
			if verb[0] == "check" && (code != 1 || !strings.Contains(stderr, "switchboard: no server to check: "+project+" is not trusted")) {
				t.Errorf("check of nothing but an untrusted file: exit %d, stderr:\n%s", code, stderr)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Fatalf("%s ran the command of an untrusted project file", verb[0])
			}
			if r := requests(); len(r) > 0 {
				t.Fatalf("%s sent %d requests to the URL of an untrusted project file", verb[0], len(r))
			}
			want := "switchboard: warning: " + project + ": project file " + why + "; its servers are ignored; to trust it as it is now, run: switchboard trust " + project + "\n"
			if strings.Count(stderr, "switchboard trust") != 1 || !strings.Contains(stderr, want) {
				t.Errorf("%s stderr:\n%s\nwant the one warning %q", verb[0], stderr, want)
			}
		}
	}

	writeProject("")
	ignored("not trusted")

	stdout, stderr, code := cli(t, "trust")
	if code != 0 || !strings.Contains(stdout, "trusted "+project+" as it is now") || !strings.Contains(stdout, "run: runs sh -c "+strconv.Quote("touch "+marker)+"\n") ||
		!strings.Contains(stdout, "send: connects to "+listener.URL+"/mcp, given $SECRET\n") || strings.Contains(stdout, "s3cret") {
		t.Fatalf("trust = %d, stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if _, stderr, _ := cli(t, "status", "--timeout", "3s"); strings.Contains(stderr, "trust") {
		t.Errorf("status warns of a trusted file:\n%s", stderr)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("status did not run the trusted file's command: %v", err)
	}
	if r := requests(); len(r) == 0 || r[0] != "s3cret-value" {
		t.Errorf("requests to the trusted file's URL: %q, want some with its header", r)
	}

	os.Remove(marker)
	mu.Lock()
	seen = nil
	mu.Unlock()
	writeProject("\n")
	ignored("changed since it was trusted")
}

func TestTrustRefuses(t *testing.T) {
	isolate(t)
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"mcpServers": `), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		code int
		want string
	}{
		{nil, 1, "switchboard: trust: " + filepath.Join(mustGetwd(t), ".mcp.json") + ": read: no such file or directory\n"},
		{[]string{bad}, 1, "switchboard: trust: " + bad + ":1:16: "},
		{[]string{dir}, 1, "switchboard: trust: " + dir + ": read: not a regular file (a directory); want a regular file\n"},
		{[]string{"a", "b"}, 2, "switchboard: trust: want at most one FILE, got 2 arguments\n"},
	}
	for _, tt := range tests {
		_, stderr, code := cli(t, append([]string{"trust"}, tt.args...)...)
		if code != tt.code || !strings.HasPrefix(stderr, tt.want) {
			t.Errorf("trust %q = %d, stderr %q; want %d, %q", tt.args, code, stderr, tt.code, tt.want)
		}
	}
	if _, err := os.Stat(config.DefaultTrustStore(nil).File); err == nil {
		t.Error("a refused trust wrote the trust store")
	}
}

func mustGetwd(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestTerminalEscapes: what a server says, in a tool's description or on
// stderr, reaches the terminal with its control characters escaped: it
// cannot retitle, clear or rewrite it.
func TestTerminalEscapes(t *testing.T) {
	isolate(t)
	const hostile = "\x1b]0;pwned\x07\x1b[2J\u202e"
	path := writeConfig(t, map[string]mcptest.Script{
		"desc": {Tools: []mcptest.ToolSpec{{Name: "t", Description: "evil " + hostile + " tool"}}},
		"err":  {Stderr: "oops " + hostile + "\n", ExitAfterInitialize: true},
	}, nil)
	const escaped = `\x1b]0;pwned\x07\x1b[2J\u202e`
	for _, verb := range [][]string{{"tools"}, {"status", "--timeout", "5s"}, {"check"}} {
		stdout, stderr, _ := cli(t, append(verb, "--config", path)...)
		out := stdout + stderr
		if strings.ContainsAny(out, "\x1b\x07\u202e") {
			t.Errorf("%s printed control characters raw:\n%q", verb[0], out)
		}
		if !strings.Contains(out, escaped) {
			t.Errorf("%s output does not show the escapes escaped:\n%s", verb[0], out)
		}
	}
}

// TestServeReloadsOnlyATrustedProjectFile: a running gateway that found its
// config by discovery drops the project file's servers once the file
// changes, with the warning that names the command, and takes them up
// again, with no restart, once it is trusted again.
func TestServeReloadsOnlyATrustedProjectFile(t *testing.T) {
	isolate(t)
	scripts := map[string]mcptest.Script{"alpha": {Tools: []mcptest.ToolSpec{{Name: "echo"}}}}
	project := filepath.Join(mustGetwd(t), config.ProjectFile)
	copyFile(t, writeConfig(t, scripts, nil), project)
	if _, stderr, code := cli(t, "trust"); code != 0 {
		t.Fatalf("trust = %d: %s", code, stderr)
	}
	g := startServe(t)
	g.waitLog(t, regexp.MustCompile(`msg="server connected" server=alpha`))

	scripts["beta"] = mcptest.Script{Tools: []mcptest.ToolSpec{{Name: "echo"}}}
	copyFile(t, writeConfig(t, scripts, nil), project)
	g.waitLogs(t, regexp.MustCompile(`level=WARN msg="config warning" warning=".*project file changed since it was trusted; .* run: switchboard trust `+regexp.QuoteMeta(project)),
		regexp.MustCompile(`msg="config reloaded" cause="file changed" added=\[\] removed=\[alpha\]`))

	if _, stderr, code := cli(t, "trust"); code != 0 {
		t.Fatalf("trust = %d: %s", code, stderr)
	}
	g.waitLogs(t, regexp.MustCompile(`msg="config reloaded" cause="file changed" added="\[alpha beta\]" removed=\[\]`))
}

// copyFile replaces dst with the content of src, as an editor saves.
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	replaceFile(t, dst, data)
}
