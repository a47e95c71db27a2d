package gateway

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/gctune"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// bigResult is the size of the text BenchmarkBigResult forwards.
const bigResult = 10 << 20

// BenchmarkBigResult forwards one tools/call whose result is a text of 10
// MiB, from an upstream in a child process, over stdio or Streamable HTTP,
// through a gateway served over HTTP in this process, to a client that
// counts the answer's bytes as they come and keeps none. What this process
// allocates during the call is the gateway's (and the HTTP server's that
// serves it). Each transport runs with three settings of the collector:
// gogc100 (Go's default), gogc400 (what serve set before) and tuned (what
// serve sets: see gctune). It reports, each as a multiple of the result's
// size:
//
//   - alloc-x: the bytes allocated per call (/gc/heap/allocs:bytes): every
//     copy, ours and go-sdk's, live or not;
//   - peak-x: the highest heap (/memory/classes/heap/objects:bytes, live
//     objects and garbage not yet swept) sampled every 100 µs during the
//     call, above the live heap before it (each call starts after a
//     collection);
//   - goal-x: the heap goal when the call ends (/gc/heap/goal:bytes), above
//     the live heap before it: how far the heap may grow before the next
//     collection, which the process's resident memory follows;
//   - kept-x: the live heap after the last call and two collections (the
//     second drops what sync.Pools kept), above the live heap before the
//     first: what the gateway holds on to once it has forwarded a big
//     result.
func BenchmarkBigResult(b *testing.B) {
	script := mcptest.Script{Tools: []mcptest.ToolSpec{{Name: "big", Behavior: mcptest.Big}}, ResponseBytes: bigResult}
	gcModes := []struct {
		name string
		set  func() (restore func())
	}{
		{"gogc100", func() func() { return gcPercent(100) }},
		{"gogc400", func() func() { return gcPercent(400) }},
		{"tuned", func() func() {
			restore := gcPercent(100)
			stop := gctune.Start(gctune.LiveHeap, nil)
			return func() {
				stop()
				restore()
			}
		}},
	}
	for _, kind := range []string{"stdio", "http"} {
		for _, mode := range gcModes {
			b.Run(kind+"-"+mode.name, func(b *testing.B) {
				defer mode.set()()
				benchmarkBigResult(b, kind, script)
			})
		}
	}
}

// gcPercent sets the collector's target to p until restore.
func gcPercent(p int) (restore func()) {
	old := debug.SetGCPercent(p)
	return func() { debug.SetGCPercent(old) }
}

func benchmarkBigResult(b *testing.B, kind string, script mcptest.Script) {
	srv := config.Server{Name: "up"}
	if kind == "stdio" {
		srv.Command, srv.Args, srv.Env = mcptest.StdioCommand(script)
	} else {
		p, err := mcptest.StartHTTPProcess(script)
		if err != nil {
			b.Fatal(err)
		}
		defer p.Close()
		srv.Type, srv.URL = config.HTTP, p.URL
	}
	m := switchboard.New(&config.Config{Servers: []config.Server{srv}}, &switchboard.Options{StartupGate: -1})
	defer m.Close()
	if err := m.Connect(b.Context()); err != nil {
		b.Fatal(err)
	}
	g := New(m, nil)
	defer g.Close()
	hs := httptest.NewServer(g.Handler())
	defer hs.Close()
	c, err := newCountingClient(b.Context(), hs.URL+"/mcp")
	if err != nil {
		b.Fatal(err)
	}
	defer c.close()

	runtime.GC()
	runtime.GC()
	fresh := readMetrics() // the live heap before the first call
	var alloc, peak, goal float64
	var left heapMetrics
	for b.Loop() {
		b.StopTimer()
		runtime.GC()
		before := readMetrics()
		sampler := sampleHeap()
		b.StartTimer()
		n, err := c.call(b.Context(), "up__big")
		b.StopTimer()
		highest := sampler.stop()
		after := readMetrics()
		runtime.GC()
		runtime.GC() // the second drops what sync.Pools kept
		left = readMetrics()
		b.StartTimer()
		if err != nil {
			b.Fatal(err)
		}
		if n < bigResult || n > bigResult+8 { // "type":"text","text":"xx...
			b.Fatalf("the answer held %d bytes 'x', want the text's %d and a few", n, bigResult)
		}
		alloc += float64(after.allocs - before.allocs)
		peak += float64(highest - before.heap)
		goal += float64(after.goal) - float64(before.heap)
	}
	per := float64(b.N) * bigResult
	b.ReportMetric(alloc/per, "alloc-x")
	b.ReportMetric(peak/per, "peak-x")
	b.ReportMetric(goal/per, "goal-x")
	b.ReportMetric((float64(left.heap)-float64(fresh.heap))/bigResult, "kept-x")
}

// heapMetrics are the runtime's figures that BenchmarkBigResult reports.
type heapMetrics struct {
	allocs, heap, goal uint64
}

var heapMetricNames = []string{"/gc/heap/allocs:bytes", "/memory/classes/heap/objects:bytes", "/gc/heap/goal:bytes"}

func readMetrics() heapMetrics {
	s := make([]metrics.Sample, len(heapMetricNames))
	for i, name := range heapMetricNames {
		s[i].Name = name
	}
	metrics.Read(s)
	return heapMetrics{allocs: s[0].Value.Uint64(), heap: s[1].Value.Uint64(), goal: s[2].Value.Uint64()}
}

// A heapSampler records the highest heap it sees, every 100 µs, until
// stopped.
type heapSampler struct {
	done    chan struct{}
	highest chan uint64
}

func sampleHeap() *heapSampler {
	s := &heapSampler{done: make(chan struct{}), highest: make(chan uint64)}
	go func() {
		sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		var highest uint64
		tick := time.NewTicker(100 * time.Microsecond)
		defer tick.Stop()
		for {
			metrics.Read(sample)
			highest = max(highest, sample[0].Value.Uint64())
			select {
			case <-tick.C:
			case <-s.done:
				s.highest <- highest
				return
			}
		}
	}()
	return s
}

func (s *heapSampler) stop() uint64 {
	close(s.done)
	return <-s.highest
}

// A countingClient makes its handshake with go-sdk's client, then sends
// its calls on the same session as plain HTTP requests, whose answers it
// reads as they come and keeps none of: what it allocates for a call does
// not grow with the result.
type countingClient struct {
	cs       *mcp.ClientSession
	endpoint string
	http     *http.Client
	id       int
}

func newCountingClient(ctx context.Context, endpoint string) (*countingClient, error) {
	hc := &http.Client{}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "v"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc, DisableStandaloneSSE: true}, nil)
	if err != nil {
		return nil, err
	}
	return &countingClient{cs: cs, endpoint: endpoint, http: hc}, nil
}

func (c *countingClient) close() { c.cs.Close() }

// call calls tool with no arguments and returns how many bytes of the
// answer are 'x', the text of mcptest's Big tool.
func (c *countingClient) call(ctx context.Context, tool string) (int, error) {
	c.id++
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q}}`, c.id, tool)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", c.cs.ID())
	req.Header.Set("Mcp-Protocol-Version", c.cs.InitializeResult().ProtocolVersion)
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("call %s: %s", tool, resp.Status)
	}
	var n xCounter
	_, err = io.Copy(&n, resp.Body)
	return int(n), err
}

// xCounter counts the bytes 'x' written to it.
type xCounter int

func (n *xCounter) Write(p []byte) (int, error) {
	*n += xCounter(bytes.Count(p, []byte{'x'}))
	return len(p), nil
}

// BenchmarkMethodNotFound: what methodNotFound costs a tools/call over
// Streamable HTTP (stateless, in process): "wrapped" against "direct", the
// go-sdk's handler alone, in the same run.
func BenchmarkMethodNotFound(b *testing.B) {
	ups := upstreams{"m": mcptest.NewServer(mcptest.Script{})}
	defer ups["m"].Close()
	m := switchboard.New(&config.Config{Servers: []config.Server{entry("m", false)}}, &switchboard.Options{Dial: ups.dial, StartupGate: -1, Cache: switchboard.CacheOff})
	defer m.Close()
	if err := m.Connect(b.Context()); err != nil {
		b.Fatal(err)
	}
	g := New(m, &Options{Stateless: true})
	defer g.Close()
	direct := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return g.server }, &mcp.StreamableHTTPOptions{Stateless: true})
	b.Run("direct", func(b *testing.B) { benchmarkCall(b, direct) })
	b.Run("wrapped", func(b *testing.B) { benchmarkCall(b, methodNotFound(direct)) })
}

// benchmarkCall posts tools/call to h, in process.
func benchmarkCall(b *testing.B, h http.Handler) {
	const body = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"m__echo","arguments":{"text":"hello"}}}`
	b.ReportAllocs()
	for b.Loop() {
		if rec := postMCP(b, h, "", body); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "hello") {
			b.Fatalf("tools/call: %d %s", rec.Code, rec.Body)
		}
	}
}

// postMCP posts body to h's /mcp, in process, in session ("" for none).
func postMCP(b *testing.B, h http.Handler, session, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequestWithContext(b.Context(), http.MethodPost, "/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// listTools is how many tools BenchmarkToolsList lists.
const listTools = 1000

// BenchmarkToolsList: one tools/list of 1,000 tools, read to the end of its
// pages, by a go-sdk client over in-memory transports. "bare" lists them
// from a plain go-sdk server that holds the same definitions, the baseline
// in the same run; "gateway" from the gateway over a manager with one
// in-memory upstream that exposes them; "gateway-search" from the gateway
// with tool search on, whose list is search_tools, call_tool and the tools
// the session found (it searches once, outside the timing). bench/toolslist
// compares two trees, and each tree's gateway against its bare.
func BenchmarkToolsList(b *testing.B) {
	specs := listToolSpecs(listTools)
	b.Run("bare", func(b *testing.B) {
		srv := mcp.NewServer(&mcp.Implementation{Name: "bare", Version: "v"}, nil)
		for _, s := range specs {
			srv.AddTool(&mcp.Tool{Name: s.Name, Description: s.Description, InputSchema: s.InputSchema},
				func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return &mcp.CallToolResult{}, nil
				})
		}
		benchmarkList(b, connectInMemory(b, srv, nil, nil), listTools)
	})
	b.Run("gateway", func(b *testing.B) {
		g := listGateway(b, specs, config.ToolSearch{})
		benchmarkList(b, connectInMemory(b, g.Server(), nil, nil), listTools)
	})
	b.Run("gateway-search", func(b *testing.B) {
		const found = 10
		g := listGateway(b, specs, config.ToolSearch{Mode: config.ToolSearchOn})
		cs := connectInMemory(b, g.Server(), nil, nil)
		res, err := cs.CallTool(b.Context(), &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": "create an issue", "limit": found}})
		if err != nil || res.IsError {
			b.Fatalf("search_tools: %v %q", err, mcptest.Text(res))
		}
		benchmarkList(b, cs, 2+found) // search_tools, call_tool and those found
	})
}

// listGateway returns a gateway, with tool search set to ts, over a
// manager connected to one in-memory upstream "up" that serves specs.
func listGateway(b *testing.B, specs []mcptest.ToolSpec, ts config.ToolSearch) *Gateway {
	b.Helper()
	ups := upstreams{"up": mcptest.NewServer(mcptest.Script{Tools: specs})}
	b.Cleanup(func() { ups["up"].Close() })
	m := switchboard.New(&config.Config{Servers: []config.Server{entry("up", false)}},
		&switchboard.Options{Dial: ups.dial, StartupGate: -1, Cache: switchboard.CacheOff})
	b.Cleanup(func() { m.Close() })
	if err := m.Connect(b.Context()); err != nil {
		b.Fatal(err)
	}
	g := New(m, &Options{ToolSearch: &ts})
	b.Cleanup(func() { g.Close() })
	return g
}

// benchmarkList times listAll on cs, which must list want tools.
func benchmarkList(b *testing.B, cs *mcp.ClientSession, want int) {
	if n, err := listAll(b.Context(), cs); err != nil || n != want {
		b.Fatalf("tools/list read %d tools (error %v), want %d", n, err, want)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := listAll(b.Context(), cs); err != nil {
			b.Fatal(err)
		}
	}
}

// listAll lists cs's tools, every page, and returns how many there were.
func listAll(ctx context.Context, cs *mcp.ClientSession) (int, error) {
	n := 0
	params := &mcp.ListToolsParams{}
	for {
		res, err := cs.ListTools(ctx, params)
		if err != nil {
			return n, err
		}
		n += len(res.Tools)
		if res.NextCursor == "" {
			return n, nil
		}
		params.Cursor = res.NextCursor
	}
}

// listToolSpecs returns n tool definitions as a real server's look: a
// name of a verb and a noun, a description of two sentences, and an object
// input schema of two to four described properties, some required.
func listToolSpecs(n int) []mcptest.ToolSpec {
	verbs := []string{"create", "get", "list", "update", "delete", "search", "archive", "restore", "assign", "close",
		"reopen", "merge", "export", "import", "sync", "watch", "unwatch", "lock", "unlock", "rename",
		"copy", "move", "tag", "untag", "summarize"}
	nouns := []string{"issue", "pull_request", "branch", "commit", "release", "label", "milestone", "comment", "review", "workflow",
		"job", "artifact", "secret", "variable", "environment", "deployment", "webhook", "team", "member", "project",
		"column", "card", "file", "folder", "page", "database", "record", "table", "view", "dashboard",
		"alert", "incident", "ticket", "customer", "invoice", "payment", "order", "product", "message", "channel"}
	props := []struct{ name, typ, desc string }{
		{"id", "string", "The identifier of the item, as returned by the list tool"},
		{"owner", "string", "The account or organization that owns the item"},
		{"limit", "integer", "How many items to return at most; defaults to 30"},
		{"includeArchived", "boolean", "Whether to include archived items in the result"},
	}
	specs := make([]mcptest.ToolSpec, n)
	for i := range specs {
		verb, noun := verbs[i%len(verbs)], nouns[(i/len(verbs))%len(nouns)]
		name := verb + "_" + noun
		if i >= len(verbs)*len(nouns) {
			name = fmt.Sprintf("%s_%d", name, i/(len(verbs)*len(nouns)))
		}
		properties := map[string]any{}
		for _, p := range props[:2+i%3] {
			properties[p.name] = map[string]any{"type": p.typ, "description": p.desc}
		}
		specs[i] = mcptest.ToolSpec{
			Name: name,
			Description: fmt.Sprintf("%s a %s in the workspace the server is connected to. "+
				"Returns the %s as JSON, with its URL, or an error that says why the request was refused.",
				strings.ToUpper(verb[:1])+verb[1:], strings.ReplaceAll(noun, "_", " "), strings.ReplaceAll(noun, "_", " ")),
			InputSchema: map[string]any{"type": "object", "properties": properties, "required": []any{"id", "owner"}[:1+i%2]},
		}
	}
	return specs
}

// BenchmarkAuthOverhead: what gateway.auth and gateway.policies cost a
// tools/call over Streamable HTTP (stateless, in process, so that every
// call is verified as a session's every request is): "off", neither, the
// baseline in the same run; "oauth", a JWT verified with the issuer's key
// cached; "oauth_policies", and three rules, one with a CEL condition,
// that let the caller's group use the server. cpu-ns/op is the process's
// CPU time per call (the upstream's included, alike in each).
func BenchmarkAuthOverhead(b *testing.B) {
	ups := upstreams{"m": mcptest.NewServer(mcptest.Script{})}
	defer ups["m"].Close()
	run := func(b *testing.B, opts *Options, policies []config.PolicyRule, token string) {
		mopts := &switchboard.Options{Dial: ups.dial, StartupGate: -1, Cache: switchboard.CacheOff}
		if policies != nil {
			p, err := switchboard.NewPolicies(policies, nil)
			if err != nil {
				b.Fatal(err)
			}
			mopts.Filter, mopts.PromptFilter, mopts.ResourceFilter = p.Filters()
		}
		m := switchboard.New(&config.Config{Servers: []config.Server{entry("m", false)}}, mopts)
		defer m.Close()
		if err := m.Connect(b.Context()); err != nil {
			b.Fatal(err)
		}
		g := New(m, opts)
		defer g.Close()
		h := g.Handler()
		if token != "" {
			inner := h
			h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				r.Header.Set("Authorization", "Bearer "+token)
				inner.ServeHTTP(w, r)
			})
		}
		benchmarkSessionCall(b, h)
	}
	rules := []config.PolicyRule{
		{Deny: true, Tools: []string{"*__delete*"}},
		{Servers: []string{"m"}, When: "'eng' in identity.groups && identity.subject != ''"},
		{Servers: []string{"admin*"}},
	}
	b.Run("off", func(b *testing.B) { run(b, &Options{}, nil, "") })
	for _, tc := range []struct {
		name  string
		rules []config.PolicyRule
	}{{"oauth", nil}, {"oauth_policies", rules}} {
		b.Run(tc.name, func(b *testing.B) {
			opts, is, _ := oauthOptions(b)
			claims := is.Claims(resource, "mcp", time.Now().Add(time.Hour))
			claims["groups"] = []string{"eng"}
			run(b, opts, tc.rules, is.Token(b, claims))
		})
	}
}

// benchmarkSessionCall opens a client session with h, in process, and
// posts tools/call on it.
func benchmarkSessionCall(b *testing.B, h http.Handler) {
	post := func(session, body string) *httptest.ResponseRecorder { return postMCP(b, h, session, body) }
	rec := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"v"}}}`)
	session := rec.Header().Get("Mcp-Session-Id")
	if rec.Code != http.StatusOK || session == "" {
		b.Fatalf("initialize: %d %s", rec.Code, rec.Body)
	}
	if rec := post(session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); rec.Code != http.StatusAccepted {
		b.Fatalf("notifications/initialized: %d %s", rec.Code, rec.Body)
	}
	const call = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"m__echo","arguments":{"text":"hello"}}}`
	b.ReportAllocs()
	before := processCPU()
	for b.Loop() {
		if rec := post(session, call); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "hello") {
			b.Fatalf("tools/call: %d %s", rec.Code, rec.Body)
		}
	}
	b.ReportMetric(float64(processCPU()-before)/float64(b.N), "cpu-ns/op")
}
