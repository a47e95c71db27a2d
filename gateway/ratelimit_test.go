package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/identity"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
	"github.com/switchboard-mcp/switchboard/internal/redistest"
)

// newRateLimiter returns a RateLimiter for limits, closed when t ends.
func newRateLimiter(t *testing.T, limits *config.GatewayLimits, o *RateLimiterOptions) *RateLimiter {
	t.Helper()
	l, err := NewRateLimiter(limits, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// connectAs connects a client to g in memory as the identity with subject
// sub, as a token would make it, on the protocol revision version ("":
// the newest).
func connectAs(t *testing.T, g *Gateway, sub string, version ...string) *mcp.ClientSession {
	t.Helper()
	var opts *mcp.ClientSessionOptions
	if len(version) > 0 {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: version[0]}
	}
	return connectIdentity(t, g, &identity.Identity{Subject: sub}, nil, opts)
}

// connectIdentity connects a client, with opts and sessOpts, to g in
// memory as id, as a token would make it.
func connectIdentity(t *testing.T, g *Gateway, id *identity.Identity, opts *mcp.ClientOptions, sessOpts *mcp.ClientSessionOptions) *mcp.ClientSession {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := g.Server().Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	g.sessions.of(ss).setIdentity(id)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v"}, opts).Connect(t.Context(), ct, sessOpts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		ss.Wait()
	})
	return cs
}

// checkRateLimited checks that err is the rate limits' JSON-RPC error, with
// message want, and returns its retryAfterMs. A want that ends with "retry
// after " is a prefix: where real time passes, the wait left is less than
// the whole.
func checkRateLimited(t *testing.T, err error, want string) int64 {
	t.Helper()
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != CodeRateLimited || rpcErr.Message != want && !(strings.HasSuffix(want, "retry after ") && strings.HasPrefix(rpcErr.Message, want)) {
		t.Fatalf("error %v; want code %d with message %q", err, CodeRateLimited, want)
	}
	var data struct {
		RetryAfterMs *int64 `json:"retryAfterMs"`
	}
	if err := json.Unmarshal(rpcErr.Data, &data); err != nil || data.RetryAfterMs == nil {
		t.Fatalf("data %s: want {\"retryAfterMs\": N}", rpcErr.Data)
	}
	return *data.RetryAfterMs
}

// TestRateLimitFlood: a flood of concurrent calls from alice gets her
// burst through and the rest refused, naming the identity limit and when
// to retry, none of them reaching the server; bob's calls, at the same
// time, all go through. After the retry-after, alice may call again.
func TestRateLimitFlood(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var limited sync.Map
		rl := newRateLimiter(t, &config.GatewayLimits{PerIdentity: &config.RateLimit{Rate: 2, Burst: 5}},
			&RateLimiterOptions{Limited: func(limit, server string) { limited.Store(limit+"/"+server, true) }})
		mem := mcptest.NewServer(mcptest.Script{})
		_, g := setup(t, upstreams{"mem": mem}, []config.Server{entry("mem", false)}, &Options{RateLimiter: rl})
		alice, bob := connectAs(t, g, "alice"), connectAs(t, g, "bob")
		call := func(cs *mcp.ClientSession) error {
			_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "mem__echo", Arguments: map[string]any{}})
			return err
		}
		var wg sync.WaitGroup
		aliceErrs := make([]error, 50)
		bobErrs := make([]error, 5)
		for i := range aliceErrs {
			wg.Go(func() { aliceErrs[i] = call(alice) })
		}
		for i := range bobErrs {
			wg.Go(func() { bobErrs[i] = call(bob) })
		}
		wg.Wait()
		ok := 0
		for _, err := range aliceErrs {
			if err == nil {
				ok++
				continue
			}
			if ms := checkRateLimited(t, err, "switchboard: rate limited: identity limit of 2 requests/s; retry after 0.5 s"); ms != 500 {
				t.Errorf("retryAfterMs = %d, want 500", ms)
			}
		}
		if ok != 5 {
			t.Errorf("%d of alice's calls went through, want her burst, 5", ok)
		}
		for i, err := range bobErrs {
			if err != nil {
				t.Errorf("bob's call %d: %v", i, err)
			}
		}
		if got := mem.Counts().Calls; got != 10 {
			t.Errorf("the server got %d calls, want 10: refused calls must not reach it", got)
		}
		if _, ok := limited.Load("identity/mem"); !ok {
			t.Error("Limited was not called with identity, mem")
		}
		mcptest.PassTime(500 * time.Millisecond)
		if err := call(alice); err != nil {
			t.Errorf("alice after the retry-after: %v", err)
		}
	})
}

// TestRateLimitPerServer: a server's limit holds across identities, and
// call_tool of tool search counts against the server of the tool it
// calls; other servers, and lists, are not limited.
func TestRateLimitPerServer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rl := newRateLimiter(t, &config.GatewayLimits{PerServer: &config.ServerLimits{
			Servers: map[string]config.RateLimit{"mem": {Rate: 1, Burst: 2}},
		}}, nil)
		ups := upstreams{"mem": mcptest.NewServer(mcptest.Script{}), "ops": mcptest.NewServer(mcptest.Script{})}
		_, g := setup(t, ups, []config.Server{entry("mem", false), entry("ops", false)},
			&Options{RateLimiter: rl, ToolSearch: &config.ToolSearch{Mode: config.ToolSearchOn}})
		alice, bob := connectAs(t, g, "alice"), connectAs(t, g, "bob")
		if _, err := alice.CallTool(t.Context(), &mcp.CallToolParams{Name: "mem__echo", Arguments: map[string]any{}}); err != nil {
			t.Fatal(err)
		}
		if res, err := bob.CallTool(t.Context(), &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": "mem__echo", "arguments": map[string]any{}}}); err != nil || res.IsError {
			t.Fatalf("call_tool: %v, %v", res, err)
		}
		_, err := bob.CallTool(t.Context(), &mcp.CallToolParams{Name: "mem__echo", Arguments: map[string]any{}})
		checkRateLimited(t, err, `switchboard: rate limited: server "mem" limit of 1 requests/s; retry after 1.0 s`)
		_, err = alice.CallTool(t.Context(), &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": "mem__echo", "arguments": map[string]any{}}})
		checkRateLimited(t, err, `switchboard: rate limited: server "mem" limit of 1 requests/s; retry after 1.0 s`)
		for range 5 {
			if _, err := alice.CallTool(t.Context(), &mcp.CallToolParams{Name: "ops__echo", Arguments: map[string]any{}}); err != nil {
				t.Fatalf("ops__echo: %v", err)
			}
			if _, err := alice.ListTools(t.Context(), nil); err != nil {
				t.Fatalf("tools/list: %v", err)
			}
		}
		if got := ups["mem"].Counts().Calls; got != 2 {
			t.Errorf("mem got %d calls, want 2", got)
		}
	})
}

// TestRateLimitAfterPolicy: a request a policy refuses takes no token;
// prompts/get, resources/read and tools/call each take one; a refused one
// is audited as denied, rate_limited.
func TestRateLimitAfterPolicy(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	log, err := OpenAuditLog(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	rl := newRateLimiter(t, &config.GatewayLimits{PerIdentity: &config.RateLimit{Rate: 0.001, Burst: 2}}, nil)
	_, connect := policyGatewayWith(t, nil, &Options{AuditLog: log, RateLimiter: rl})
	alice := connect("alice", "eng")
	for range 5 {
		if _, err := alice.CallTool(t.Context(), &mcp.CallToolParams{Name: "ops__echo", Arguments: map[string]any{}}); err == nil {
			t.Fatal("ops__echo: no error")
		}
	}
	if _, err := alice.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: "mem__mem_prompt"}); err != nil {
		t.Fatalf("prompts/get: %v", err)
	}
	if _, err := alice.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "mem://doc"}); err != nil {
		t.Fatalf("resources/read: %v", err)
	}
	_, err = alice.CallTool(t.Context(), &mcp.CallToolParams{Name: "mem__echo", Arguments: map[string]any{}})
	checkRateLimited(t, err, "switchboard: rate limited: identity limit of 0.001 requests/s; retry after 1000.0 s")
	_, err = alice.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: "mem__mem_prompt"})
	checkRateLimited(t, err, "switchboard: rate limited: identity limit of 0.001 requests/s; retry after 1000.0 s")
	bob := connect("bob", "eng")
	if _, err := bob.CallTool(t.Context(), &mcp.CallToolParams{Name: "mem__echo", Arguments: map[string]any{}}); err != nil {
		t.Fatalf("bob: %v", err)
	}
	alice.Close()
	bob.Close()
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var limited []string
	for line := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n") {
		var e map[string]any
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatal(err)
		}
		if e["errorClass"] == "rate_limited" {
			if e["outcome"] != "denied" || e["subject"] != "alice" || e["server"] != "mem" {
				t.Errorf("line %s: want outcome denied, subject alice, server mem", line)
			}
			limited = append(limited, e["method"].(string))
		}
	}
	if got := strings.Join(limited, " "); got != "tools/call prompts/get" {
		t.Errorf("rate_limited lines for %q, want tools/call prompts/get:\n%s", got, b)
	}
}

// TestRateLimitCountsSubscribeAndComplete: resources/subscribe and
// completion/complete take a token; lists and unsubscribing do not. (On
// the legacy protocol: subscriptions/listen answers later.)
func TestRateLimitCountsSubscribeAndComplete(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rl := newRateLimiter(t, &config.GatewayLimits{PerIdentity: &config.RateLimit{Rate: 0.001, Burst: 2}}, nil)
		mem := mcptest.NewServer(mcptest.Script{
			Prompts:   []mcptest.PromptSpec{{Name: "p"}},
			Resources: []mcptest.ResourceSpec{{URI: "mem://doc", Name: "doc", Text: "x"}},
		})
		_, g := setup(t, upstreams{"mem": mem}, []config.Server{entry("mem", false)}, &Options{RateLimiter: rl})
		alice := connectAs(t, g, "alice", legacy)
		if err := alice.Subscribe(t.Context(), &mcp.SubscribeParams{URI: "mem://doc"}); err != nil {
			t.Fatalf("subscribe: %v", err)
		}
		if err := alice.Unsubscribe(t.Context(), &mcp.UnsubscribeParams{URI: "mem://doc"}); err != nil {
			t.Fatalf("unsubscribe: %v", err)
		}
		complete := &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "mem__p"}, Argument: mcp.CompleteParamsArgument{Name: "a", Value: "b"}}
		if _, err := alice.Complete(t.Context(), complete); err != nil {
			t.Fatalf("complete: %v", err)
		}
		for range 3 {
			if _, err := alice.ListPrompts(t.Context(), nil); err != nil {
				t.Fatalf("prompts/list: %v", err)
			}
		}
		const want = "switchboard: rate limited: identity limit of 0.001 requests/s; retry after 1000.0 s"
		_, err := alice.Complete(t.Context(), complete)
		checkRateLimited(t, err, want)
		checkRateLimited(t, alice.Subscribe(t.Context(), &mcp.SubscribeParams{URI: "mem://doc"}), want)
		if subs := mem.Subscriptions(); len(subs) != 0 {
			t.Errorf("the server holds subscriptions %v after a refused subscribe", subs)
		}
	})
}

// TestRateLimitReplicasShareRedis: two gateways (replicas) whose limits
// share a Redis limit an identity as one; with Redis killed, each limits
// it by itself (an identity's burst still holds on each), logged; with
// Redis back, they share the limits again.
func TestRateLimitReplicasShareRedis(t *testing.T) {
	r := redistest.Start(t)
	logs := &syncBuffer{}
	limits := &config.GatewayLimits{PerIdentity: &config.RateLimit{Rate: 0.001, Burst: 2}, Redis: &config.LimitsRedis{URL: r.URL()}}
	replica := func() *mcp.ClientSession {
		rl := newRateLimiter(t, limits, &RateLimiterOptions{Logger: slog.New(slog.NewTextHandler(logs, nil)), Recheck: -1})
		_, g := setup(t, upstreams{"mem": mcptest.NewServer(mcptest.Script{})}, []config.Server{entry("mem", false)}, &Options{RateLimiter: rl})
		return connectAs(t, g, "alice")
	}
	a, b := replica(), replica()
	call := func(cs *mcp.ClientSession) error {
		_, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "mem__echo", Arguments: map[string]any{}})
		return err
	}
	const want = "switchboard: rate limited: identity limit of 0.001 requests/s; retry after " // Redis's clock runs
	if err := call(a); err != nil {
		t.Fatal(err)
	}
	if err := call(b); err != nil {
		t.Fatal(err)
	}
	checkRateLimited(t, call(a), want)
	checkRateLimited(t, call(b), want)

	r.Stop(t)
	for _, cs := range []*mcp.ClientSession{a, b, a, b} {
		if err := call(cs); err != nil {
			t.Fatalf("with Redis down, within the replica's own burst: %v; want the call through", err)
		}
	}
	checkRateLimited(t, call(a), want)
	checkRateLimited(t, call(b), want)
	if !strings.Contains(logs.String(), "local fallback") {
		t.Errorf("no log of the failure:\n%s", logs)
	}
	r.Restart(t) // empty: alice has her burst again, across both
	if err := call(a); err != nil {
		t.Fatal(err)
	}
	if err := call(b); err != nil {
		t.Fatal(err)
	}
	checkRateLimited(t, call(b), want)
}

// TestRateLimitedStartsNoSessionProcess: a request the rate limits refuse
// starts no process of the caller's session for a processPerSession
// server.
func TestRateLimitedStartsNoSessionProcess(t *testing.T) {
	srv := config.Server{Name: "s", ProtocolVersion: legacy, ProcessPerSession: true}
	srv.Command, srv.Args, srv.Env = mcptest.StdioCommand(mcptest.Script{Tools: []mcptest.ToolSpec{{Name: "count", Behavior: mcptest.Increment}}})
	rl := newRateLimiter(t, &config.GatewayLimits{PerIdentity: &config.RateLimit{Rate: 0.001, Burst: 1}}, nil)
	m, g := start(t, []config.Server{srv}, &switchboard.Options{Cache: switchboard.CacheOff}, &Options{RateLimiter: rl})
	a, b := legacyClient(t, g, nil), legacyClient(t, g, nil)
	if _, err := a.CallTool(t.Context(), &mcp.CallToolParams{Name: "s__count"}); err != nil {
		t.Fatal(err)
	}
	_, err := b.CallTool(t.Context(), &mcp.CallToolParams{Name: "s__count"})
	checkRateLimited(t, err, "switchboard: rate limited: identity limit of 0.001 requests/s; retry after ") // real time passed
	if n := m.Status()[0].SessionProcesses; n != 1 {
		t.Errorf("%d processes per session, want 1: the refused request started one", n)
	}
}
