package upstream

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestDroppedNotificationCostsOneWait: a notification seen on the wire that
// no handler ever handles (the go-sdk dropped it) holds one request for
// noteWait, then is forgiven: the next request does not wait.
func TestDroppedNotificationCostsOneWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n noteCount
		n.arrived()
		n.arrived()
		n.done() // the other one was dropped
		start := time.Now()
		n.catchUp(t.Context())
		if waited := time.Since(start); waited != noteWait {
			t.Errorf("the first request waited %v, want %v", waited, noteWait)
		}
		n.arrived()
		n.done()
		start = time.Now()
		n.catchUp(t.Context())
		if waited := time.Since(start); waited != 0 {
			t.Errorf("the next request waited %v, want no wait", waited)
		}
	})
}

// fakePeer is a Peer that is only ever routed to.
type fakePeer struct {
	Peer
	name string
}

func (p fakePeer) Session() any { return p.name }

// TestLinkToAnEndedRequestIsNeverGuessed: a message linked to a request
// that has ended goes to no peer, even when another session's request is
// the only one in flight; an unlinked one goes to that session.
func TestLinkToAnEndedRequestIsNeverGuessed(t *testing.T) {
	var ps peers
	ctxA, _, endA := ps.begin(WithPeer(context.Background(), fakePeer{name: "a"}), nil)
	tokenA := ctxA.Value(callKey{}).(string)
	endA()
	_, _, endB := ps.begin(WithPeer(context.Background(), fakePeer{name: "b"}), nil)
	defer endB()
	if p, linked, err := ps.route(mcp.Meta{linkKey: tokenA}); !errors.Is(err, ErrNoPeer) || !linked {
		t.Errorf("a message linked to a's ended request went to %v (linked %v, error %v), want none", p, linked, err)
	}
	if p, _, err := ps.route(mcp.Meta{}); err != nil || p.Session() != "b" {
		t.Errorf("an unlinked message went to %v (%v), want b, the only session in flight", p, err)
	}
}
