package upstream

import (
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

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
		defer u.Close(time.Time{})
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
	if err := reconnect(t.Context(), u); err != nil {
		t.Fatalf("reconnect = %v", err)
	}
	if took := time.Since(start); took >= deleteTimeout {
		t.Errorf("reconnect took %v, want less than the DELETE's %v: the old session closes in the background", took, deleteTimeout)
	}
	if _, err := callTool(t.Context(), u, "echo", nil); err != nil {
		t.Errorf("call on the new session = %v", err)
	}
	start = time.Now()
	u.Close(time.Time{})
	if took := time.Since(start); took > 3*deleteTimeout {
		t.Errorf("close took %v with DELETEs hanging, want about %v", took, deleteTimeout)
	}
}

// TestListOverTheLimit: a server's list with too many items, too many
// bytes or pages without end is dropped with an error that names the
// server, the list and the limit, after at most the limit's worth of
// pages; on a first connection it fails the attempt, and each attempt
// after it costs no more.
func TestListOverTheLimit(t *testing.T) {
	for _, tt := range []struct {
		name  string
		flood mcptest.ListFlood
		want  string
		pages int  // tools/list requests of the attempt
		again bool // wait for the attempts after it (the others are slow)
	}{
		{"too many items", mcptest.ListFlood{Items: maxListItems + 1}, "the tools list is over the limit of 10000 items", 1, false},
		{"endless pages", mcptest.ListFlood{Items: 3, EndlessPages: true}, "the tools list is over the limit of 100 pages", maxListPages, true},
		{"too many bytes", mcptest.ListFlood{Items: 250, ItemBytes: 17_000, EndlessPages: true}, "the tools list is over the limit of 16777216 bytes", 4, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var log eventLog
				u, srv := inMemory(t, mcptest.Script{Flood: &tt.flood}, config.Server{Name: "hostile"}, &Options{OnEvent: log.add})
				err := u.Connect(t.Context())
				var tooLarge *ListTooLargeError
				if !errors.Is(err, ErrListTooLarge) || !errors.As(err, &tooLarge) || tooLarge.List != "tools" ||
					!strings.Contains(err.Error(), `server "hostile": list tools: list too large: `+tt.want) {
					t.Fatalf("Connect = %v, want %q", err, tt.want)
				}
				if got := srv.Counts().ListTools; got != tt.pages {
					t.Errorf("%d tools/list requests, want %d: the list is not retried within the attempt", got, tt.pages)
				}
				if snap := u.Snapshot(); snap.State == Connected || len(snap.Tools) != 0 {
					t.Errorf("after the attempt: %s with %d tools, want no session and no tools", snap.State, len(snap.Tools))
				}
				if !tt.again {
					return
				}
				// The attempts on the backoff schedule cost the same each.
				mcptest.PassTime(time.Minute)
				synctest.Wait()
				if got := srv.Counts().ListTools; got%tt.pages != 0 || got <= tt.pages {
					t.Errorf("%d tools/list requests after a minute, want a multiple of %d", got, tt.pages)
				}
			})
		})
	}
}

// TestListOverTheLimitKeepsThePrevious: a list that turns over a limit on
// a reload (or a later session) keeps the previous list, and an EventList
// names the server and the limit; the list is fetched once, not retried.
func TestListOverTheLimitKeepsThePrevious(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var log eventLog
		u, srv := connectedInMemory(t, mcptest.Script{
			Tools:   specs("alpha"),
			Prompts: []mcptest.PromptSpec{{Name: "hello"}},
		}, config.Server{}, &Options{OnEvent: log.add})
		settle(t)
		srv.SetFlood(&mcptest.ListFlood{Lists: []string{"tools"}, EndlessPages: true})
		srv.NotifyToolsChanged()
		mcptest.PassTime(time.Minute)
		synctest.Wait()
		if diff := cmp.Diff([]string{"alpha"}, sortedToolNames(u)); diff != "" {
			t.Errorf("tools after the flood (-want +got):\n%s", diff)
		}
		if got := srv.Counts().ListTools; got != 1+maxListPages {
			t.Errorf("%d tools/list requests, want 1 + %d: a list over a limit is not retried", got, maxListPages)
		}
		evs := log.failedLists()
		if len(evs) != 1 || evs[0].List != Tools || !errors.Is(evs[0].Err, ErrListTooLarge) ||
			!strings.Contains(evs[0].Err.Error(), `server "mem": reload tools: list too large: the tools list is over the limit of 100 pages`) {
			t.Errorf("failed lists = %v, want one naming the server and the limit", evs)
		}
		// A new session lists its prompts anew: over the limit, the
		// previous ones stay.
		srv.SetFlood(&mcptest.ListFlood{Lists: []string{"prompts"}, EndlessPages: true})
		restartServer(t, u, srv)
		settle(t)
		if snap := u.Snapshot(); len(snap.Prompts) != 1 || snap.Prompts[0].Name != "hello" {
			t.Errorf("prompts after the flood = %v, want hello", snap.Prompts)
		}
		evs = log.failedLists()
		if len(evs) != 2 || evs[1].List != Prompts || !strings.Contains(evs[1].Err.Error(), `list prompts: list too large: the prompts list is over the limit of 100 pages`) {
			t.Errorf("failed lists = %v, want the prompts' too", evs)
		}
	})
}
