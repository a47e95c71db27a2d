package upstream

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

func TestResponseOverTheLimit(t *testing.T) {
	script := mcptest.Script{ResponseBytes: 300 << 10}
	limit := config.Server{MaxResponseBytes: 100 << 10}
	t.Run("http", func(t *testing.T) {
		u, srv, _ := httpUpstream(t, script, limit)
		_, err := callTool(t.Context(), u, "big", nil)
		if err == nil || !strings.Contains(err.Error(), "limit of 102400 bytes (maxResponseBytes)") {
			t.Errorf("big response = %v, want a clear limit error", err)
		}
		if got := srv.Counts().ByTool["big"]; got != 1 {
			t.Errorf("big ran %d times, want 1: a response too large is not retried", got)
		}
		if _, err := callTool(t.Context(), u, "echo", nil); err != nil {
			t.Errorf("a small call after it = %v", err)
		}
		// On behalf of a peer, the response stream passes through the
		// link (see linkedStream), which passes a long response as it
		// comes: the limit holds all the same.
		peer := WithPeer(t.Context(), fakePeer{name: "a"})
		if _, err := callTool(peer, u, "big", nil); err == nil || !strings.Contains(err.Error(), "limit of 102400 bytes (maxResponseBytes)") {
			t.Errorf("big response on behalf of a peer = %v, want a clear limit error", err)
		}
	})
	t.Run("http under the limit, on behalf of a peer", func(t *testing.T) {
		u, _, _ := httpUpstream(t, script, config.Server{MaxResponseBytes: 400 << 10})
		res, err := callTool(WithPeer(t.Context(), fakePeer{name: "a"}), u, "big", nil)
		if err != nil {
			t.Fatal(err)
		}
		if text := mcptest.Text(res); text != strings.Repeat("x", 300<<10) {
			t.Errorf("big response = %d bytes, want its 300 KiB", len(text))
		}
	})
	t.Run("stdio", func(t *testing.T) {
		srv := stdio("kid", script)
		srv.MaxResponseBytes = limit.MaxResponseBytes
		var log eventLog
		u := New(srv, &Options{OnEvent: log.add})
		defer u.Close()
		if err := u.Connect(t.Context()); err != nil {
			t.Fatal(err)
		}
		_, err := callTool(t.Context(), u, "big", nil)
		if err == nil || !strings.Contains(err.Error(), "limit of 102400 bytes (maxResponseBytes)") {
			t.Errorf("big response = %v, want a clear limit error", err)
		}
		// The line cannot be skipped: the session is replaced.
		if _, err := callTool(t.Context(), u, "echo", nil); err != nil {
			t.Errorf("a small call after it = %v", err)
		}
		// Its loss is the response's fault, not the clean exit of a server
		// whose pipes we closed.
		if losses := log.errs(Reconnecting); len(losses) != 1 || !errors.Is(losses[0], errResponseTooLarge) || !strings.Contains(losses[0].Error(), "limit of 102400 bytes") {
			t.Errorf("causes of loss = %v, want the response too large", losses)
		}
	})
}

// TestHungDeleteDelaysNothing: a server that never answers the DELETE that
// ends a session must delay neither a reconnect nor, beyond its short
// deadline, a close.
func TestHungDeleteDelaysNothing(t *testing.T) {
	u, srv, _ := httpUpstream(t, mcptest.Script{LegacyOnly: true}, config.Server{})
	srv.HangDeletes()
	start := time.Now()
	if err := u.Reconnect(t.Context()); err != nil {
		t.Fatalf("Reconnect = %v", err)
	}
	if took := time.Since(start); took >= deleteTimeout {
		t.Errorf("reconnect took %v, want less than the DELETE's %v: the old session closes in the background", took, deleteTimeout)
	}
	if _, err := callTool(t.Context(), u, "echo", nil); err != nil {
		t.Errorf("call on the new session = %v", err)
	}
	start = time.Now()
	u.Close()
	if took := time.Since(start); took > 3*deleteTimeout {
		t.Errorf("close took %v with DELETEs hanging, want about %v", took, deleteTimeout)
	}
}
