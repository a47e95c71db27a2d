//lint:file-ignore SA1019 roots are forwarded while clients and servers use them.

package upstream

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// A heldRoots transport holds every roots/list_changed notification that
// the client writes until release is closed: a server slow to take it.
type heldRoots struct {
	mcp.Transport
	held    chan struct{} // receives once per notification held
	release chan struct{}
}

func (h *heldRoots) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, err := h.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &heldRootsConn{conn, h}, nil
}

type heldRootsConn struct {
	mcp.Connection
	h *heldRoots
}

func (c *heldRootsConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok && req.Method == "notifications/roots/list_changed" {
		c.h.held <- struct{}{}
		<-c.h.release
	}
	return c.Connection.Write(ctx, msg)
}

func roots(uris ...string) []*mcp.Root {
	var rs []*mcp.Root
	for _, u := range uris {
		rs = append(rs, &mcp.Root{URI: u})
	}
	return rs
}

// TestSetRootsHoldsNoLockWhileTheServerIsTold: while one SetRoots waits
// for a server slow to take the change, another returns at once, and the
// server ends up offered the later roots.
func TestSetRootsHoldsNoLockWhileTheServerIsTold(t *testing.T) {
	srv := mcptest.NewServer(mcptest.Script{Tools: []mcptest.ToolSpec{{Name: "roots", Behavior: mcptest.Roots}}})
	defer srv.Close()
	h := &heldRoots{held: make(chan struct{}, 16), release: make(chan struct{})}
	u := New(config.Server{Name: "s", Command: "in-memory"}, &Options{
		Roots: roots("file:///first"),
		Dial: func(ctx context.Context, _ config.Server) (mcp.Transport, error) {
			tr, err := srv.ConnectInMemory(ctx)
			h.Transport = tr
			return h, err
		},
	})
	defer u.Close(time.Time{})
	if err := u.Connect(t.Context()); err != nil {
		t.Fatal(err)
	}
	release := sync.OnceFunc(func() { close(h.release) })
	defer release() // before u.Close, on every way out
	first := make(chan struct{})
	go func() {
		defer close(first)
		u.SetRoots(roots("file:///a"))
	}()
	<-h.held // the first SetRoots waits for the server

	second := make(chan struct{})
	go func() {
		defer close(second)
		u.SetRoots(roots("file:///b"))
	}()
	select {
	case <-second:
	case <-time.After(time.Minute): // a bound on the failure only
		t.Fatal("a SetRoots waited for another's notification of the server")
	}
	release()
	<-first
	res, err := callTool(t.Context(), u, "roots", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := mcptest.Text(res); got != "file:///b" {
		t.Errorf("the server is offered %q, want the later SetRoots' file:///b", strings.ReplaceAll(got, "\n", " "))
	}
}
