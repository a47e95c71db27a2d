package gateway

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"

	"github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/config"
)

// Options configure a [Gateway]. A nil *Options means all defaults.
type Options struct {
	// Implementation is how the gateway introduces itself to its clients.
	// Default: name "switchboard", version "dev".
	Implementation *mcp.Implementation
	// Logger receives diagnostics. Default: discard.
	Logger *slog.Logger
	// Stateless serves Streamable HTTP without sessions, for replicas behind
	// a load balancer.
	Stateless bool
	// SessionTimeout closes a Streamable HTTP session that sent no request
	// for that long: a client that went away without ending its session
	// (and the processes it had, see config processPerSession) is let go.
	// The client, if it comes back, starts a new session, as the protocol
	// asks. Default DefaultSessionTimeout; negative: never.
	SessionTimeout time.Duration
	// MaxSessions bounds the client sessions the gateway holds at once: a
	// request for a new Streamable HTTP session beyond it gets 503, with
	// Retry-After, naming the limit, while the sessions held go on.
	// Default DefaultMaxSessions; negative: no limit.
	MaxSessions int
	// NotifyQueue bounds the notifications (resources/updated,
	// list_changed) a client session may have waiting to be sent: a
	// session that leaves more unread is closed, with a warning, and its
	// client may start a new one. A notification the same as one waiting
	// (the same list, the same resource) is not queued again, so that only
	// a client that leaves this many different ones unread is closed.
	// Default DefaultNotifyQueue.
	NotifyQueue int
	// StreamWriteTimeout bounds each write to a client's standalone stream
	// (its HTTP GET to /mcp): a client that stops reading loses the
	// stream's connection. Default DefaultStreamWriteTimeout.
	StreamWriteTimeout time.Duration
	// SessionDropped, if set, is called with DropNotifyQueueFull for each
	// session closed for NotifyQueue, and with DropMaxSessions for each
	// session refused for MaxSessions, for a metric. It must not block.
	SessionDropped func(reason string)
	// AuthToken, if set, is required as "Authorization: Bearer AuthToken" on
	// /mcp, /metrics, /status and /admin. /healthz and /readyz never require it:
	// orchestrator probes carry no token.
	AuthToken string
	// OAuth, if set, makes /mcp an OAuth 2.1 protected resource: /mcp,
	// /metrics, /status and /admin need a token its Verifier accepts
	// instead of AuthToken, which is then ignored. /healthz and /readyz
	// stay open.
	OAuth *OAuth
	// Metrics, if set, is served at /metrics: the handler of package
	// github.com/switchboard-mcp/switchboard/metrics, say.
	Metrics http.Handler
	// Latency, if set, gives the median and 99th percentile of a server's
	// call durations, and how many calls they cover, for /status.
	Latency func(server string) (p50, p99 time.Duration, calls uint64)
	// AllowOrigins are the browser origins, besides loopback ones, whose
	// requests the gateway accepts (see CheckOrigin for the form). A
	// request from any other origin gets 403.
	AllowOrigins []string
	// MaxRequestBytes bounds the body of a request to /mcp; a larger one
	// gets 413. Default: the go-sdk's, 4 MiB.
	MaxRequestBytes int64
	// ToolSearch, if set, overrides the config's toolSearch (see
	// [config.Config.ToolSearch], which the manager's New and Reconfigure
	// hand the gateway), as `serve --tool-search` does. While tool search
	// is on, the tools are served behind search_tools and call_tool:
	// tools/list holds those two, the tools of the servers marked
	// alwaysLoad, and the tools the client session found, up to
	// MaxFoundPerSession (with Stateless, no session keeps its finds: call
	// them with call_tool). Every tool stays callable.
	ToolSearch *config.ToolSearch
	// AuditLog, if set, gets a line for each tools/call (also through
	// call_tool), prompts/get, resources/read, completion/complete and
	// resources/subscribe and unsubscribe: ok, error, or denied by a
	// policy; with the arguments and result, redacted, of the servers
	// whose config marks them auditPayloads. See [AuditLog]. The gateway
	// does not close it.
	AuditLog *AuditLog
	// Policies, if set, are the policies the manager's filters enforce
	// (see [switchboard.Policies.Filters]): /status shows their rules, and
	// with OAuth the identities connected and what each may use.
	Policies *switchboard.Policies
	// RateLimiter, if set, applies the rate limits to the requests that
	// reach servers: see [RateLimiter]. The gateway does not close it.
	RateLimiter *RateLimiter
	// TracerProvider makes an OpenTelemetry span, of kind SERVER, for each
	// client request the gateway serves (tools/call, including search's
	// call_tool, prompts/get, resources/read, completion/complete and the
	// lists), named and described as OpenTelemetry's semantic conventions
	// for MCP ask ("tools/call get_weather"), with the Switchboard server
	// as switchboard.server. Its parent is the client's trace context:
	// params._meta's traceparent and tracestate, else the HTTP request's
	// traceparent header. The manager's spans of the attempts upstream go
	// under it (see switchboard.Options.TracerProvider, which should be the
	// same). Default: otel.GetTracerProvider(), which records nothing
	// unless the host sets one; the client's trace context still goes on to
	// the servers.
	TracerProvider trace.TracerProvider
}

// Why the gateway dropped a client session, or refused one, for
// Options.SessionDropped.
const (
	// DropNotifyQueueFull: the session left more notifications unread than
	// Options.NotifyQueue holds, and was closed.
	DropNotifyQueueFull = "notify_queue_full"
	// DropMaxSessions: a new session was refused, for the gateway held
	// Options.MaxSessions already.
	DropMaxSessions = "max_sessions"
)

// withDefaults returns o with its defaults set.
func (o Options) withDefaults() Options {
	if o.Implementation == nil {
		o.Implementation = &mcp.Implementation{Name: "switchboard", Version: "dev"}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// DefaultSessionTimeout is how long an idle Streamable HTTP session lives
// when Options.SessionTimeout is zero.
const DefaultSessionTimeout = 10 * time.Minute

// DefaultMaxSessions is how many client sessions the gateway holds at once
// when Options.MaxSessions is zero.
const DefaultMaxSessions = 1000

// DefaultNotifyQueue is how many notifications a client session may have
// waiting to be sent when Options.NotifyQueue is zero.
const DefaultNotifyQueue = 256

// DefaultStreamWriteTimeout bounds each write to a client's standalone
// stream (its HTTP GET) when Options.StreamWriteTimeout is zero.
const DefaultStreamWriteTimeout = 10 * time.Second

// sessionTimeout is the go-sdk's SessionTimeout for o.SessionTimeout.
func (o *Options) sessionTimeout() time.Duration {
	switch t := o.SessionTimeout; {
	case t == 0:
		return DefaultSessionTimeout
	case t < 0:
		return 0 // never
	default:
		return t
	}
}

// maxSessions is o.MaxSessions, its default, or 0 for no limit.
func (o *Options) maxSessions() int {
	switch n := o.MaxSessions; {
	case n == 0:
		return DefaultMaxSessions
	case n < 0:
		return 0
	default:
		return n
	}
}

// notifyQueue is o.NotifyQueue, or its default.
func (o *Options) notifyQueue() int {
	if n := o.NotifyQueue; n > 0 {
		return n
	}
	return DefaultNotifyQueue
}

// streamWriteTimeout is o.StreamWriteTimeout, or its default.
func (o *Options) streamWriteTimeout() time.Duration {
	if d := o.StreamWriteTimeout; d > 0 {
		return d
	}
	return DefaultStreamWriteTimeout
}

// dropped tells o.SessionDropped, if set.
func (o *Options) dropped(reason string) {
	if o.SessionDropped != nil {
		o.SessionDropped(reason)
	}
}
