//lint:file-ignore SA1019 Switchboard forwards sampling, elicitation and logging for as long as servers and clients use them.

package upstream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/mcpconn"
)

// Peer is the client on whose behalf a request is made; attach it to a
// request's context with [WithPeer].
type Peer = mcpconn.Peer

type peerKey struct{}

// WithPeer returns ctx carrying p: the requests made with it are made on
// p's behalf.
func WithPeer(ctx context.Context, p Peer) context.Context {
	return context.WithValue(ctx, peerKey{}, p)
}

// PeerOf returns the peer that ctx carries, or nil.
func PeerOf(ctx context.Context) Peer { return peerFrom(ctx) }

func peerFrom(ctx context.Context) Peer {
	p, _ := ctx.Value(peerKey{}).(Peer)
	return p
}

// linkKey is the _meta key under which a message that a server sent on the
// response stream of a request carries that request's token (see
// linkedStream). It never leaves Switchboard: the handlers remove it.
const linkKey = "switchboard/request"

// callKey carries a request's token in its context, down to the HTTP
// round-tripper.
type callKey struct{}

// ErrNoPeer means that a server sent a request (sampling, elicitation) that
// no client can be found to answer.
var ErrNoPeer = errors.New("no client to forward it to")

// peers tracks the requests in flight on behalf of peers, so that what a
// server sends while serving one reaches the right peer:
//
//   - over Streamable HTTP, a server sends what a request causes on that
//     request's response stream. The round-tripper tags each such message
//     with the request's token (see linkedStream), so attribution is exact;
//   - a progress notification carries the request's token as its progress
//     token: the peer's own is swapped for it on the way out, and back on
//     the way in;
//   - anything else (over stdio nothing on the wire ties a message to a
//     request) goes to the peer only while the requests in flight come from
//     a single session; with none or several, a request is refused with
//     ErrNoPeer, never guessed, and a log message goes to the gateway's own
//     log.
type peers struct {
	mu       sync.Mutex
	seq      uint64
	byToken  map[string]*peerRequest
	sessions map[any]*peerSession
}

// A peerRequest is one request in flight on behalf of a peer.
type peerRequest struct {
	peer     Peer
	progress any // the peer's progress token, or nil
}

// A peerSession counts the requests in flight for one peer session.
type peerSession struct {
	n    int
	peer Peer // the peer of its latest request
}

// begin registers a request on behalf of ctx's peer, if any. It returns the
// context to send it with, its _meta with the progress token swapped, and
// end, which unregisters it. Without a peer, it returns its arguments and a
// no-op.
func (ps *peers) begin(ctx context.Context, meta mcp.Meta) (context.Context, mcp.Meta, func()) {
	p := peerFrom(ctx)
	if p == nil {
		return ctx, meta, func() {}
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.byToken == nil {
		ps.byToken = make(map[string]*peerRequest)
		ps.sessions = make(map[any]*peerSession)
	}
	ps.seq++
	token := "sb-" + strconv.FormatUint(ps.seq, 10)
	req := &peerRequest{peer: p}
	if pt, ok := meta["progressToken"]; ok && pt != nil {
		req.progress = pt
		swapped := maps.Clone(meta)
		swapped["progressToken"] = token
		meta = swapped
	}
	ps.byToken[token] = req
	sess := ps.sessions[p.Session()]
	if sess == nil {
		sess = &peerSession{}
		ps.sessions[p.Session()] = sess
	}
	sess.n++
	sess.peer = p
	end := func() {
		ps.mu.Lock()
		defer ps.mu.Unlock()
		delete(ps.byToken, token)
		if sess.n--; sess.n == 0 {
			delete(ps.sessions, p.Session())
		}
	}
	return context.WithValue(ctx, callKey{}, token), meta, end
}

// route finds the peer that a message from the server is for: the request
// named by its link, else, if it has none, the only session with requests
// in flight. A message linked to a request that has ended has no peer: it
// must not go to another session's. It removes the link from meta.
func (ps *peers) route(meta mcp.Meta) (_ Peer, linked bool, _ error) {
	token, linked := meta[linkKey].(string)
	delete(meta, linkKey)
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if req := ps.byToken[token]; req != nil {
		return req.peer, linked, nil
	}
	if linked {
		return nil, linked, fmt.Errorf("%w: the request it was sent for has ended", ErrNoPeer)
	}
	switch len(ps.sessions) {
	case 0:
		return nil, linked, fmt.Errorf("%w: no request is in flight to this server", ErrNoPeer)
	case 1:
		for _, s := range ps.sessions {
			return s.peer, linked, nil
		}
	}
	return nil, linked, fmt.Errorf("%w: requests from %d clients are in flight to this server, and nothing tells which one it is for", ErrNoPeer, len(ps.sessions))
}

// progress returns the peer of the request whose token is the progress
// token of params, and params with the peer's own token.
func (ps *peers) progress(params *mcp.ProgressNotificationParams) (Peer, *mcp.ProgressNotificationParams) {
	token, _ := params.ProgressToken.(string)
	ps.mu.Lock()
	req := ps.byToken[token]
	ps.mu.Unlock()
	if req == nil || req.progress == nil {
		return nil, nil
	}
	out := *params
	out.ProgressToken = req.progress
	return req.peer, &out
}

// routePeer finds the peer that the server's message method, with params,
// is for. A request that finds none is answered with an error that says
// why.
func (u *Upstream) routePeer(method string, params mcp.Params) (Peer, error) {
	if params == nil || reflect.ValueOf(params).IsNil() {
		return nil, fmt.Errorf("switchboard: %s without params", method)
	}
	p, _, err := u.peers.route(params.GetMeta())
	if err != nil {
		return nil, fmt.Errorf("switchboard: cannot forward %s from server %q: %w", method, u.name, err)
	}
	return p, nil
}

// noteDone counts a log message or progress notification handled: one
// that came linked to a request (over HTTP), or any (over stdio), as the
// transport counted them (see noteCount). A transport of the host's own
// (Options.Dial) counts none.
func (u *Upstream) noteDone(linked bool) {
	if linked || u.notes.lines.Load() {
		u.notes.done()
	}
}

// beginPeer registers a request for ctx's peer, if any (see peers.begin).
// Its end waits until what the server said before its response reached the
// peer. The request's _meta asks for the host's logging level, unless it
// asks for one itself: from revision 2026-07-28 a server logs at the level
// each request asks for (logging/setLevel serves the older ones).
func (u *Upstream) beginPeer(ctx context.Context, meta mcp.Meta) (context.Context, mcp.Meta, func()) {
	if _, asked := meta[mcp.MetaKeyLogLevel]; !asked {
		if level := u.LoggingLevel(); level != "" {
			meta = maps.Clone(meta)
			if meta == nil {
				meta = mcp.Meta{}
			}
			meta[mcp.MetaKeyLogLevel] = string(level)
		}
	}
	sent, meta, end := u.peers.begin(ctx, meta)
	if sent == ctx {
		return ctx, meta, end
	}
	return sent, meta, func() {
		u.notes.catchUp(ctx)
		end()
	}
}

// tell logs the failure to pass a notification on to a peer.
func (u *Upstream) tell(err error) {
	if err != nil {
		u.opts.Logger.Debug("notification not forwarded", "server", u.name, "error", err)
	}
}

// serverLog passes a log message from the server on to the peer it is for,
// else to the gateway's own log.
func (u *Upstream) serverLog(ctx context.Context, params *mcp.LoggingMessageParams) {
	if params == nil {
		return
	}
	p, linked, err := u.peers.route(params.Meta)
	defer u.noteDone(linked)
	if err == nil {
		u.tell(p.Log(ctx, params))
		return
	}
	u.opts.Logger.Log(ctx, slogLevel(params.Level), "server log", "server", u.name, "logger", params.Logger, "data", u.redact(fmt.Sprint(params.Data)))
}

// slogLevel maps an MCP log level to slog's.
func slogLevel(l mcp.LoggingLevel) slog.Level {
	switch l {
	case "debug":
		return slog.LevelDebug
	case "info", "notice":
		return slog.LevelInfo
	case "warning":
		return slog.LevelWarn
	}
	return slog.LevelError
}

// newClient returns the client of the upstream's sessions. Its handlers
// are set before the first session, so that no notification is missed,
// even during the first list. What a server sends while serving a request
// goes to the peer the request was made for (see peers).
func (u *Upstream) newClient() *mcp.Client {
	client := mcp.NewClient(u.opts.Client, &mcp.ClientOptions{
		Logger: u.opts.Logger,
		// A result that asks for input (multi round-trip requests, from
		// revision 2026-07-28) goes back to the caller, whose client
		// fulfils it and retries: the go-sdk's own fulfilment would ask
		// the handlers below, which cannot always tell whose call it is.
		MultiRoundTrip:             &mcp.MultiRoundTripOptions{Disabled: true},
		ToolListChangedHandler:     func(context.Context, *mcp.ToolListChangedRequest) { u.listChanged(Tools) },
		PromptListChangedHandler:   func(context.Context, *mcp.PromptListChangedRequest) { u.listChanged(Prompts) },
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { u.listChanged(Resources) },
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			if req.Params != nil {
				u.resourceUpdated(req.Params.URI)
			}
		},
		Capabilities: u.capabilities(),
		CreateMessageWithToolsHandler: func(ctx context.Context, req *mcp.CreateMessageWithToolsRequest) (*mcp.CreateMessageWithToolsResult, error) {
			p, err := u.routePeer("sampling/createMessage", req.Params)
			if err != nil {
				return nil, err
			}
			return p.CreateMessage(ctx, req.Params)
		},
		ElicitationCompleteHandler: func(ctx context.Context, req *mcp.ElicitationCompleteNotificationRequest) {
			if p, err := u.routePeer("notifications/elicitation/complete", req.Params); err == nil {
				u.tell(p.NotifyElicitationComplete(ctx, req.Params))
			}
		},
		LoggingMessageHandler: func(ctx context.Context, req *mcp.LoggingMessageRequest) {
			u.serverLog(ctx, req.Params)
		},
		ProgressNotificationHandler: func(ctx context.Context, req *mcp.ProgressNotificationClientRequest) {
			if req.Params == nil {
				return
			}
			_, linked := req.Params.Meta[linkKey]
			delete(req.Params.Meta, linkKey)
			defer u.noteDone(linked)
			if p, params := u.peers.progress(req.Params); p != nil {
				u.tell(p.NotifyProgress(ctx, params))
			}
		},
	})
	if u.opts.Roots != nil {
		u.roots = u.opts.Roots
		client.AddRoots(u.roots...)
	}
	// Elicitations skip the go-sdk's own handling, whose checks of the
	// requested schema are stricter than the protocol: the client the
	// request goes to checks it.
	client.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != "elicitation/create" {
				return next(ctx, method, req)
			}
			params, _ := req.GetParams().(*mcp.ElicitParams)
			p, err := u.routePeer(method, params)
			if err != nil {
				return nil, err
			}
			return p.Elicit(ctx, params)
		}
	})
	return client
}

// capabilities are what the upstream's client offers servers: elicitation
// (sampling comes with its handler), and roots if it has any to offer.
func (u *Upstream) capabilities() *mcp.ClientCapabilities {
	caps := &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{
		Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}}}
	if u.opts.Roots != nil {
		caps.RootsV2 = &mcp.RootCapabilities{ListChanged: true}
	}
	return caps
}

// SetRoots replaces the roots offered to the server, which is told that
// they changed. It does nothing to an upstream made without Options.Roots,
// which offers none.
//
// The server is told without a lock held: a SetRoots that finds another
// telling the server of an earlier change leaves its roots to that one,
// which applies the latest roots before it returns, and returns at once.
func (u *Upstream) SetRoots(roots []*mcp.Root) {
	if u.opts.Roots == nil {
		return
	}
	u.rootsMu.Lock()
	defer u.rootsMu.Unlock()
	u.wantRoots = roots
	u.rootsGen++
	if u.applyingRoots {
		return
	}
	u.applyingRoots = true
	for applied := uint64(0); applied != u.rootsGen; {
		applied = u.rootsGen
		gone := urisNotIn(u.roots, u.wantRoots)
		u.roots = u.wantRoots
		want := u.roots
		u.rootsMu.Unlock()
		u.client.RemoveRoots(gone...)
		u.client.AddRoots(want...)
		u.rootsMu.Lock()
	}
	u.applyingRoots = false
}

// urisNotIn returns the URIs of the roots in from that are not in to.
//
//lint:ignore SA1019 roots are forwarded while clients and servers use them.
func urisNotIn(from, to []*mcp.Root) []string {
	keep := make(map[string]bool, len(to))
	for _, r := range to {
		keep[r.URI] = true
	}
	var gone []string
	for _, r := range from {
		if !keep[r.URI] {
			gone = append(gone, r.URI)
		}
	}
	return gone
}

// SetLoggingLevel asks the server to send log messages at level and above,
// now if it is connected, and on every new session. The level belongs to
// the upstream, as subscriptions do. A server that does not log is left
// alone.
func (u *Upstream) SetLoggingLevel(ctx context.Context, level mcp.LoggingLevel) error {
	u.mu.Lock()
	u.logLevel = string(level)
	s := u.sess
	connected := u.state == Connected
	u.mu.Unlock()
	if !connected || s == nil {
		return nil // the next session gets it
	}
	return u.applyLogLevel(ctx, s, string(level))
}

// LoggingLevel returns the level the host asked the server to log at, or
// "".
func (u *Upstream) LoggingLevel() mcp.LoggingLevel {
	u.mu.Lock()
	defer u.mu.Unlock()
	return mcp.LoggingLevel(u.logLevel)
}

// restoreLogLevel sends a new session the level the host asked for.
func (u *Upstream) restoreLogLevel(ctx context.Context, s *session) {
	u.mu.Lock()
	level := u.logLevel
	u.mu.Unlock()
	if err := u.applyLogLevel(ctx, s, level); err != nil && ctx.Err() == nil {
		u.opts.Logger.Info("setting the logging level failed", "server", u.name, "error", u.redact(err.Error()))
	}
}

// applyLogLevel sends level to the server of s, if it logs.
func (u *Upstream) applyLogLevel(ctx context.Context, s *session, level string) error {
	if caps := s.capabilities(); caps.Logging == nil || level == "" {
		return nil
	}
	err := serially(ctx, u.settings.Load().serial, func() error {
		return s.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: mcp.LoggingLevel(level)})
	})
	if err != nil {
		return u.wrap(request{"set logging level", level}.String(), err)
	}
	return nil
}
