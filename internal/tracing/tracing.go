// Package tracing holds what Switchboard's OpenTelemetry spans share: the
// attribute keys of OpenTelemetry's semantic conventions for MCP, in one
// place; the W3C trace context (traceparent, tracestate) that an MCP
// request carries in its _meta or its HTTP headers; and the tracer of a
// host's TracerProvider.
//
// The conventions (semantic-conventions-genai, docs/gen-ai/mcp.md) name a
// span "{mcp.method.name} {target}", where the target is the tool's or the
// prompt's name; a server's span of a request is of kind SERVER, a
// client's of kind CLIENT. The context goes in params._meta, unprefixed.
//
// Nothing here costs more than a map lookup while no span records: the
// callers set attributes only on a span whose IsRecording is true.
package tracing

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of Switchboard's spans.
const ScopeName = "github.com/switchboard-mcp/switchboard"

// The attribute keys of the semantic conventions for MCP that Switchboard
// sets, and its own (switchboard.*).
var (
	MethodName      = semconv.McpMethodNameKey         // "mcp.method.name"
	SessionID       = semconv.McpSessionIDKey          // "mcp.session.id"
	ProtocolVersion = semconv.McpProtocolVersionKey    // "mcp.protocol.version"
	ResourceURI     = semconv.McpResourceURIKey        // "mcp.resource.uri"
	ToolName        = semconv.GenAIToolNameKey         // "gen_ai.tool.name"
	PromptName      = semconv.GenAIPromptNameKey       // "gen_ai.prompt.name"
	ErrorType       = semconv.ErrorTypeKey             // "error.type"
	StatusCode      = semconv.RPCResponseStatusCodeKey // "rpc.response.status_code"

	// ExecuteTool is gen_ai.operation.name of a tools/call.
	ExecuteTool = semconv.GenAIOperationNameExecuteTool

	// Server is the name of the Switchboard server (the config's) that
	// serves the request.
	Server = attribute.Key("switchboard.server")
	// Attempt numbers an upstream attempt of one request, from 1.
	Attempt = attribute.Key("switchboard.attempt")
	// Outcome says what a failed attempt may have done: not_delivered,
	// ambiguous, deterministic or cancelled.
	Outcome = attribute.Key("switchboard.attempt.outcome")
	// Retry says why a failed attempt is followed by another (a replay on
	// a new session, a retry), or why it is not.
	Retry = attribute.Key("switchboard.retry")
)

// ToolError is error.type of a tools/call whose result has isError set.
const ToolError = "tool_error"

// MaxURI bounds a resource URI as a span shows it.
const MaxURI = 256

// URI is uri as a span shows it: without its query and fragment, which may
// carry a credential (?token=...), and cut to MaxURI bytes.
func URI(uri string) attribute.KeyValue {
	if i := strings.IndexAny(uri, "?#"); i >= 0 {
		uri = uri[:i]
	}
	if len(uri) > MaxURI {
		uri = strings.ToValidUTF8(uri[:MaxURI], "")
	}
	return ResourceURI.String(uri)
}

// Tracer returns the tracer of tp; of otel.GetTracerProvider() if tp is
// nil, which records nothing unless the host sets one.
func Tracer(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	return tp.Tracer(ScopeName)
}

// w3c is the propagator of the trace context: W3C's, whatever the host
// set as the global propagator, as the conventions for MCP name it.
var w3c propagation.TraceContext

const (
	traceparent = "traceparent"
	tracestate  = "tracestate"
)

// Extract returns ctx with the remote span context of a request: from its
// _meta's traceparent (and tracestate) first, else from its HTTP header's
// (nil outside HTTP). ctx is returned as is if neither has one.
func Extract(ctx context.Context, meta mcp.Meta, header http.Header) context.Context {
	if _, ok := meta[traceparent].(string); ok {
		if c := w3c.Extract(ctx, metaCarrier(meta)); trace.SpanContextFromContext(c).IsRemote() {
			return c
		}
	}
	if header.Get(traceparent) != "" {
		return w3c.Extract(ctx, propagation.HeaderCarrier(header))
	}
	return ctx
}

// InjectMeta returns the _meta of an outgoing request: meta, with the span
// context of ctx as its traceparent and tracestate, replacing whatever
// they were. It returns meta itself if ctx has no valid span context, else
// a copy: meta is not modified.
func InjectMeta(ctx context.Context, meta mcp.Meta) mcp.Meta {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return meta
	}
	out := make(mcp.Meta, len(meta)+2)
	for k, v := range meta {
		if k != traceparent && k != tracestate {
			out[k] = v
		}
	}
	w3c.Inject(ctx, metaCarrier(out))
	return out
}

// InjectHeader sets the traceparent and tracestate of header from the span
// context of ctx, if it has a valid one, and reports whether it did.
func InjectHeader(ctx context.Context, header http.Header) bool {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return false
	}
	header.Del(tracestate)
	w3c.Inject(ctx, propagation.HeaderCarrier(header))
	return true
}

// metaCarrier carries the trace context in an MCP _meta.
type metaCarrier mcp.Meta

func (c metaCarrier) Get(key string) string {
	s, _ := c[key].(string)
	return s
}

func (c metaCarrier) Set(key, value string) { c[key] = value }

func (c metaCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}

// Fail marks span, if it records, as failed with err: error.type (the
// JSON-RPC error code, if err has one, else errorType), rpc.response.status_code
// (the code) and the status, whose description is message (already
// scrubbed of secrets by the caller).
func Fail(span trace.Span, err error, errorType, message string) {
	if !span.IsRecording() {
		return
	}
	var rpcErr *jsonrpc.Error
	if errors.As(err, &rpcErr) {
		code := strconv.FormatInt(rpcErr.Code, 10)
		errorType = code
		span.SetAttributes(StatusCode.String(code))
	}
	span.SetAttributes(ErrorType.String(errorType))
	span.SetStatus(codes.Error, message)
}

// ErrorTypeOf returns a low-cardinality error.type for err, which is not a
// JSON-RPC error: timeout, cancelled, or _OTHER.
func ErrorTypeOf(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "cancelled"
	}
	return "_OTHER"
}
