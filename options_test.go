//lint:file-ignore SA1019 The test sets a logging level, which the manager forwards.

package switchboard

import (
	"testing"
	"testing/synctest"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// TestLoggingLevelOption: Options.LoggingLevel is asked of every server that
// logs, on its first session, and of a server that a reconfiguration adds.
func TestLoggingLevelOption(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t)
		a := f.add("a", mcptest.Script{})
		b := f.add("b", mcptest.Script{})
		m := f.managerWith(&Options{Cache: CacheOff, LoggingLevel: "debug"}, server("a"))
		if err := m.Connect(t.Context()); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if got := a.LoggingLevel(); got != "debug" {
			t.Errorf("a's level after Connect = %q, want debug", got)
		}
		if _, err := m.Reconfigure(t.Context(), &config.Config{Servers: []config.Server{server("a"), server("b")}}); err != nil {
			t.Fatal(err)
		}
		if err := m.Reconnect(t.Context(), "b"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if got := b.LoggingLevel(); got != "debug" {
			t.Errorf("the added server's level = %q, want debug", got)
		}
	})
}
