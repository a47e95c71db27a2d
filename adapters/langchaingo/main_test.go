package lcgtools_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// TestMain checks for leaked goroutines, and points the manager's tool
// cache, which the examples use, at a temporary directory.
func TestMain(m *testing.M) {
	cleanup := mcptest.IsolateUserDirs()
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) { cleanup() }))
}
