package gateway

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestSDKTellsEverySessionOfAToolAddedAgain pins what registry.tellToolsChanged
// relies on, for want of a per-session notification in the go-sdk: a tool
// added again, unchanged, has the server send tools/list_changed to every
// session. If an upgrade of the go-sdk stops that, a session is no longer
// told of the tools it found with search_tools (docs/go-sdk.md).
func TestSDKTellsEverySessionOfAToolAddedAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		server := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "v"}, nil)
		tool := &mcp.Tool{Name: "t", InputSchema: map[string]any{"type": "object"}}
		handler := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		}
		server.AddTool(tool, handler)
		st, ct := mcp.NewInMemoryTransports()
		ss, err := server.Connect(t.Context(), st, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer ss.Wait()
		changed := make(chan struct{}, 10)
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "v"}, &mcp.ClientOptions{
			ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
		}).Connect(t.Context(), ct, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		if _, err := cs.ListTools(t.Context(), nil); err != nil {
			t.Fatal(err)
		}

		server.AddTool(tool, handler)
		select {
		case <-changed:
		case <-time.After(time.Minute): // the bubble's clock: no real wait
			t.Fatal("the go-sdk did not send tools/list_changed for a tool added again: registry.tellToolsChanged needs another way")
		}
	})
}
