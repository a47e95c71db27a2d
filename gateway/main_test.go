package gateway

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

func TestMain(m *testing.M) {
	mcptest.RunIfChild()
	cleanup := mcptest.IsolateUserDirs()
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) { cleanup() }))
}
