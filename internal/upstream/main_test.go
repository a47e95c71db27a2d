package upstream

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

func TestMain(m *testing.M) {
	mcptest.RunIfChild()
	goleak.VerifyTestMain(m)
}
