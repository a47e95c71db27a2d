package main

import (
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/internal/identity/issuertest"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// writePolicyConfig writes a config with the servers m and n, gateway.auth
// for the issuer is, and policies.
func writePolicyConfig(t *testing.T, is *issuertest.Issuer, policies []map[string]any) string {
	t.Helper()
	path := writeConfig(t, map[string]mcptest.Script{"m": {}, "n": {}}, nil)
	editConfig(t, path, func(cfg map[string]any) {
		cfg["gateway"] = map[string]any{
			"auth":     map[string]any{"issuer": is.URL(), "audience": oauthAudience, "scopes": []string{"mcp"}, "admin": "'admin' in identity.scopes"},
			"policies": policies,
		}
	})
	return path
}

// TestServePolicies: serve with gateway.policies shows two identities
// different tools, refuses a call outside the rights as not permitted,
// warns of nothing unenforced, and applies a reload of the rules to the
// requests that follow.
func TestServePolicies(t *testing.T) {
	isolate(t)
	is := issuertest.New(t)
	rules := []map[string]any{
		{"allow": map[string]any{"servers": []string{"m"}}, "when": "'eng' in identity.groups"},
		{"allow": map[string]any{}, "when": "'admin' in identity.groups"},
	}
	path := writePolicyConfig(t, is, rules)
	g := startServe(t, "--config", path)
	g.waitLog(t, settledRE)
	transport := &http.Transport{}
	t.Cleanup(transport.CloseIdleConnections)
	connect := func(sub, group string) *mcp.ClientSession {
		t.Helper()
		claims := is.Claims(oauthAudience, "mcp", time.Now())
		claims["sub"], claims["groups"] = sub, []string{group}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "v"}, nil).Connect(t.Context(),
			&mcp.StreamableClientTransport{Endpoint: g.url + "/mcp", HTTPClient: &http.Client{Transport: bearerTransport{is.Token(t, claims), transport}}}, nil)
		if err != nil {
			t.Fatalf("connect as %s: %v\n%s", sub, err, g.log)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	alice, bob := connect("alice", "eng"), connect("bob", "admin")
	aliceTools, bobTools := toolNames(t, alice), toolNames(t, bob)
	if !slices.Contains(aliceTools, "m__echo") || slices.ContainsFunc(aliceTools, func(n string) bool { return strings.HasPrefix(n, "n__") }) {
		t.Errorf("alice's tools = %v, want m's alone", aliceTools)
	}
	if !slices.Contains(bobTools, "m__echo") || !slices.Contains(bobTools, "n__echo") {
		t.Errorf("bob's tools = %v, want m's and n's", bobTools)
	}
	_, err := alice.CallTool(t.Context(), &mcp.CallToolParams{Name: "n__echo", Arguments: map[string]any{}})
	if err == nil || !strings.Contains(err.Error(), `switchboard: tool "n__echo": not permitted`) {
		t.Errorf("alice calls n__echo: %v, want not permitted", err)
	}
	if _, err := bob.CallTool(t.Context(), &mcp.CallToolParams{Name: "n__echo", Arguments: map[string]any{}}); err != nil {
		t.Errorf("bob calls n__echo: %v", err)
	}
	// status --gateway shows an admin the rules and who is connected.
	status := exec.Command(binary, "status", "--gateway", g.url, "--auth-token-env", "SWITCHBOARD_TEST_ADMIN")
	status.Env = append(os.Environ(), "SWITCHBOARD_TEST_ADMIN="+is.Token(t, is.Claims(oauthAudience, "mcp admin", time.Now())))
	out, err := status.CombinedOutput()
	for _, want := range []string{"RULE  EFFECT", "'eng' in identity.groups", "IDENTITY", "alice", "bob"} {
		if err != nil || !strings.Contains(string(out), want) {
			t.Errorf("status --gateway as an admin = %v:\n%s\nwant %q in it", err, out, want)
		}
	}
	if strings.Contains(g.log.String(), "not enforced") {
		t.Errorf("the log says the policies are not enforced:\n%s", g.log)
	}

	// A reload lets eng use n too, from the next request on.
	rules[0]["allow"] = map[string]any{"servers": []string{"m", "n"}}
	b, err := os.ReadFile(writePolicyConfig(t, is, rules))
	if err != nil {
		t.Fatal(err)
	}
	replaceFile(t, path, b)
	g.waitLog(t, regexp.MustCompile(`msg="gateway.policies changed: applied to every request from now on" rules=2`))
	if _, err := alice.CallTool(t.Context(), &mcp.CallToolParams{Name: "n__echo", Arguments: map[string]any{}}); err != nil {
		t.Errorf("alice calls n__echo after the reload: %v", err)
	}
}
