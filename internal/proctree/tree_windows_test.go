package proctree

import (
	"testing"
	"time"

	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

func TestReleaseEndsTheTree(t *testing.T) {
	tree, _, grandchild := startParent(t)
	exited := mcptest.WatchExit(t, grandchild)
	tree.Release()
	if !exited(time.Minute) {
		t.Fatalf("grandchild %d survived the release of its job", grandchild)
	}
}
