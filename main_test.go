package switchboard

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

func TestMain(m *testing.M) {
	mcptest.RunIfChild()
	// The persistent tool cache lives under the user cache dir: keep the
	// tests' out of the real one.
	dir, err := os.MkdirTemp("", "switchboard-cache-")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_CACHE_HOME", dir)
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) { os.RemoveAll(dir) }))
}
