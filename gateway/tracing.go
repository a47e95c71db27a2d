package gateway

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/tracing"
)

// The gateway's spans: one of kind SERVER for each request of a client that
// goes on to the servers, or is answered from the manager's lists, under
// the client's trace context (see Options.TracerProvider). The manager
// adds a CLIENT span under it for each attempt upstream.

// serverKind is the option of a request's span, made once.
var serverKind = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer)}

// serverSpans returns the middleware that makes the span of each request
// of a traced method, with tracer.
func serverSpans(tracer trace.Tracer) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			meta, ok := tracedMeta(req)
			if !ok {
				return next(ctx, method, req)
			}
			var header map[string][]string
			if extra := req.GetExtra(); extra != nil {
				header = extra.Header
			}
			ctx, span := tracer.Start(tracing.Extract(ctx, meta, header), method, serverKind...)
			defer span.End()
			if span.IsRecording() {
				describeRequest(span, method, req)
			}
			res, err := next(ctx, method, req)
			switch {
			case !span.IsRecording():
			case err != nil:
				tracing.Fail(span, err, tracing.ErrorTypeOf(err), err.Error())
			default:
				if r, ok := res.(*mcp.CallToolResult); ok && r.IsError {
					tracing.Fail(span, nil, tracing.ToolError, tracing.ToolError) // its text is the tool's result: not for a trace
				}
			}
			return res, err
		}
	}
}

// tracedMeta returns the _meta of a request of a method that has a span,
// and whether it has one.
func tracedMeta(req mcp.Request) (mcp.Meta, bool) {
	switch r := req.(type) {
	case *mcp.CallToolRequest:
		return r.Params.Meta, true
	case *mcp.GetPromptRequest:
		return r.Params.Meta, true
	case *mcp.ReadResourceRequest:
		return r.Params.Meta, true
	case *mcp.CompleteRequest:
		return r.Params.Meta, true
	case *mcp.ListToolsRequest:
		return metaOf(r.Params), true
	case *mcp.ListPromptsRequest:
		return metaOf(r.Params), true
	case *mcp.ListResourcesRequest:
		return metaOf(r.Params), true
	case *mcp.ListResourceTemplatesRequest:
		return metaOf(r.Params), true
	}
	return nil, false
}

// metaOf returns the _meta of a list's params, which may be nil.
func metaOf[P interface{ GetMeta() map[string]any }](p *P) mcp.Meta {
	if p == nil {
		return nil
	}
	return (*p).GetMeta()
}

// describeRequest sets the name and the attributes of a request's span,
// which records.
func describeRequest(span trace.Span, method string, req mcp.Request) {
	attrs := []attribute.KeyValue{tracing.MethodName.String(method)}
	if ss := req.GetSession(); ss != nil {
		if id := ss.ID(); id != "" {
			attrs = append(attrs, tracing.SessionID.String(id))
		}
	}
	if r, ok := req.(interface{ ProtocolVersion() string }); ok {
		if v := r.ProtocolVersion(); v != "" {
			attrs = append(attrs, tracing.ProtocolVersion.String(v))
		}
	}
	switch r := req.(type) {
	case *mcp.CallToolRequest:
		span.SetName(method + " " + r.Params.Name)
		attrs = append(attrs, tracing.ToolName.String(r.Params.Name), tracing.ExecuteTool)
	case *mcp.GetPromptRequest:
		span.SetName(method + " " + r.Params.Name)
		attrs = append(attrs, tracing.PromptName.String(r.Params.Name))
	case *mcp.ReadResourceRequest:
		attrs = append(attrs, tracing.URI(r.Params.URI))
	case *mcp.CompleteRequest:
		if ref := r.Params.Ref; ref != nil && ref.Name != "" {
			span.SetName(method + " " + ref.Name)
			attrs = append(attrs, tracing.PromptName.String(ref.Name))
		} else if ref != nil && ref.URI != "" {
			attrs = append(attrs, tracing.URI(ref.URI))
		}
	}
	span.SetAttributes(attrs...)
}

// traceCall names the tool that a tools/call of the span in ctx calls, by
// its public name, and its server: search's call_tool calls another tool
// than the one the client named.
func traceCall(ctx context.Context, m *switchboard.Manager, name string) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	span.SetName("tools/call " + name)
	span.SetAttributes(tracing.ToolName.String(name))
	if t, ok := m.Lookup(name); ok {
		span.SetAttributes(tracing.Server.String(t.Server))
	}
}
