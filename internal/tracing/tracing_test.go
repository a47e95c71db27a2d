package tracing

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"
)

const (
	fromMeta   = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	fromHeader = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
)

// TestExtract takes a request's trace context from its _meta first, else
// from its HTTP header.
func TestExtract(t *testing.T) {
	for _, tc := range []struct {
		name   string
		meta   mcp.Meta
		header http.Header
		want   string // the trace id, or "" for none
	}{
		{"none", nil, nil, ""},
		{"meta", mcp.Meta{"traceparent": fromMeta}, nil, "0af7651916cd43dd8448eb211c80319c"},
		{"header", nil, http.Header{"Traceparent": {fromHeader}}, "4bf92f3577b34da6a3ce929d0e0e4736"},
		{"both", mcp.Meta{"traceparent": fromMeta}, http.Header{"Traceparent": {fromHeader}}, "0af7651916cd43dd8448eb211c80319c"},
		{"bad meta", mcp.Meta{"traceparent": "noise"}, http.Header{"Traceparent": {fromHeader}}, "4bf92f3577b34da6a3ce929d0e0e4736"},
		{"not a string", mcp.Meta{"traceparent": 7}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := trace.SpanContextFromContext(Extract(context.Background(), tc.meta, tc.header))
			got := ""
			if sc.IsValid() {
				got = sc.TraceID().String()
			}
			if got != tc.want {
				t.Errorf("trace id = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestInjectMeta replaces the trace context of a request's _meta with the
// context's, in a copy, and keeps the rest.
func TestInjectMeta(t *testing.T) {
	in := mcp.Meta{"traceparent": fromHeader, "tracestate": "a=b", "progressToken": "p"}
	if got := InjectMeta(context.Background(), in); !cmp.Equal(got, in) {
		t.Errorf("without a span: %v, want the meta as it was", got)
	}
	ctx := Extract(context.Background(), mcp.Meta{"traceparent": fromMeta}, nil)
	got := InjectMeta(ctx, in)
	want := mcp.Meta{"traceparent": fromMeta, "progressToken": "p"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("meta (-want +got):\n%s", diff)
	}
	if in["traceparent"] != fromHeader {
		t.Errorf("the caller's meta was modified: %v", in)
	}
	h := http.Header{"Tracestate": {"x=y"}}
	if !InjectHeader(ctx, h) || h.Get("traceparent") != fromMeta || h.Get("tracestate") != "" {
		t.Errorf("header = %v, want traceparent %s and no tracestate", h, fromMeta)
	}
}

// TestURI: a span shows a URI without its query or fragment, which may
// carry a credential, and at most MaxURI bytes of it.
func TestURI(t *testing.T) {
	long := "file:///" + strings.Repeat("a", 2*MaxURI)
	for _, tc := range []struct{ in, want string }{
		{"mem://doc", "mem://doc"},
		{"https://x.example/doc?token=s3cret", "https://x.example/doc"},
		{"https://x.example/doc#k=s3cret", "https://x.example/doc"},
		{long, long[:MaxURI]},
	} {
		if got := URI(tc.in).Value.AsString(); got != tc.want {
			t.Errorf("URI(%.40q) = %.40q, want %.40q", tc.in, got, tc.want)
		}
	}
}
