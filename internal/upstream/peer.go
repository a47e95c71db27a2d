//lint:file-ignore SA1019 Switchboard forwards sampling, elicitation and logging for as long as servers and clients use them.

package upstream

import (
	"context"
	"errors"
	"fmt"
	"maps"
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
	notes *noteCount // what the server said, counted

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
// end, which waits until what the server said before its response reached
// the peer (see noteCount), and unregisters it. Without a peer, it returns
// its arguments and a no-op. Peer or not, the request's _meta asks for
// level, the host's logging level, unless it asks for one itself: from
// revision 2026-07-28 a server logs at the level each request asks for
// (logging/setLevel serves the older ones).
func (ps *peers) begin(ctx context.Context, meta mcp.Meta, level mcp.LoggingLevel) (context.Context, mcp.Meta, func()) {
	if _, asked := meta[mcp.MetaKeyLogLevel]; !asked && level != "" {
		meta = maps.Clone(meta)
		if meta == nil {
			meta = mcp.Meta{}
		}
		meta[mcp.MetaKeyLogLevel] = string(level)
	}
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
		ps.notes.catchUp(ctx)
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
