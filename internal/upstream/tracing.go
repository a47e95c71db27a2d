package upstream

import (
	"context"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/switchboard-mcp/switchboard/internal/tracing"
)

// The spans of a request's attempts. Every request a requester sends to a
// server is an attempt, with a CLIENT span of its own under the caller's
// span (the gateway's span of its client's request, or a host's): so a
// replay on a new session, or a retry, shows as a second attempt beside
// the first, which says why it failed and what came of it
// (switchboard.retry). The attempt's trace context goes to the server in
// the request's _meta (see sendFor) and, over HTTP, in its headers (see
// roundTripper.send).

// An attemptSpan is the span of one attempt, and the context it sends
// with.
type attemptSpan struct {
	ctx  context.Context
	span trace.Span
	r    *requester
}

// startAttempt starts the span of attempt n of req, sent on s.
func (r *requester) startAttempt(ctx context.Context, req label, s *session, n int) attemptSpan {
	method := req.method()
	ctx, span := r.tracer.Start(ctx, method, clientKind...)
	if span.IsRecording() {
		attrs := []attribute.KeyValue{tracing.MethodName.String(method), tracing.Server.String(r.name), tracing.Attempt.Int(n)}
		switch method {
		case "tools/call":
			span.SetName(method + " " + req.name)
			attrs = append(attrs, tracing.ToolName.String(req.name), tracing.ExecuteTool)
		case "prompts/get":
			span.SetName(method + " " + req.name)
			attrs = append(attrs, tracing.PromptName.String(req.name))
		case "resources/read", "resources/subscribe", "resources/unsubscribe":
			attrs = append(attrs, tracing.URI(req.name))
		}
		// Not the upstream's session ID: a server may take it alone as
		// the caller's credential.
		if res := s.cs.InitializeResult(); res != nil && res.ProtocolVersion != "" {
			attrs = append(attrs, tracing.ProtocolVersion.String(res.ProtocolVersion))
		}
		span.SetAttributes(attrs...)
	}
	return attemptSpan{ctx: ctx, span: span, r: r}
}

// clientKind is the option of an attempt's span, made once: an attempt
// that records nothing allocates next to nothing.
var clientKind = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient)}

// end ends the span of an attempt that was answered.
func (a attemptSpan) end() { a.span.End() }

// fail ends the span of an attempt that failed with err, of class, and
// says why what follows follows: a replay, a retry, or nothing.
func (a attemptSpan) fail(err error, class outcome, why string) {
	if a.span.IsRecording() {
		a.span.SetAttributes(tracing.Outcome.String(class.String()), tracing.Retry.String(why))
		errorType := tracing.ErrorTypeOf(err)
		if class == notDelivered && errorType == "_OTHER" {
			errorType = "not_delivered"
		}
		tracing.Fail(a.span, err, errorType, a.r.redact(err.Error()))
	}
	a.span.End()
}

func (c outcome) String() string {
	switch c {
	case notDelivered:
		return "not_delivered"
	case ambiguous:
		return "ambiguous"
	case deterministic:
		return "deterministic"
	case cancelled:
		return "cancelled"
	}
	return "unknown"
}

// method returns the MCP method that sends l.
func (l label) method() string {
	switch l.verb {
	case "call tool":
		return "tools/call"
	case "get prompt":
		return "prompts/get"
	case "read resource":
		return "resources/read"
	case "complete":
		return "completion/complete"
	case "subscribe":
		return "resources/subscribe"
	case "unsubscribe":
		return "resources/unsubscribe"
	}
	return strings.ReplaceAll(l.verb, " ", "_")
}
