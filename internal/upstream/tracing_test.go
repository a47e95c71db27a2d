package upstream

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
	"github.com/switchboard-mcp/switchboard/internal/tracing"
)

// TestAttemptSpans calls a tool on an HTTP server that restarted under the
// upstream: the call is replayed on a new session. Each request sent is an
// attempt with a CLIENT span under the caller's: the first says that it
// failed and was replayed on a new session, the second is ok. The server
// receives each attempt's own trace context, in _meta and in the header.
func TestAttemptSpans(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	srv := mcptest.NewServer(mcptest.Script{LegacyOnly: true})
	var seen mcptest.TraceContexts
	hs := httptest.NewServer(seen.Wrap(srv.Handler()))
	defer hs.Close()
	defer srv.Close()
	u := New(config.Server{Name: "web", URL: hs.URL}, &Options{TracerProvider: tp})
	defer u.Close(time.Time{})
	if err := u.Connect(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := callTool(t.Context(), u, "increment", nil); err != nil {
		t.Fatal(err)
	}
	srv.Restart()
	before := len(seen.Seen())
	ctx, caller := tp.Tracer("test").Start(t.Context(), "caller")
	res, err := callTool(ctx, u, "increment", nil)
	caller.End()
	if err != nil || mcptest.Text(res) != "2" {
		t.Fatalf("increment after the restart = %v, %v; want 2", res, err)
	}

	var attempts []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Parent().SpanID() == caller.SpanContext().SpanID() {
			attempts = append(attempts, s)
		}
	}
	type span struct {
		Name    string
		Kind    trace.SpanKind
		Status  codes.Code
		Attempt int64
		Retry   string
		Tool    string
		Server  string
	}
	var got []span
	for _, s := range attempts {
		a := attrs(s)
		if s.SpanContext().TraceID() != caller.SpanContext().TraceID() {
			t.Errorf("span %q is in trace %v, want the caller's %v", s.Name(), s.SpanContext().TraceID(), caller.SpanContext().TraceID())
		}
		got = append(got, span{s.Name(), s.SpanKind(), s.Status().Code, a[tracing.Attempt].AsInt64(), a[tracing.Retry].AsString(), a[tracing.ToolName].AsString(), a[tracing.Server].AsString()})
	}
	want := []span{
		{"tools/call increment", trace.SpanKindClient, codes.Error, 1, "replayed on a new session: the session was gone", "increment", "web"},
		{"tools/call increment", trace.SpanKindClient, codes.Unset, 2, "", "increment", "web"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("attempt spans (-want +got):\n%s", diff)
	}
	if a := attrs(attempts[0]); a[tracing.ErrorType].AsString() == "" || a[tracing.MethodName].AsString() != "tools/call" {
		t.Errorf("first attempt's attributes = %v: want error.type and mcp.method.name", attempts[0].Attributes())
	}

	var wantSeen []mcptest.TraceContext
	for _, s := range attempts {
		tp := traceparentOf(s.SpanContext())
		wantSeen = append(wantSeen, mcptest.TraceContext{Tool: "increment", Header: tp, Meta: tp})
	}
	if diff := cmp.Diff(wantSeen, seen.Seen()[before:]); diff != "" {
		t.Errorf("trace context the server received (-want +got):\n%s", diff)
	}
}

// TestAttemptWithoutTracing calls a tool with the default provider, which
// records nothing: the server gets the caller's trace context, if any, as
// it is, and nothing if there is none.
func TestAttemptWithoutTracing(t *testing.T) {
	srv := mcptest.NewServer(mcptest.Script{LegacyOnly: true})
	var seen mcptest.TraceContexts
	hs := httptest.NewServer(seen.Wrap(srv.Handler()))
	defer hs.Close()
	defer srv.Close()
	u := New(config.Server{Name: "web", URL: hs.URL}, nil)
	defer u.Close(time.Time{})
	if err := u.Connect(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := callTool(t.Context(), u, "increment", nil); err != nil {
		t.Fatal(err)
	}
	remote := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}, TraceFlags: trace.FlagsSampled, Remote: true})
	ctx := trace.ContextWithRemoteSpanContext(t.Context(), remote)
	if _, err := callTool(ctx, u, "increment", nil); err != nil {
		t.Fatal(err)
	}
	tp := traceparentOf(remote)
	want := []mcptest.TraceContext{{Tool: "increment"}, {Tool: "increment", Header: tp, Meta: tp}}
	if diff := cmp.Diff(want, seen.Seen()); diff != "" {
		t.Errorf("trace context the server received (-want +got):\n%s", diff)
	}
}

// TestAttemptSpanAllocs checks that an attempt costs next to nothing when
// no span records, with the default provider (the global one, which the
// host did not set) or a no-op one: no attribute is built, no _meta copied,
// no error formatted. The rest is the tracer's own: a span and a context.
func TestAttemptSpanAllocs(t *testing.T) {
	for _, tc := range []struct {
		name     string
		tp       trace.TracerProvider
		maxAlloc float64
	}{
		{"default", nil, 3},
		{"noop", noop.NewTracerProvider(), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testAttemptAllocs(t, tc.tp, tc.maxAlloc)
		})
	}
}

func testAttemptAllocs(t *testing.T, tp trace.TracerProvider, maxAllocs float64) {
	r := &requester{name: "web", tracer: tracing.Tracer(tp), redact: func(s string) string { return s }}
	s := &session{cs: &mcp.ClientSession{}}
	meta := mcp.Meta{"progressToken": "p"}
	ctx := context.Background()
	allocs := testing.AllocsPerRun(100, func() {
		a := r.startAttempt(ctx, label{"call tool", "increment"}, s, 1)
		if got := tracing.InjectMeta(a.ctx, meta); len(got) != 1 {
			t.Fatalf("meta = %v", got)
		}
		a.fail(context.DeadlineExceeded, ambiguous, "retried")
	})
	if allocs > maxAllocs {
		t.Errorf("an attempt without tracing allocates %v times, want at most %v", allocs, maxAllocs)
	}
}

// attrs returns the attributes of s by key.
func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := make(map[attribute.Key]attribute.Value)
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

// traceparentOf is the W3C traceparent of sc.
func traceparentOf(sc trace.SpanContext) string {
	return fmt.Sprintf("00-%s-%s-%s", sc.TraceID(), sc.SpanID(), sc.TraceFlags())
}
