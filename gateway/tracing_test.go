package gateway

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
	"github.com/switchboard-mcp/switchboard/internal/tracing"
)

const clientTraceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

// tracedGateway returns a gateway over one HTTP server, "web", whose
// manager and gateway record their spans in the returned recorder, and the
// server, whose tools/call requests' trace context is recorded in seen.
func tracedGateway(t *testing.T) (*Gateway, *tracetest.SpanRecorder, *mcptest.Server, *mcptest.TraceContexts) {
	t.Helper()
	return tracedGatewayWith(t, &Options{})
}

// tracedGatewayWith is tracedGateway with opts, whose TracerProvider it
// sets.
func tracedGatewayWith(t *testing.T, opts *Options) (*Gateway, *tracetest.SpanRecorder, *mcptest.Server, *mcptest.TraceContexts) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	opts.TracerProvider = tp
	g, srv, seen := gatewayOverHTTP(t, &switchboard.Options{TracerProvider: tp}, opts)
	return g, rec, srv, seen
}

// gatewayOverHTTP returns a gateway, with mopts and opts, over one HTTP
// server, "web", whose tools/call requests' trace context is recorded in
// seen.
func gatewayOverHTTP(t *testing.T, mopts *switchboard.Options, opts *Options) (*Gateway, *mcptest.Server, *mcptest.TraceContexts) {
	t.Helper()
	srv := mcptest.NewServer(mcptest.Script{LegacyOnly: true})
	seen := &mcptest.TraceContexts{}
	hs := httptest.NewServer(seen.Wrap(srv.Handler()))
	t.Cleanup(hs.Close)
	t.Cleanup(func() { srv.Close() })
	_, g := start(t, []config.Server{{Name: "web", URL: hs.URL}}, mopts, opts)
	return g, srv, seen
}

// A span is what a test checks of a recorded span.
type span struct {
	Name    string
	Kind    trace.SpanKind
	Status  codes.Code
	Parent  string // the parent's name, or its span id if it is remote
	Tool    string
	Server  string
	Attempt int64
	Retry   string
}

// spanTree returns the spans of rec in trace, oldest first (by start).
func spanTree(t *testing.T, rec *tracetest.SpanRecorder, traceID string) []span {
	t.Helper()
	names := make(map[trace.SpanID]string)
	var in []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.SpanContext().TraceID().String() == traceID {
			names[s.SpanContext().SpanID()] = s.Name()
			in = append(in, s)
		}
	}
	var out []span
	for _, s := range in {
		a := make(map[attribute.Key]attribute.Value)
		for _, kv := range s.Attributes() {
			a[kv.Key] = kv.Value
		}
		parent := names[s.Parent().SpanID()]
		if parent == "" {
			parent = s.Parent().SpanID().String()
		}
		out = append(out, span{s.Name(), s.SpanKind(), s.Status().Code, parent, a[tracing.ToolName].AsString(), a[tracing.Server].AsString(), a[tracing.Attempt].AsInt64(), a[tracing.Retry].AsString()})
	}
	return out
}

// TestTraceOfReplayedCall calls a tool, with the client's traceparent in
// _meta, on a server that restarted: the gateway's SERVER span of the call
// is in the client's trace, under the client's span, and has two CLIENT
// spans of attempts under it, the first failed and replayed on a new
// session, the second ok. The server receives each attempt's own trace
// context, in _meta and in the header.
func TestTraceOfReplayedCall(t *testing.T) {
	g, rec, srv, seen := tracedGateway(t)
	cs := client(t, g, nil)
	if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "web__increment"}); err != nil {
		t.Fatal(err)
	}
	srv.Restart()
	before := len(seen.Seen())
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "web__increment", Meta: mcp.Meta{"traceparent": clientTraceparent}})
	if err != nil || res.IsError || mcptest.Text(res) != "2" {
		t.Fatalf("increment after the restart = %v, %v; want 2", res, err)
	}
	want := []span{
		{Name: "tools/call increment", Kind: trace.SpanKindClient, Status: codes.Error, Parent: "tools/call web__increment", Tool: "increment", Server: "web", Attempt: 1, Retry: "replayed on a new session: the session was gone"},
		{Name: "tools/call increment", Kind: trace.SpanKindClient, Status: codes.Unset, Parent: "tools/call web__increment", Tool: "increment", Server: "web", Attempt: 2},
		{Name: "tools/call web__increment", Kind: trace.SpanKindServer, Status: codes.Unset, Parent: "b7ad6b7169203331", Tool: "web__increment", Server: "web"},
	}
	if diff := cmp.Diff(want, spanTree(t, rec, "0af7651916cd43dd8448eb211c80319c")); diff != "" {
		t.Errorf("spans of the client's trace (-want +got):\n%s", diff)
	}
	got := seen.Seen()[before:]
	if len(got) != 2 {
		t.Fatalf("server received %v, want two attempts", got)
	}
	for _, c := range got {
		if c.Meta != c.Header || c.Meta == "" || c.Meta[:35] != clientTraceparent[:35] || c.Meta == clientTraceparent {
			t.Errorf("server received %+v: want an attempt's traceparent in the client's trace, in _meta and in the header", c)
		}
	}
	if got[0].Meta == got[1].Meta {
		t.Errorf("both attempts sent %s: want each its own span", got[0].Meta)
	}
}

// TestTraceFromHeader calls a tool over HTTP with the client's traceparent
// in the POST's header, none in _meta: the gateway's span is in that trace.
// A tool's error result marks the span failed, as tool_error.
func TestTraceFromHeader(t *testing.T) {
	g, rec, _, _ := tracedGateway(t)
	hs := httptest.NewServer(g.Handler())
	defer hs.Close()
	hc := &http.Client{Transport: headerTransport{"Traceparent": clientTraceparent}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v"}, nil).Connect(t.Context(),
		&mcp.StreamableClientTransport{Endpoint: hs.URL + "/mcp", HTTPClient: hc, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "web__fail"})
	if err != nil || !res.IsError {
		t.Fatalf("fail = %v, %v; want an error result", res, err)
	}
	var server sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == "tools/call web__fail" {
			server = s
		}
	}
	if server == nil {
		t.Fatalf("no span of the call among %d", len(rec.Ended()))
	}
	if got := server.SpanContext().TraceID().String(); got != "0af7651916cd43dd8448eb211c80319c" {
		t.Errorf("trace = %s, want the header's", got)
	}
	want := map[attribute.Key]string{tracing.ErrorType: "tool_error", tracing.MethodName: "tools/call", "gen_ai.operation.name": "execute_tool", tracing.SessionID: cs.ID()}
	got := make(map[attribute.Key]string)
	for _, kv := range server.Attributes() {
		if _, ok := want[kv.Key]; ok {
			got[kv.Key] = kv.Value.String()
		}
	}
	if diff := cmp.Diff(want, got); diff != "" || server.Status().Code != codes.Error {
		t.Errorf("span status %v, attributes (-want +got):\n%s", server.Status(), diff)
	}
}

// headerTransport adds its headers to every request.
type headerTransport map[string]string

func (h headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, v := range h {
		req.Header.Set(k, v)
	}
	return http.DefaultTransport.RoundTrip(req)
}

// TestTraceOfCallTool calls a tool through search's call_tool: the span of
// the request names the tool called, and its server.
func TestTraceOfCallTool(t *testing.T) {
	g, rec, _, _ := tracedGatewayWith(t, &Options{ToolSearch: &config.ToolSearch{Mode: config.ToolSearchOn}})
	cs := client(t, g, nil)
	_, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": "web__increment"},
		Meta: mcp.Meta{"traceparent": clientTraceparent}})
	if err != nil {
		t.Fatal(err)
	}
	want := []span{
		{Name: "tools/call increment", Kind: trace.SpanKindClient, Parent: "tools/call web__increment", Tool: "increment", Server: "web", Attempt: 1},
		{Name: "tools/call web__increment", Kind: trace.SpanKindServer, Parent: "b7ad6b7169203331", Tool: "web__increment", Server: "web"},
	}
	if diff := cmp.Diff(want, spanTree(t, rec, "0af7651916cd43dd8448eb211c80319c")); diff != "" {
		t.Errorf("spans of the client's trace (-want +got):\n%s", diff)
	}
}

// TestTraceContextWithoutTracing: with no TracerProvider (the global one,
// which the test does not set, records nothing), the client's trace
// context goes to the server as it came, in _meta and in the header; a
// call without one sends none.
func TestTraceContextWithoutTracing(t *testing.T) {
	g, _, seen := gatewayOverHTTP(t, &switchboard.Options{}, nil)
	cs := client(t, g, nil)
	for _, meta := range []mcp.Meta{nil, {"traceparent": clientTraceparent}} {
		if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "web__increment", Meta: meta}); err != nil {
			t.Fatal(err)
		}
	}
	want := []mcptest.TraceContext{{Tool: "increment"}, {Tool: "increment", Header: clientTraceparent, Meta: clientTraceparent}}
	if diff := cmp.Diff(want, seen.Seen()); diff != "" {
		t.Errorf("trace context the server received (-want +got):\n%s", diff)
	}
}

// TestServerSpanAllocs checks that a request's span costs next to nothing
// with no TracerProvider: the global one, which the host did not set,
// records nothing, and no attribute is built. The rest is the tracer's
// own: a span and a context.
func TestServerSpanAllocs(t *testing.T) {
	var reached bool
	res := &mcp.CallToolResult{IsError: true}
	handler := serverSpans(tracing.Tracer(nil))(func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		reached = true
		return res, nil
	})
	req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "web__increment", Meta: mcp.Meta{"progressToken": "p"}}}
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := handler(context.Background(), "tools/call", req); err != nil {
			t.Fatal(err)
		}
	})
	if !reached || allocs > 3 {
		t.Errorf("a request without tracing allocates %v times, want at most 3", allocs)
	}
}
