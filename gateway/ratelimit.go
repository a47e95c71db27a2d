package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/hooks"
	"github.com/switchboard-mcp/switchboard/internal/identity"
	"github.com/switchboard-mcp/switchboard/internal/ratelimit"
)

// RateLimiter applies the config's gateway.limits: token buckets per
// identity (the token's subject; without gateway.auth, one identity shared
// by every client) and per server, held in memory or, when the config
// names one, in a Redis that replicas share. A request that would reach a
// server (tools/call, call_tool of tool search, prompts/get,
// resources/read, completion/complete, resources/subscribe) and that the
// policies allow takes a token from each bucket that applies, or from
// none; without one it gets a JSON-RPC error with code [CodeRateLimited]
// that names the limit and when to retry, and nothing reaches the server.
// While Redis does not answer, each gateway limits requests by its own
// buckets, with the same limits (so N replicas allow up to N times the
// limit), logged.
// Set it as Options.RateLimiter; [RateLimiter.Set] replaces the limits as a
// reloaded config has them. The host closes it after the gateway.
type RateLimiter = ratelimit.Limiter

// RateLimiterOptions configure a [RateLimiter]: its logger, Redis's
// password (from the environment variable the config names), and the
// callbacks of a metric.
type RateLimiterOptions = ratelimit.Options

// NewRateLimiter returns a RateLimiter for limits, which must not be nil.
// It does no I/O: the first request that needs Redis connects.
func NewRateLimiter(limits *config.GatewayLimits, o *RateLimiterOptions) (*RateLimiter, error) {
	return ratelimit.New(limits, o)
}

// CodeRateLimited is the JSON-RPC error code of a request refused by the
// rate limits: -32000, the first of the range JSON-RPC leaves to servers,
// as the gateway's other refusals for its limits use it. The error's data
// is {"retryAfterMs": N}.
const CodeRateLimited = -32000

// rateLimited is the error of a request the rate limits refused: its
// JSON-RPC error, for the client.
type rateLimited struct{ rpc *jsonrpc.Error }

func (e *rateLimited) Error() string { return e.rpc.Error() }
func (e *rateLimited) Unwrap() error { return e.rpc }

// isRateLimited reports whether err refuses a request for the rate
// limits: a *rateLimited, or its JSON-RPC error, as the client gets it.
func isRateLimited(err error) bool {
	var rpcErr *jsonrpc.Error
	return errors.As(err, new(*rateLimited)) ||
		errors.As(err, &rpcErr) && rpcErr.Code == CodeRateLimited && strings.HasPrefix(rpcErr.Message, ratelimit.MessagePrefix)
}

func rateLimitedError(r *ratelimit.Refusal) error {
	data, _ := json.Marshal(struct {
		RetryAfterMs int64 `json:"retryAfterMs"`
	}{r.RetryAfter.Milliseconds()})
	return &rateLimited{&jsonrpc.Error{Code: CodeRateLimited, Message: r.Message(), Data: data}}
}

// limited returns ctx with the rate limits admitting a request as it
// reaches its server, for q's identity: see hooks.WithAdmit. A refused
// request is audited with the rest, by its handler.
func (f *forwarder) limited(ctx context.Context, q *switchboard.Query) context.Context {
	if f.limits == nil {
		return ctx
	}
	return hooks.WithAdmit(ctx, func(server string) error {
		r := f.limits.Take(ctx, subjectOf(q), server)
		if r == nil {
			return nil
		}
		f.limitLog.hit("rate:"+r.Limit, "requests refused by the rate limits (gateway.limits)", "limit", r.Limit)
		return rateLimitedError(r)
	})
}

// subjectOf is the subject of q's identity: "" for none, the one identity
// of every client without gateway.auth.
func subjectOf(q *switchboard.Query) string {
	if q == nil {
		return ""
	}
	if id, ok := q.Extra[switchboard.IdentityKey].(*identity.Identity); ok && id != nil {
		return id.Subject
	}
	return ""
}
