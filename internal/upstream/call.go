//lint:file-ignore SA1019 Switchboard forwards roots and logging for as long as servers and clients use them.

package upstream

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The requests of an Upstream, which its requester sends.

// CallTool calls the tool params.Name, as the server knows it, with
// params' arguments and _meta (a progress token, say). Nil arguments are
// sent as {}. The call is bounded by ctx and by the server's timeout.
//
// Required arguments are checked against the tool's input schema before
// anything is sent. If the server is connecting or reconnecting, the call
// waits for its next attempt, within its bounds; if it failed, the call
// fails at once, unless it may ask for one early attempt (see the package
// documentation). What happens on failure depends on what can be known:
//
//   - not delivered (the session was gone, the connection refused, the
//     server overloaded): the call is replayed once on a new session;
//   - ambiguous (sent, then the connection broke or the time ran out): it is
//     replayed once only if the tool is read-only or idempotent, and
//     otherwise fails with an [*AmbiguousError];
//   - deterministic (an error answer, a result with isError): never retried;
//   - cancelled by the caller: returned at once, never retried.
//
// Generic retries (config "retry") extend the replays, with backoff and a
// budget, under the same rules.
func (u *Upstream) CallTool(ctx context.Context, params *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	info := u.lists.tool(params.Name)
	args, err := checkArguments(info, params.Arguments)
	if err != nil {
		return nil, u.red.errorf(label{"call tool", params.Name}.String(), err)
	}
	return u.calls.toolCall(ctx, params, args, info != nil && info.replayable && ctx.Value(noReplayKey{}) == nil)
}

type noReplayKey struct{}

// WithoutReplay returns ctx marked so that a tool call made with it is
// never replayed after an ambiguous failure, whatever the tool's
// annotations say: the host knows them to be less strict than the ones it
// trusted (a readOnlyHint flipped since the tool was pinned).
func WithoutReplay(ctx context.Context) context.Context {
	return context.WithValue(ctx, noReplayKey{}, true)
}

// GetPrompt gets the prompt params.Name, as the server knows it.
func (u *Upstream) GetPrompt(ctx context.Context, params *mcp.GetPromptParams) (*mcp.GetPromptResult, error) {
	return u.calls.getPrompt(ctx, params)
}

// ReadResource reads the resource params.URI.
func (u *Upstream) ReadResource(ctx context.Context, params *mcp.ReadResourceParams) (*mcp.ReadResourceResult, error) {
	return u.calls.readResource(ctx, params)
}

// Complete asks the server for completions of a prompt's or a resource
// template's argument, named as the server knows them.
func (u *Upstream) Complete(ctx context.Context, params *mcp.CompleteParams) (*mcp.CompleteResult, error) {
	return u.calls.complete(ctx, params)
}

// Subscribe subscribes to updates of the resource uri; they arrive as
// EventResourceUpdated. The subscription belongs to the upstream, not to a
// session: every new session subscribes again, whatever kind of reconnect
// made it. A subscription that completes after the host unsubscribed is
// undone; one that fails leaves the subscriptions as they were.
func (u *Upstream) Subscribe(ctx context.Context, uri string) error {
	had := u.lists.want(uri)
	err := u.calls.do(ctx, label{"subscribe", uri}, true, func(ctx context.Context, s *session) error {
		return u.lists.subscribeOn(ctx, s, uri)
	})
	if err != nil && !had {
		u.lists.unwant(uri)
	}
	return err
}

// Unsubscribe ends a subscription to the resource uri.
func (u *Upstream) Unsubscribe(ctx context.Context, uri string) error {
	if !u.lists.unwant(uri) {
		return nil
	}
	return u.calls.do(ctx, label{"unsubscribe", uri}, true, func(ctx context.Context, s *session) error {
		return u.lists.unsubscribeOn(ctx, s, uri)
	})
}

// SetLoggingLevel asks the server to send log messages at level and above,
// now if it is connected, and on every new session. The level belongs to
// the upstream, as subscriptions do. A server that does not log is left
// alone.
func (u *Upstream) SetLoggingLevel(ctx context.Context, level mcp.LoggingLevel) error {
	u.lists.setLevel(level)
	s := u.sup.connectedSession()
	if s == nil {
		return nil // the next session gets it
	}
	return u.lists.applyLevel(ctx, s, string(level))
}

// LoggingLevel returns the level the host asked the server to log at, or
// "".
func (u *Upstream) LoggingLevel() mcp.LoggingLevel { return u.lists.level() }

// SetRoots replaces the roots offered to the server, which is told that
// they changed. It does nothing to an upstream made without Options.Roots,
// which offers none.
//
// The server is told without a lock held: a SetRoots that finds another
// telling the server of an earlier change leaves its roots to that one,
// which applies the latest roots before it returns, and returns at once.
func (u *Upstream) SetRoots(roots []*mcp.Root) {
	if u.opts.Roots != nil {
		u.roots.set(roots)
	}
}
