package main

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
	"github.com/switchboard-mcp/switchboard/internal/toolcache"
)

// hangingBesideHealthy writes a config of a healthy server, "good", and one
// that never answers its handshake, "hang", with no timeout of its own: a
// verb that waited for it would wait for ever.
func hangingBesideHealthy(t *testing.T) (path string, cfg *config.Config) {
	t.Helper()
	servers := map[string]any{}
	for name, script := range map[string]mcptest.Script{"good": {}, "hang": {HangOnInitialize: true}} {
		cmd, args, env := mcptest.StdioCommand(script)
		servers[name] = map[string]any{"command": cmd, "args": args, "env": env, "timeout": 0}
	}
	b, err := json.Marshal(map[string]any{"mcpServers": servers})
	if err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err = config.Load(&config.LoadOptions{Paths: []string{path}})
	if err != nil {
		t.Fatal(err)
	}
	return path, cfg
}

// warmCache writes, in the user's tool cache, tools for every server of
// cfg, as a run on a day when each answered would have left them.
func warmCache(t *testing.T, cfg *config.Config) {
	t.Helper()
	cache := toolcache.Open(toolcache.DefaultDir(), nil)
	for _, srv := range cfg.Servers {
		tools := []*mcp.Tool{{Name: "echo", Description: "Echoes its text.", InputSchema: map[string]any{"type": "object"}}}
		if err := cache.Put(srv.Name, srv.Fingerprint(), tools, time.Now(), func(s string) string { return s }); err != nil {
			t.Fatal(err)
		}
	}
}

// returns runs the command line and fails the test if it does not return
// within a minute: far longer than the startup gate and the timeouts the
// test gives, however busy the machine; a verb that waits for the hanging
// server never returns.
func returns(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	type result struct {
		stdout, stderr string
		code           int
	}
	done := make(chan result, 1)
	go func() {
		out, errs, code := cli(t, args...)
		done <- result{out, errs, code}
	}()
	select {
	case r := <-done:
		return r.stdout, r.stderr, r.code
	case <-time.After(time.Minute):
		t.Fatalf("%v did not return: it waits for the hanging server", args)
		return "", "", 0
	}
}

// TestVerbsAnswerBesideAHangingServer: with a warm cache, tools, tools
// --search and status answer from the cache once the startup gate has
// passed, marking the hanging server's tools as cached and the server as
// connecting, and call reaches the healthy server; --timeout, however
// long, does not hold them up.
func TestVerbsAnswerBesideAHangingServer(t *testing.T) {
	isolate(t)
	path, cfg := hangingBesideHealthy(t)
	warmCache(t, cfg)
	const long = "--timeout=1h"

	out, stderr, code := returns(t, "tools", "--config", path, long)
	if code != 0 || !strings.Contains(out, "good__echo") || !regexpMatch(`(?m)^hang__echo +hang \(cached\) `, out) {
		t.Errorf("tools: exit %d, stderr %q, out:\n%s\nwant both servers' tools, hang's marked cached", code, stderr, out)
	}
	out, stderr, code = returns(t, "tools", "--search", "echo the text", "--json", "--config", path, long)
	var found []struct {
		Name   string
		Cached bool
	}
	if err := json.Unmarshal([]byte(out), &found); err != nil || code != 0 {
		t.Fatalf("tools --search --json: exit %d, %v, stderr %q\n%s", code, err, stderr, out)
	}
	cached := map[string]bool{}
	for _, f := range found {
		cached[f.Name] = f.Cached
	}
	if c, ok := cached["hang__echo"]; !ok || !c {
		t.Errorf("tools --search --json: %+v; want hang__echo, cached", found)
	}
	out, stderr, code = returns(t, "status", "--config", path)
	if code != 0 || !regexpMatch(`(?m)^hang +connecting +stdio +1 \(cached\)`, out) {
		t.Errorf("status: exit %d, stderr %q, out:\n%s\nwant hang connecting, with its cached tool", code, stderr, out)
	}
	out, stderr, code = returns(t, "call", "--config", path, "good__add", `{"a": 1, "b": 2}`, long)
	if code != 0 || out != "3\n" {
		t.Errorf("call good__add: exit %d, out %q, stderr %q", code, out, stderr)
	}
}

// TestVerbsGlanceAtAServerThatFailedBefore: a server with no tools in the
// cache, which failed the last time it was started with the same config
// (the cache keeps that), is not waited for past a glance: tools and
// status answer, saying how it failed then, however long --timeout is.
func TestVerbsGlanceAtAServerThatFailedBefore(t *testing.T) {
	isolate(t)
	path, cfg := hangingBesideHealthy(t)
	cache := toolcache.Open(toolcache.DefaultDir(), nil)
	for _, srv := range cfg.Servers {
		if srv.Name == "hang" {
			if err := cache.ReportFailure(srv.Name, srv.Fingerprint(), `server "hang": connect: Error: no access token was provided`, time.Now()); err != nil {
				t.Fatal(err)
			}
		}
	}
	const long = "--timeout=1h"
	out, stderr, code := returns(t, "tools", "--config", path, long)
	if code != 1 || !strings.Contains(out, "good__echo") ||
		!strings.Contains(stderr, `server "hang": still connecting; the last time, it failed: connect: Error: no access token was provided (check waits for it)`) {
		t.Errorf("tools: exit %d, out:\n%s\nstderr:\n%s\nwant good's tools, and how hang failed last time", code, out, stderr)
	}
	out, stderr, code = returns(t, "status", "--config", path)
	if code != 0 || !regexpMatch(`(?m)^hang +connecting `, out) {
		t.Errorf("status: exit %d, stderr %q, out:\n%s", code, stderr, out)
	}
}

// TestVerbsWaitForAServerWithNothingCached: with a cold cache, tools waits
// for the servers that have nothing to show, up to --timeout, then lists
// what it has and names the one still connecting; status shows it as
// connecting; check waits for it up to --timeout and fails it; call of
// its tool says it is still connecting. The timeout is one that the
// healthy server, a child built with the race detector, meets on a busy
// machine.
func TestVerbsWaitForAServerWithNothingCached(t *testing.T) {
	isolate(t)
	path, _ := hangingBesideHealthy(t)
	const short = "--timeout=5s"

	out, stderr, code := returns(t, "tools", "--config", path, short)
	if code != 1 || !strings.Contains(out, "good__echo") || strings.Contains(out, "hang__") ||
		!strings.Contains(stderr, `server "hang": still connecting after 5s (--timeout waits longer)`) {
		t.Errorf("tools: exit %d, out:\n%s\nstderr:\n%s\nwant good's tools, and hang named as still connecting", code, out, stderr)
	}
	out, stderr, code = returns(t, "status", "--config", path, short)
	if code != 0 || !regexpMatch(`(?m)^good +connected`, out) || !regexpMatch(`(?m)^hang +connecting +stdio +0 `, out) {
		t.Errorf("status: exit %d, stderr %q, out:\n%s", code, stderr, out)
	}
	out, stderr, code = returns(t, "check", "--config", path, short)
	if code != 1 || !strings.Contains(out, "ok    good: ") || !strings.Contains(out, "FAIL  hang: still connecting after 5s") {
		t.Errorf("check: exit %d, stderr %q, out:\n%s", code, stderr, out)
	}
	_, stderr, code = returns(t, "call", "--config", path, "hang__echo", short)
	if code != 1 || !strings.Contains(stderr, `"hang" is still connecting after 5s`) {
		t.Errorf("call hang__echo: exit %d, stderr %q", code, stderr)
	}
	for _, args := range [][]string{{"tools"}, {"status"}, {"check"}, {"call", "good__add"}} {
		if _, stderr, code := cli(t, append(args, "--timeout", "0s")...); code != 2 || !strings.Contains(stderr, "--timeout is 0s") {
			t.Errorf("%s --timeout 0s: exit %d, stderr %q; want a usage error", args[0], code, stderr)
		}
	}
}

// regexpMatch reports whether out matches the regular expression re.
func regexpMatch(re, out string) bool { return regexp.MustCompile(re).MatchString(out) }

// TestStatusOfAGatewayThatHangs: status --gateway gives a gateway that
// accepts the connection and never answers no longer than --timeout.
func TestStatusOfAGatewayThatHangs(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		defer close(accepted)
		if c, err := ln.Accept(); err == nil {
			accepted <- c // held open, never answered
		}
	}()
	_, stderr, code := returns(t, "status", "--gateway", "http://"+ln.Addr().String(), "--timeout=300ms")
	if code != 1 || !strings.Contains(stderr, "deadline exceeded") {
		t.Errorf("status --gateway of a gateway that never answers: exit %d, stderr %q", code, stderr)
	}
	ln.Close()
	if c, ok := <-accepted; ok {
		c.Close()
	}
}
