package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"runtime"
	"strings"
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
	ps := peers{notes: &noteCount{}}
	ctxA, _, endA := ps.begin(WithPeer(context.Background(), fakePeer{name: "a"}), nil, "")
	tokenA := ctxA.Value(callKey{}).(string)
	endA()
	_, _, endB := ps.begin(WithPeer(context.Background(), fakePeer{name: "b"}), nil, "")
	defer endB()
	if p, linked, err := ps.route(mcp.Meta{linkKey: tokenA}); !errors.Is(err, ErrNoPeer) || !linked {
		t.Errorf("a message linked to a's ended request went to %v (linked %v, error %v), want none", p, linked, err)
	}
	if p, _, err := ps.route(mcp.Meta{}); err != nil || p.Session() != "b" {
		t.Errorf("an unlinked message went to %v (%v), want b, the only session in flight", p, err)
	}
}

// sseEvent is one SSE event whose data is msg.
func sseEvent(msg string) string { return "event: message\nid: 1\ndata: " + msg + "\n\n" }

// TestLinkedStreamLinksWhatTheServerAsks: on a stream linked to a request,
// the server's requests and notifications get the link, short or longer
// than the reader's buffer, and notifications count; responses pass
// unchanged, whatever the order of their members and whether their start
// tells that they are one.
func TestLinkedStreamLinksWhatTheServerAsks(t *testing.T) {
	long := strings.Repeat("x", 64<<10)
	note := `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"hi"}}`
	longRequest := `{"jsonrpc":"2.0","id":7,"method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"` + long + `"}}],"maxTokens":1}}`
	responses := []string{
		`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"short"}]}}`,
		`{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"` + long + `"}]}}`,
		`{"result":{"content":[{"type":"text","text":"` + long + `"}]},"jsonrpc":"2.0","id":3}`,
		`{"jsonrpc":"2.0","id":4,"error":{"code":-32603,"message":"` + long + `"}}`,
		`{"jsonrpc":"2.0","id":5,"pad":"` + long + `","result":{}}`, // its start does not tell
	}
	in := sseEvent(note) + sseEvent(longRequest)
	for _, r := range responses {
		in += sseEvent(r)
	}
	var notes noteCount
	out, err := io.ReadAll(newLinkedStream(io.NopCloser(strings.NewReader(in)), "sb-1", &notes))
	if err != nil {
		t.Fatal(err)
	}
	events := strings.SplitAfter(string(out), "\n\n")
	if len(events) != 2+len(responses)+1 || events[len(events)-1] != "" {
		t.Fatalf("%d events out, want %d", len(events)-1, 2+len(responses))
	}
	for i, name := range []string{"the notification", "the long request"} {
		var msg struct {
			Params struct {
				Meta map[string]any `json:"_meta"`
			} `json:"params"`
		}
		data := events[i][strings.Index(events[i], "data: ")+len("data: "):]
		if err := json.Unmarshal([]byte(data), &msg); err != nil || msg.Params.Meta[linkKey] != "sb-1" {
			t.Errorf("%s has _meta %v (%v), want the link", name, msg.Params.Meta, err)
		}
	}
	for i, r := range responses {
		if got := events[2+i]; got != sseEvent(r) {
			t.Errorf("response %d changed: %.80q..., want %.80q...", i, got, sseEvent(r))
		}
	}
	if notes.seen != 1 {
		t.Errorf("%d notifications counted, want 1", notes.seen)
	}
}

// TestLinkedStreamHoldsNoLongResponse: a response longer than the reader's
// buffer passes as it comes: reading it allocates a small fraction of its
// size, where reading the event whole copied it four times.
func TestLinkedStreamHoldsNoLongResponse(t *testing.T) {
	const size = 4 << 20
	in := strings.NewReader(sseEvent(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"` + strings.Repeat("x", size) + `"}]}}`))
	l := newLinkedStream(io.NopCloser(in), "sb-1", &noteCount{})
	buf := make([]byte, 32<<10)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	n, err := io.CopyBuffer(struct{ io.Writer }{io.Discard}, struct{ io.Reader }{l}, buf)
	runtime.ReadMemStats(&after)
	if err != nil || n < size {
		t.Fatalf("read %d bytes, %v", n, err)
	}
	// The count is the process's: a bound well above the reader's own
	// (about 1/64 of the size) and well below a copy of the response
	// leaves room for what other goroutines allocate meanwhile.
	if allocated := after.TotalAlloc - before.TotalAlloc; allocated > size/2 {
		t.Errorf("reading a response of %d bytes allocated %d bytes, want under %d", n, allocated, size/2)
	}
}
