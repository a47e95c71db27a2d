package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// TestStatusShowsCollisions: the resource URIs that a server offers but
// another one, configured first, serves show in the status table (a few)
// and in its JSON (all), connected for the occasion or as a running gateway
// sees them; so do the tools that a server with no prefix lists in another
// server's namespace.
func TestStatusShowsCollisions(t *testing.T) {
	isolate(t)
	var shared []mcptest.ResourceSpec
	for _, uri := range []string{"mem://a", "mem://b", "mem://c", "mem://d"} {
		shared = append(shared, mcptest.ResourceSpec{URI: uri, Name: uri})
	}
	squatter, args, env := mcptest.StdioCommand(mcptest.Script{Tools: []mcptest.ToolSpec{{Name: "first__x"}, {Name: "own"}}})
	cfg := writeConfig(t, map[string]mcptest.Script{
		"first":  {Resources: shared},
		"second": {Resources: append(shared, mcptest.ResourceSpec{URI: "mem://own", Name: "own"})},
	}, map[string]any{"squatter": map[string]any{"command": squatter, "args": args, "env": env, "prefix": ""}})
	const line = "second: 4 resource URIs served by a server configured before it: mem://a, mem://b, mem://c and 1 more (--json lists them)\n" +
		"squatter: 1 name in another server's namespace, not exposed: first__x\n"
	g := startServe(t, "--config", cfg)
	g.waitLog(t, settledRE)
	cs := connectHTTP(t, g.url)
	defer cs.Close()
	if _, err := cs.ListResources(t.Context(), nil); err != nil { // the gateway settles the servers' lists first
		t.Fatal(err)
	}
	for _, where := range [][]string{{"--config", cfg}, {"--gateway", g.url}} {
		out, stderr, code := cli(t, append([]string{"status", "--timeout=1m"}, where...)...)
		if code != 0 || !strings.HasSuffix(out, line) || strings.Contains(out, "first: ") {
			t.Errorf("status %s: exit %d, stderr %q, table:\n%s\nwant it to end with:\n%s", where[0], code, stderr, out, line)
		}
		out, _, _ = cli(t, append([]string{"status", "--json", "--timeout=1m"}, where...)...)
		var servers []struct {
			Name                   string
			Collisions, Trespasses []string
		}
		if err := json.Unmarshal([]byte(jsonServers(t, out, where[0] == "--gateway")), &servers); err != nil {
			t.Fatalf("status %s --json: %v\n%s", where[0], err, out)
		}
		got := map[string][2][]string{}
		for _, s := range servers {
			got[s.Name] = [2][]string{s.Collisions, s.Trespasses}
		}
		want := map[string][2][]string{"first": {}, "second": {{"mem://a", "mem://b", "mem://c", "mem://d"}, nil}, "squatter": {nil, {"first__x"}}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("status %s --json, collisions and trespasses (-want +got):\n%s", where[0], diff)
		}
	}
}

// jsonServers returns the list of servers of status --json: all of it, or
// the "servers" of a gateway's report.
func jsonServers(t *testing.T, out string, report bool) string {
	t.Helper()
	if !report {
		return out
	}
	var r struct{ Servers json.RawMessage }
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("status --gateway --json: %v\n%s", err, out)
	}
	return string(r.Servers)
}
