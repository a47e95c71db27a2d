package upstream

import (
	"encoding/base64"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// TestNoSecretLeaks plants a secret in the environment, feeds it to servers
// through every substitutable field, drives them through their faults, and
// scans every error, event and log line for it.
func TestNoSecretLeaks(t *testing.T) {
	const secret = "sk-planted-5ecret-0123456789"
	t.Setenv("SWITCHBOARD_PLANTED", secret)

	srv := mcptest.NewServer(mcptest.Script{LegacyOnly: true})
	hs, err := mcptest.StartHTTP(srv)
	if err != nil {
		t.Fatal(err)
	}
	defer hs.Close()
	defer srv.Close()

	var logs mcptest.LogBuffer
	var mu sync.Mutex
	var seen []string
	record := func(err error) {
		if err != nil {
			mu.Lock()
			seen = append(seen, err.Error())
			mu.Unlock()
		}
	}
	newUpstream := func(cfg config.Server) *Upstream {
		u := New(cfg, &Options{
			Logger:  slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
			OnEvent: func(ev Event) { record(ev.Err) },
		})
		t.Cleanup(func() { record(u.Close(time.Time{})) })
		return u
	}
	plant := "${SWITCHBOARD_PLANTED}"

	// A stdio server that prints its argument to stderr and crashes.
	crash := newUpstream(shell("crash", `echo "my token is $1" >&2; exit 7`, plant))
	record(crash.Connect(t.Context()))
	// One that prints it in base64, and where the cut of a long line
	// splits it.
	encoded := base64.StdEncoding.EncodeToString([]byte(secret))
	long := newUpstream(shell("long", `printf '%s\n' "$2" >&2; printf '%0500d%s\n' 0 "$1" >&2; exit 7`, plant, encoded))
	record(long.Connect(t.Context()))

	// A command that does not exist, with the secret in its args and env.
	ghost := newUpstream(config.Server{Name: "ghost", Command: "switchboard-no-such-" + plant, Args: []string{plant}, Env: map[string]string{"TOKEN": plant}})
	record(ghost.Connect(t.Context()))

	// HTTP: the secret in the URL's userinfo and query and in a header.
	down := newUpstream(config.Server{Name: "down", URL: "http://u:" + plant + "@127.0.0.1:1/mcp?key=" + plant, Headers: map[string]string{"Authorization": "Bearer " + plant}})
	record(down.Connect(t.Context()))

	// A live HTTP server, then faults: 503s, a 500, a restart, an unknown tool.
	web := newUpstream(config.Server{Name: "web", URL: hs.URL + "?key=" + plant, Headers: map[string]string{"Authorization": "Bearer " + plant}})
	record(web.Connect(t.Context()))
	srv.RejectPOSTs(http.StatusServiceUnavailable, 3, 0)
	_, err = callTool(t.Context(), web, "increment", nil)
	record(err)
	srv.RejectPOSTs(http.StatusInternalServerError, 1, 0)
	_, err = callTool(t.Context(), web, "increment", nil)
	record(err)
	srv.Restart()
	_, err = callTool(t.Context(), web, "echo", nil)
	record(err)
	_, err = callTool(t.Context(), web, "no_such_tool", nil)
	record(err)
	_, err = callTool(t.Context(), web, "add", map[string]any{"a": 1})
	record(err)
	if err := hs.Stop(); err != nil {
		t.Fatal(err)
	}
	record(reconnect(t.Context(), web))
	_, err = callTool(t.Context(), web, "echo", nil)
	record(err)
	for _, u := range []*Upstream{crash, long, ghost, down, web} {
		record(u.Snapshot().Err)
	}

	mu.Lock()
	defer mu.Unlock()
	if len(seen) < 8 {
		t.Fatalf("only %d errors were produced; the faults did not happen", len(seen))
	}
	for _, msg := range seen {
		if strings.Contains(msg, secret[:12]) || strings.Contains(msg, encoded) {
			t.Errorf("an error shows the secret: %s", msg)
		}
	}
	if strings.Contains(logs.String(), secret[:12]) || strings.Contains(logs.String(), encoded) {
		t.Errorf("the logs show the secret:\n%s", logs.String())
	}
	if !strings.Contains(strings.Join(seen, "\n"), "my token is [redacted]") {
		t.Errorf("the crashing server's stderr is not in its error, redacted:\n%s", strings.Join(seen, "\n"))
	}
}
