package mcptest

import (
	"context"
	"errors"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// newClient returns a go-sdk client with the given options.
func newClient(opts *mcp.ClientOptions) *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: "t", Version: "v"}, opts)
}

// connectMemory starts s in memory and connects a client to it. The session
// is closed at cleanup.
func connectMemory(t *testing.T, s *Server, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	tr, err := s.ConnectInMemory(ctx)
	if err != nil {
		t.Fatalf("ConnectInMemory: %v", err)
	}
	cs, err := newClient(opts).Connect(ctx, tr, nil)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// callText calls a tool and returns its first text content and IsError.
func callText(ctx context.Context, cs *mcp.ClientSession, name string, args map[string]any) (string, bool, error) {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return "", false, err
	}
	return Text(res), res.IsError, nil
}

// isClosedErr reports whether err says the connection is closed.
func isClosedErr(err error) bool {
	return errors.Is(err, mcp.ErrConnectionClosed)
}
