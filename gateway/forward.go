//lint:file-ignore SA1019 Switchboard forwards sampling, elicitation and logging for as long as servers and clients use them.

package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/mcpconn"
)

// A forwarder passes the clients' requests on to the servers, through the
// manager, each on behalf of the client session that sent it.
type forwarder struct {
	m         *switchboard.Manager
	sessions  *sessions
	stateless bool // Options.Stateless
	limitLog  *limitLog
	progress  progressTokens
	audit     *AuditLog    // Options.AuditLog, or nil
	limits    *RateLimiter // Options.RateLimiter, or nil
}

// callTool returns the handler of the tool with the given public name. The
// call goes on with the client's arguments, as sent, and its _meta (a
// progress token, say), on behalf of the client's session.
func (f *forwarder) callTool(name string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := f.forwardCall(ctx, name, req)
		return toolAnswer(ctx, res, err)
	}
}

// forwardCall calls the tool with the given public name through the
// manager, with the client's arguments and _meta, on behalf of its session
// and for its identity: a tool the identity may not call is refused as not
// permitted (see notPermitted), and never reaches its server.
func (f *forwarder) forwardCall(ctx context.Context, name string, req *mcp.CallToolRequest) (res *mcp.CallToolResult, err error) {
	traceCall(ctx, f.m, name)
	defer audited(f, req, "tools/call", kindNameTool, name, &res, &err)()
	q := f.sessions.query(req)
	if err := checkArguments(req.Params.Arguments); err != nil {
		where := ""
		if t, ok := f.m.Lookup(name); ok && visibleTools(ctx, f.m, q)[name] {
			where = fmt.Sprintf("server %q: ", t.Server)
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("%scall tool %q: %v", where, name, err)}
	}
	params := &mcp.CallToolParams{Meta: hopMeta(req.Params.Meta), Name: name,
		InputResponses: req.Params.InputResponses, RequestState: req.Params.RequestState}
	if len(req.Params.Arguments) > 0 {
		params.Arguments = req.Params.Arguments
	}
	peerCtx, end, err := f.onBehalf(ctx, req.Session, params.Meta)
	if err != nil {
		return nil, err
	}
	defer end()
	res, err = f.m.CallTool(f.limited(peerCtx, q), q, params)
	if err != nil && hiddenTool(ctx, f.m, q, name) {
		// Unknown to q, hidden from it, or of a server that is down or
		// has listed nothing yet, whose error would name it.
		return nil, notPermitted(kindNameTool, name)
	}
	if rpcErr, ok := mcpconn.Answer(err); ok && rpcErr.Code == jsonrpc.CodeInvalidParams {
		err = f.namedInvalidParams(name, err, rpcErr)
	}
	return res, err
}

// namedInvalidParams returns err, the manager's error for the tool called
// name, which its server answered with rpcErr, -32602 (invalid params): an
// answer that names the tool goes to the client unchanged; one that does
// not is named as the manager names it, by its server and the tool.
func (f *forwarder) namedInvalidParams(name string, err error, rpcErr *jsonrpc.Error) error {
	var where *switchboard.ServerError
	t, _ := f.m.Lookup(name)
	if !errors.As(err, &where) || mentions(rpcErr.Message, name) || t.Original != "" && mentions(rpcErr.Message, t.Original) {
		return err
	}
	named := *rpcErr
	named.Message = (&switchboard.ServerError{Server: where.Server, Op: where.Op, Err: rpcErr}).Error()
	return &named
}

// mentions reports whether msg names the tool called name: as a word of
// its own, not as a part of another ("id" in "invalid").
func mentions(msg, name string) bool {
	for i := 0; ; {
		j := strings.Index(msg[i:], name)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(name)
		if (start == 0 || !isNameByte(msg[start-1])) && (end == len(msg) || !isNameByte(msg[end])) {
			return true
		}
		i = start + 1
	}
}

// isNameByte reports whether b may be part of a tool's name.
func isNameByte(b byte) bool {
	return b == '_' || b == '-' || b == '.' || '0' <= b && b <= '9' || 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z'
}

// getPrompt gets a prompt, by its public name, from its server.
func (f *forwarder) getPrompt(ctx context.Context, req *mcp.GetPromptRequest) (res *mcp.GetPromptResult, err error) {
	defer audited(f, req, "prompts/get", kindNamePrompt, req.Params.Name, &res, &err)()
	q := f.sessions.query(req)
	res, err = forward(f.limited(ctx, q), f, req.Session, q, req.Params, f.m.GetPrompt)
	if errors.Is(err, switchboard.ErrUnknownPrompt) && restricted(ctx, f.m, q, kindNamePrompt) {
		return nil, notPermitted(kindNamePrompt, req.Params.Name)
	}
	return res, protocolError(ctx, err)
}

// readResource reads a resource, or a URI that a template matches, from
// the server that serves it.
func (f *forwarder) readResource(ctx context.Context, req *mcp.ReadResourceRequest) (res *mcp.ReadResourceResult, err error) {
	if reached, ok := ctx.Value(readReachedKey{}).(*bool); ok {
		*reached = true
	}
	defer audited(f, req, "resources/read", kindNameResource, req.Params.URI, &res, &err)()
	q := f.sessions.query(req)
	res, err = forward(f.limited(ctx, q), f, req.Session, q, req.Params, f.m.ReadResource)
	if errors.Is(err, switchboard.ErrUnknownResource) && restricted(ctx, f.m, q, kindNameResource) {
		return nil, notPermitted(kindNameResource, req.Params.URI)
	}
	if errors.Is(err, switchboard.ErrUnknownResource) {
		return nil, resourceNotFound(req.Params.URI)
	}
	return res, protocolError(ctx, err)
}

// complete routes a completion by the prompt's public name or the
// template's URI.
func (f *forwarder) complete(ctx context.Context, req *mcp.CompleteRequest) (res *mcp.CompleteResult, err error) {
	defer auditedComplete(f, req, &res, &err)()
	q := f.sessions.query(req)
	res, err = forward(f.limited(ctx, q), f, req.Session, q, req.Params, f.m.Complete)
	if ref := req.Params.Ref; ref != nil {
		switch {
		case errors.Is(err, switchboard.ErrUnknownPrompt) && restricted(ctx, f.m, q, kindNamePrompt):
			return nil, notPermitted(kindNamePrompt, ref.Name)
		case errors.Is(err, switchboard.ErrUnknownResource) && restricted(ctx, f.m, q, kindNameResource):
			return nil, notPermitted(kindNameResource, ref.URI)
		}
	}
	return res, protocolError(ctx, err)
}

// forward passes a client's request on to the server that serves it, with
// the manager's call, on behalf of the client's session ss, for q: params as the
// client sent them but for the _meta keys of the client's hop.
func forward[T any, P interface {
	*T
	mcp.Params
}, R any](ctx context.Context, f *forwarder, ss *mcp.ServerSession, q *switchboard.Query, in P, call func(context.Context, *switchboard.Query, P) (R, error)) (R, error) {
	params := P(new(T))
	*params = *in
	params.SetMeta(hopMeta(in.GetMeta()))
	peerCtx, end, err := f.onBehalf(ctx, ss, params.GetMeta())
	if err != nil {
		var zero R
		return zero, err
	}
	defer end()
	return call(peerCtx, q, params)
}

// hopMeta returns the _meta of a client's request to pass on to a server:
// all of it (a progress token, say) but the protocol's own keys
// (io.modelcontextprotocol/...), which describe the client's connection to
// the gateway, not the gateway's to the server; except the log level a
// modern client asks for, which is the request's.
func hopMeta(meta mcp.Meta) mcp.Meta {
	var out mcp.Meta
	for k, v := range meta {
		if strings.HasPrefix(k, "io.modelcontextprotocol/") && k != mcp.MetaKeyLogLevel {
			continue
		}
		if out == nil {
			out = make(mcp.Meta, len(meta))
		}
		out[k] = v
	}
	return out
}

// onBehalf returns ctx carrying the client session ss as the peer of the
// requests made with it, and claims the request's progress token, from
// meta, for the session until end. A token that the session already uses
// for a request in flight is refused: its progress could not be told apart.
func (f *forwarder) onBehalf(ctx context.Context, ss *mcp.ServerSession, meta mcp.Meta) (_ context.Context, end func(), _ error) {
	if ss == nil {
		return ctx, func() {}, nil
	}
	end, err := f.progress.claim(ss, meta["progressToken"])
	if err != nil {
		return nil, nil, err
	}
	if level, ok := meta[mcp.MetaKeyLogLevel].(string); ok && slices.Contains(levelOrder, mcp.LoggingLevel(level)) {
		// A modern client asks for logs per request: a server on an
		// older revision needs to be asked with logging/setLevel.
		f.sessions.setLoggingLevel(ctx, ss, mcp.LoggingLevel(level))
	}
	var done <-chan struct{}
	if !f.stateless {
		// A stateless session lasts one request: what would live as long
		// as it (a process of its own) is not worth starting.
		done = f.sessions.done(ss)
	}
	r := &relay{dropped: func() {
		f.limitLog.hit("relay", "a client does not read the notifications of its request: the newest are dropped", "limit", "relay queue", "queued", relayQueue)
	}}
	release := end
	end = func() {
		r.finish() // the notifications of the request go before its answer
		release()
	}
	return switchboard.WithPeer(ctx, downstream{ss: ss, ctx: ctx, done: done, relay: r}), end, nil
}

// progressTokens holds the progress tokens of the requests in flight, per
// client session.
type progressTokens struct {
	mu    sync.Mutex
	inUse map[progressClaim]bool
}

type progressClaim struct {
	ss    *mcp.ServerSession
	token any // a string or a number, as decoded from JSON
}

// claim claims token, if not nil, for a request of ss, until release.
func (p *progressTokens) claim(ss *mcp.ServerSession, token any) (release func(), _ error) {
	if token == nil {
		return func() {}, nil
	}
	switch token.(type) {
	case string, float64, int, int64, json.Number:
	default:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("switchboard: progress token %v: must be a string or a number", token)}
	}
	c := progressClaim{ss, token}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.inUse[c] {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("switchboard: progress token %s is already in use by another request of this session", quoteToken(token))}
	}
	if p.inUse == nil {
		p.inUse = make(map[progressClaim]bool)
	}
	p.inUse[c] = true
	return func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		delete(p.inUse, c)
	}, nil
}

// quoteToken renders a progress token as it was sent.
func quoteToken(token any) string {
	if s, ok := token.(string); ok {
		return strconv.Quote(s)
	}
	return fmt.Sprint(token)
}

// downstream is a client session as the peer of one request. What a server
// sends while serving the request goes to the session with the request's
// context: over Streamable HTTP, the go-sdk then sends it on the response
// stream of the client's request, as the protocol asks.
type downstream struct {
	ss   *mcp.ServerSession
	ctx  context.Context // the client's request's
	done <-chan struct{}
	// relay sends the request's notifications; nil for a downstream of
	// no request, which sends none.
	relay *relay
}

func (d downstream) Session() any { return d.ss }

func (d downstream) Done() <-chan struct{} { return d.done }

// within returns the request's context, cut short when ctx, the server's
// side of the exchange, ends.
func (d downstream) within(ctx context.Context) (context.Context, func()) {
	c, cancel := context.WithCancel(d.ctx)
	stop := context.AfterFunc(ctx, cancel)
	return c, func() {
		stop()
		cancel()
	}
}

// ErrClientCannot means that a server asked the gateway's client for what
// the client did not say it supports.
var ErrClientCannot = errors.New("the client does not support it")

func (d downstream) capabilities() *mcp.ClientCapabilities {
	if p := d.ss.InitializeParams(); p != nil && p.Capabilities != nil {
		return p.Capabilities
	}
	return &mcp.ClientCapabilities{}
}

func (d downstream) ListRoots(ctx context.Context, params *mcp.ListRootsParams) (*mcp.ListRootsResult, error) {
	return ask(ctx, d, "roots", d.capabilities().RootsV2 != nil, d.ss.ListRoots, params)
}

func (d downstream) CreateMessage(ctx context.Context, params *mcp.CreateMessageWithToolsParams) (*mcp.CreateMessageWithToolsResult, error) {
	return ask(ctx, d, "sampling", d.capabilities().Sampling != nil, d.ss.CreateMessageWithTools, params)
}

func (d downstream) Elicit(ctx context.Context, params *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	return ask(ctx, d, "elicitation", d.capabilities().Elicitation != nil, d.ss.Elicit, params)
}

func (d downstream) NotifyElicitationComplete(_ context.Context, params *mcp.ElicitationCompleteParams) error {
	return relayed(d, d.ss.NotifyElicitationComplete, params)
}

func (d downstream) Log(_ context.Context, params *mcp.LoggingMessageParams) error {
	return relayed(d, d.ss.Log, params)
}

func (d downstream) NotifyProgress(_ context.Context, params *mcp.ProgressNotificationParams) error {
	return relayed(d, d.ss.NotifyProgress, params)
}

// ask sends d's client a request for a server, if the client declared the
// feature, within both the server's request (ctx) and the client's.
func ask[P, R any](ctx context.Context, d downstream, feature string, declared bool, send func(context.Context, P) (R, error), params P) (R, error) {
	if !declared {
		var zero R
		return zero, fmt.Errorf("%s: %w", feature, ErrClientCannot)
	}
	ctx, done := d.within(ctx)
	defer done()
	return send(ctx, params)
}

// readReachedKey carries, in a resources/read's context, a flag that
// readResource sets: the request reached a handler of the gateway.
type readReachedKey struct{}

// relayed sends params to d's client with send, through d's relay: the
// caller, a server's reading goroutine, does not wait for the write.
func relayed[P any](d downstream, send func(context.Context, P) error, params P) error {
	d.relay.add(func() { _ = send(d.ctx, params) })
	return nil
}
