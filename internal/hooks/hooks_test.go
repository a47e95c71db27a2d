package hooks_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/hooks"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestManagersProvideTheGatewaysHooks: once package switchboard is in the
// program, a manager has the gateway's hooks, and they work on it: a
// manager with nothing connecting settles at once.
func TestManagersProvideTheGatewaysHooks(t *testing.T) {
	if hooks.Of == nil {
		t.Fatal("package switchboard did not set hooks.Of")
	}
	m := switchboard.New(&config.Config{}, nil)
	defer m.Close()
	h := hooks.Of(m)
	if h == nil {
		t.Fatal("no hooks for a manager")
	}
	h.Settle(t.Context())
}
