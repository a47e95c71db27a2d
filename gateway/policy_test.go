package gateway

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/identity/issuertest"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// policyRules let the group eng use the server mem alone, and the group
// admin everything.
var policyRules = []config.PolicyRule{
	{Servers: []string{"mem"}, When: "'eng' in identity.groups"},
	{When: "'admin' in identity.groups"},
}

// policyGateway returns a gateway, with opts' tool search, over two
// servers, mem and ops, each with the default tools, a prompt and a
// resource, enforcing policyRules for the identities of tokens of a fake
// issuer; its ops server; and a function that connects a client with a
// token of the subject sub in group.
func policyGateway(t *testing.T, search *config.ToolSearch) (ops *mcptest.Server, connect func(sub, group string) *mcp.ClientSession) {
	t.Helper()
	return auditedPolicyGateway(t, search, nil)
}

// auditedPolicyGateway is policyGateway with the audit log log (nil: none),
// each server's config changed by mark.
func auditedPolicyGateway(t *testing.T, search *config.ToolSearch, log *AuditLog, mark ...func(*config.Server)) (ops *mcptest.Server, connect func(sub, group string) *mcp.ClientSession) {
	t.Helper()
	f := newPolicyFixture(t, search, &Options{AuditLog: log}, mark...)
	return f.ops, f.connect
}

// policyGatewayWith is policyGateway with the audit log and rate limiter
// of with.
func policyGatewayWith(t *testing.T, search *config.ToolSearch, with *Options) (ops *mcptest.Server, connect func(sub, group string) *mcp.ClientSession) {
	t.Helper()
	f := newPolicyFixture(t, search, with)
	return f.ops, f.connect
}

// A policyFixture is the gateway of policyGateway, with its ops server, a
// function that connects a client with a token of the subject sub in
// group, and its HTTP server's URL and issuer.
type policyFixture struct {
	ops     *mcptest.Server
	connect func(sub, group string) *mcp.ClientSession
	url     string
	is      *issuertest.Issuer
}

// newPolicyFixture returns the fixture of a gateway with the audit log and
// rate limiter of with (nil: neither), each server's config changed by
// mark.
func newPolicyFixture(t *testing.T, search *config.ToolSearch, with *Options, mark ...func(*config.Server)) *policyFixture {
	t.Helper()
	script := func(name string) mcptest.Script {
		return mcptest.Script{
			Prompts:   []mcptest.PromptSpec{{Name: name + "_prompt"}},
			Resources: []mcptest.ResourceSpec{{URI: name + "://doc", Name: name + " doc", Text: name}},
		}
	}
	ups := upstreams{"mem": mcptest.NewServer(script("mem")), "ops": mcptest.NewServer(script("ops"))}
	for _, s := range ups {
		t.Cleanup(func() { s.Close() })
	}
	policies, err := switchboard.NewPolicies(policyRules, nil)
	if err != nil {
		t.Fatal(err)
	}
	mopts := &switchboard.Options{Dial: ups.dial}
	mopts.Filter, mopts.PromptFilter, mopts.ResourceFilter = policies.Filters()
	opts, is, _ := oauthOptions(t)
	opts.ToolSearch = search
	if with != nil {
		opts.AuditLog, opts.RateLimiter = with.AuditLog, with.RateLimiter
	}
	opts.Policies = policies
	servers := []config.Server{entry("mem", false), entry("ops", false)}
	for i := range servers {
		for _, m := range mark {
			m(&servers[i])
		}
	}
	_, g := start(t, servers, mopts, opts)
	srv := httptest.NewServer(g.Handler())
	t.Cleanup(srv.Close)
	transport := &http.Transport{}
	t.Cleanup(transport.CloseIdleConnections)
	return &policyFixture{ops: ups["ops"], url: srv.URL, is: is, connect: func(sub, group string) *mcp.ClientSession {
		t.Helper()
		claims := is.Claims(resource, "mcp", time.Now())
		claims["sub"], claims["groups"] = sub, []string{group}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "v"}, nil).Connect(t.Context(),
			&mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp", HTTPClient: &http.Client{Transport: bearer{is.Token(t, claims), transport}}, DisableStandaloneSSE: true}, nil)
		if err != nil {
			t.Fatalf("connect as %s: %v", sub, err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}}
}

// notPermittedError checks that err is the JSON-RPC error that refuses
// what, of kind, as not permitted, and says nothing else: not the server
// ops, nor any other tool.
func notPermittedError(t *testing.T, op string, err error, kind, what string) {
	t.Helper()
	var rpcErr *jsonrpc.Error
	want := `switchboard: ` + kind + ` "` + what + `": not permitted`
	if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeInvalidParams || rpcErr.Message != want {
		t.Errorf("%s: error %v, want the JSON-RPC error %q", op, err, want)
	}
}

// TestPolicyListsPerIdentity: two identities see different lists of tools,
// prompts and resources, by the policies, each its own (cacheScope
// private).
func TestPolicyListsPerIdentity(t *testing.T) {
	_, connect := policyGateway(t, nil)
	alice, bob := connect("alice", "eng"), connect("bob", "admin")
	for _, tc := range []struct {
		cs                   *mcp.ClientSession
		who                  string
		tools, prompts, uris []string
	}{
		{alice, "alice", []string{"mem__add", "mem__big", "mem__echo", "mem__fail", "mem__increment", "mem__sleep"}, []string{"mem__mem_prompt"}, []string{"mem://doc"}},
		{bob, "bob", []string{"mem__add", "mem__big", "mem__echo", "mem__fail", "mem__increment", "mem__sleep", "ops__add", "ops__big", "ops__echo", "ops__fail", "ops__increment", "ops__sleep"},
			[]string{"mem__mem_prompt", "ops__ops_prompt"}, []string{"mem://doc", "ops://doc"}},
	} {
		res, err := tc.cs.ListTools(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		tools := namesOf(res.Tools, func(x *mcp.Tool) string { return x.Name })
		if !slices.Equal(tools, tc.tools) || res.CacheScope != "private" {
			t.Errorf("%s's tools/list = %v (cacheScope %q), want %v, private", tc.who, tools, res.CacheScope, tc.tools)
		}
		prompts, err := tc.cs.ListPrompts(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		names := namesOf(prompts.Prompts, func(x *mcp.Prompt) string { return x.Name })
		if !slices.Equal(names, tc.prompts) || prompts.CacheScope != "private" {
			t.Errorf("%s's prompts/list = %v (cacheScope %q), want %v, private", tc.who, names, prompts.CacheScope, tc.prompts)
		}
		resources, err := tc.cs.ListResources(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		uris := namesOf(resources.Resources, func(x *mcp.Resource) string { return x.URI })
		slices.Sort(uris)
		if !slices.Equal(uris, tc.uris) || resources.CacheScope != "private" {
			t.Errorf("%s's resources/list = %v (cacheScope %q), want %v, private", tc.who, uris, resources.CacheScope, tc.uris)
		}
		// What it may read is its own too.
		read, err := tc.cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "mem://doc"})
		if err != nil || read.CacheScope != "private" {
			t.Errorf("%s's resources/read of mem://doc: cacheScope %v, %v; want private", tc.who, read, err)
		}
	}
}

// TestPolicyRefusesCalls: a call, a prompt get, a resource read and a
// subscription outside the caller's rights are refused with a JSON-RPC
// error that says it is not permitted and nothing else, the same for what
// does not exist, and never reach the server; another identity's succeed.
func TestPolicyRefusesCalls(t *testing.T) {
	ops, connect := policyGateway(t, nil)
	alice, bob := connect("alice", "eng"), connect("bob", "admin")
	for _, name := range []string{"ops__echo", "ops__nope", "nope"} {
		_, err := alice.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
		notPermittedError(t, "alice calls "+name, err, "tool", name)
	}
	// Bad arguments do not have the server named either.
	_, err := alice.CallTool(t.Context(), &mcp.CallToolParams{Name: "ops__echo", Arguments: []int{1}})
	if err == nil || strings.Contains(err.Error(), `server "ops"`) {
		t.Errorf("alice calls ops__echo with bad arguments: error %v, which names its server", err)
	}
	_, err = alice.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: "ops__ops_prompt"})
	notPermittedError(t, "alice gets ops__ops_prompt", err, "prompt", "ops__ops_prompt")
	_, err = alice.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "ops://doc"})
	notPermittedError(t, "alice reads ops://doc", err, "resource", "ops://doc")
	err = alice.Subscribe(t.Context(), &mcp.SubscribeParams{URI: "ops://doc"})
	notPermittedError(t, "alice subscribes to ops://doc", err, "resource", "ops://doc")
	if c := ops.Counts(); c.ByTool["echo"] != 0 || c.Subscribes != 0 {
		t.Fatalf("refused requests reached the server: %+v", c)
	}

	if _, err := alice.CallTool(t.Context(), &mcp.CallToolParams{Name: "mem__echo", Arguments: map[string]any{}}); err != nil {
		t.Errorf("alice calls mem__echo: %v", err)
	}
	if _, err := bob.CallTool(t.Context(), &mcp.CallToolParams{Name: "ops__echo", Arguments: map[string]any{}}); err != nil {
		t.Errorf("bob calls ops__echo: %v", err)
	}
	if _, err := bob.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "ops://doc"}); err != nil {
		t.Errorf("bob reads ops://doc: %v", err)
	}
	if err := bob.Subscribe(t.Context(), &mcp.SubscribeParams{URI: "ops://doc"}); err != nil {
		t.Errorf("bob subscribes to ops://doc: %v", err)
	}
	// Held upstream for bob now: alice is still refused.
	err = alice.Subscribe(t.Context(), &mcp.SubscribeParams{URI: "ops://doc"})
	notPermittedError(t, "alice subscribes to ops://doc after bob", err, "resource", "ops://doc")
	if c := ops.Counts(); c.ByTool["echo"] != 1 || c.Subscribes != 1 {
		t.Errorf("ops ran echo %d times and took %d subscribes, want bob's alone", c.ByTool["echo"], c.Subscribes)
	}
}

// TestPolicyToolSearch: search_tools ranks only within the caller's view,
// and call_tool refuses what a direct call refuses, with the same error,
// without reaching the server.
func TestPolicyToolSearch(t *testing.T) {
	ops, connect := policyGateway(t, &config.ToolSearch{Mode: config.ToolSearchOn})
	alice, bob := connect("alice", "eng"), connect("bob", "admin")
	for _, args := range []map[string]any{{"query": "echo", "limit": 50}, {"query": "add numbers", "limit": 50}, {"query": "*", "server": "mem"}} {
		for _, found := range foundNames(search(t, alice, args)) {
			if !strings.HasPrefix(found, "mem__") {
				t.Errorf("alice's search_tools %v found %s", args, found)
			}
		}
	}
	res := call(t, alice, searchToolsName, map[string]any{"query": "*", "server": "ops"})
	if !res.IsError {
		t.Errorf("alice's search_tools of the server ops = %q, want an error", mcptest.Text(res))
	}
	if found := foundNames(search(t, bob, map[string]any{"query": "echo", "limit": 50})); !slices.Contains(found, "ops__echo") {
		t.Errorf("bob's search_tools found %v, want ops__echo among them", found)
	}
	_, direct := alice.CallTool(t.Context(), &mcp.CallToolParams{Name: "ops__echo", Arguments: map[string]any{}})
	notPermittedError(t, "alice calls ops__echo", direct, "tool", "ops__echo")
	_, viaSearch := alice.CallTool(t.Context(), &mcp.CallToolParams{Name: callToolName, Arguments: map[string]any{"name": "ops__echo", "arguments": map[string]any{}}})
	notPermittedError(t, "alice's call_tool of ops__echo", viaSearch, "tool", "ops__echo")
	if n := ops.Counts().ByTool["echo"]; n != 0 {
		t.Errorf("ops ran echo %d times for alice", n)
	}
	// search_tools' description names the servers each may search.
	for _, tc := range []struct {
		cs        *mcp.ClientSession
		want, not []string
	}{{alice, []string{"- mem"}, []string{"ops"}}, {bob, []string{"- mem", "- ops"}, nil}} {
		res, err := tc.cs.ListTools(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(res.Tools, func(t *mcp.Tool) bool { return t.Name == searchToolsName })
		if i < 0 {
			t.Fatalf("no %s listed", searchToolsName)
		}
		desc := res.Tools[i].Description
		for _, w := range tc.want {
			if !strings.Contains(desc, w) {
				t.Errorf("search_tools' description %q does not name %q", desc, w)
			}
		}
		for _, w := range tc.not {
			if strings.Contains(desc, w) {
				t.Errorf("search_tools' description %q names %q", desc, w)
			}
		}
	}
}

// TestPolicyHidesDownServers: a call of a tool of a server that never
// connected, by a caller who does not see everything, is not permitted,
// and the error does not name the server or its state; a caller who sees
// everything is told.
func TestPolicyHidesDownServers(t *testing.T) {
	ups := upstreams{"mem": mcptest.NewServer(mcptest.Script{}), "ops": nil}
	t.Cleanup(func() { ups["mem"].Close() })
	policies, err := switchboard.NewPolicies(policyRules, nil)
	if err != nil {
		t.Fatal(err)
	}
	mopts := &switchboard.Options{Dial: ups.dial}
	mopts.Filter, mopts.PromptFilter, mopts.ResourceFilter = policies.Filters()
	opts, is, _ := oauthOptions(t)
	m := switchboard.New(&config.Config{Servers: []config.Server{entry("mem", false), entry("ops", false)}}, mopts)
	t.Cleanup(func() { m.Close() })
	_ = m.Connect(t.Context()) // ops fails
	g := New(m, opts)
	t.Cleanup(func() { g.Close() })
	srv := httptest.NewServer(g.Handler())
	t.Cleanup(srv.Close)
	transport := &http.Transport{}
	t.Cleanup(transport.CloseIdleConnections)
	for _, tc := range []struct{ sub, group string }{{"alice", "eng"}, {"bob", "admin"}} {
		claims := is.Claims(resource, "mcp", time.Now())
		claims["sub"], claims["groups"] = tc.sub, []string{tc.group}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "v"}, nil).Connect(t.Context(),
			&mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp", HTTPClient: &http.Client{Transport: bearer{is.Token(t, claims), transport}}, DisableStandaloneSSE: true}, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "ops__echo", Arguments: map[string]any{}})
		if tc.sub == "alice" {
			notPermittedError(t, "alice calls ops__echo", err, "tool", "ops__echo")
		} else if err == nil && !strings.Contains(mcptest.Text(res), `"ops"`) || err != nil && !strings.Contains(err.Error(), `"ops"`) {
			t.Errorf("bob calls ops__echo: %v, %v; want the server named", res, err)
		}
		cs.Close()
	}
}

// namesOf returns the name of each of items, in order.
func namesOf[T any](items []T, name func(T) string) []string {
	var out []string
	for _, x := range items {
		out = append(out, name(x))
	}
	return out
}

// TestStatusShowsPoliciesToAdmins: /status shows an admin the rules in
// force and each identity connected, with the servers and the number of
// tools it may use; it refuses anyone else.
func TestStatusShowsPoliciesToAdmins(t *testing.T) {
	f := newPolicyFixture(t, nil, nil)
	f.connect("alice", "eng")
	f.connect("bob", "admin")
	f.connect("bob", "admin")
	status := func(scope string) (int, StatusReport) {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, f.url+"/status", nil)
		req.Header.Set("Accept", "application/json")
		if scope == "page" {
			req.Header.Del("Accept")
			scope = "mcp admin"
		}
		req.Header.Set("Authorization", "Bearer "+f.is.Token(t, f.is.Claims(resource, scope, time.Now())))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var report StatusReport
		if req.Header.Get("Accept") == "" {
			page, _ := io.ReadAll(resp.Body)
			for _, want := range []string{`<table id="policies">`, `<tr data-subject="alice">`, "&#39;eng&#39; in identity.groups"} {
				if !strings.Contains(string(page), want) {
					t.Errorf("the /status page does not hold %s:\n%s", want, page)
				}
			}
			return resp.StatusCode, report
		}
		if resp.StatusCode == http.StatusOK {
			if err := json.NewDecoder(resp.Body).Decode(&report); err != nil {
				t.Fatal(err)
			}
		}
		return resp.StatusCode, report
	}
	if code, _ := status("mcp"); code != http.StatusForbidden {
		t.Errorf("/status for a token that is no admin's = %d, want 403", code)
	}
	if code, _ := status("page"); code != http.StatusOK {
		t.Errorf("/status page for an admin = %d, want 200", code)
	}
	code, report := status("mcp admin")
	if code != http.StatusOK || report.Policies == nil {
		t.Fatalf("/status for an admin = %d, policies %v; want 200 and the policies", code, report.Policies)
	}
	want := &PolicyReport{
		Rules: []PolicyRuleRow{
			{Effect: "allow", Servers: []string{"mem"}, When: "'eng' in identity.groups"},
			{Effect: "allow", When: "'admin' in identity.groups"},
		},
		Identities: []IdentityRow{
			{Subject: "alice", Groups: []string{"eng"}, Scopes: []string{"mcp"}, Sessions: 1, Servers: []string{"mem"}, Tools: 6},
			{Subject: "bob", Groups: []string{"admin"}, Scopes: []string{"mcp"}, Sessions: 2, Servers: []string{"mem", "ops"}, Tools: 12},
		},
	}
	if diff := cmp.Diff(want, report.Policies, cmpopts.IgnoreFields(IdentityRow{}, "Client")); diff != "" {
		t.Errorf("/status policies (-want +got):\n%s", diff)
	}
}
