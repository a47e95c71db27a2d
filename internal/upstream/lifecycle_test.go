package upstream

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// One Upstream per server, for the server's whole life: Disconnect,
// Connect, Restart and Reconfigure all reuse it, and what it owns (its
// subscriptions above all) survives each of them.

func TestDisconnectThenConnectAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sw := newSwitchable(t, mcptest.Script{})
		u := sw.connectedUpstream(t)
		<-sw.dials
		if err := u.Disconnect(t.Context()); err != nil {
			t.Fatalf("Disconnect = %v", err)
		}
		synctest.Wait()
		if got := u.State(); got != Disconnected {
			t.Errorf("state %v, want disconnected", got)
		}
		if n := sw.srv.OpenSessions(); n != 0 {
			t.Errorf("%d sessions open on the server, want 0", n)
		}
		if _, err := callTool(t.Context(), u, "echo", nil); !errors.Is(err, ErrNotConnected) || !strings.Contains(err.Error(), "disconnected") {
			t.Errorf("call after Disconnect = %v, want ErrNotConnected saying it is disconnected", err)
		}
		mcptest.PassTime(10 * time.Minute)
		if n := len(sw.dials); n != 0 {
			t.Errorf("%d attempts while disconnected, want none", n)
		}
		if err := u.Connect(t.Context()); err != nil {
			t.Fatalf("Connect after Disconnect = %v", err)
		}
		if got := sw.srv.Counts().Starts; got != 2 {
			t.Errorf("%d handshakes, want 2", got)
		}
	})
}

func TestDisconnectStopsAnAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		u, srv := inMemory(t, mcptest.Script{HangOnInitialize: true}, config.Server{Timeout: ms(0)}, nil)
		connected := make(chan error, 1)
		go func() { connected <- u.Connect(context.Background()) }()
		synctest.Wait()
		start := time.Now()
		if err := u.Disconnect(t.Context()); err != nil {
			t.Fatalf("Disconnect = %v", err)
		}
		if took := time.Since(start); took != 0 {
			t.Errorf("Disconnect took %v, want it to stop the attempt at once", took)
		}
		if err := <-connected; !errors.Is(err, ErrNotConnected) {
			t.Errorf("the Connect it stopped = %v, want ErrNotConnected", err)
		}
		synctest.Wait()
		if n := srv.OpenSessions(); n != 0 {
			t.Errorf("%d sessions open on the server, want 0", n)
		}
	})
}

func TestDisconnectKeepsTheLastFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sw := newSwitchable(t, mcptest.Script{})
		sw.crash()
		u := sw.upstream(t, nil)
		if err := u.Connect(t.Context()); !errors.Is(err, errRefused) {
			t.Fatalf("Connect = %v, want the refusal", err)
		}
		if err := u.Disconnect(t.Context()); err != nil {
			t.Fatal(err)
		}
		if snap := u.Snapshot(); snap.State != Disconnected || !errors.Is(snap.Err, errRefused) {
			t.Errorf("after Disconnect: %v, %v; want disconnected with the refusal kept", snap.State, snap.Err)
		}
	})
}

func TestReconfigure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := mcptest.NewServer(mcptest.Script{Resources: []mcptest.ResourceSpec{{URI: "mem://a", Name: "a"}}})
		defer srv.Close()
		var mu sync.Mutex
		var dialed [][]string // the args of each dial
		var log eventLog
		cfg := config.Server{Name: "r", Command: "in-memory", Args: []string{"--v1"}}
		u := New(cfg, &Options{OnEvent: log.add, Dial: func(ctx context.Context, srv2 config.Server) (mcp.Transport, error) {
			mu.Lock()
			dialed = append(dialed, srv2.Args)
			mu.Unlock()
			return srv.ConnectInMemory(ctx)
		}})
		defer u.Close(time.Time{})
		if err := u.Connect(t.Context()); err != nil {
			t.Fatal(err)
		}
		if err := u.Subscribe(t.Context(), "mem://a"); err != nil {
			t.Fatal(err)
		}
		configEvents := func() int { return len(log.ofKind(EventConfig)) }

		u.Reconfigure(cfg.Clone()) // the same: nothing
		synctest.Wait()
		if n := configEvents(); n != 0 || srv.Counts().Starts != 1 {
			t.Errorf("the same config: %d config events, %d handshakes; want 0 and 1", n, srv.Counts().Starts)
		}

		prefixed := cfg.Clone()
		prefixed.Prefix, prefixed.Required = new(string), true
		u.Reconfigure(prefixed) // what only the manager uses: no reconnect
		synctest.Wait()
		if n := configEvents(); n != 1 || srv.Counts().Starts != 1 || u.Config().Prefix == nil {
			t.Errorf("a new prefix: %d config events, %d handshakes, prefix %v; want 1, 1 and the new prefix", n, srv.Counts().Starts, u.Config().Prefix)
		}

		moved := prefixed.Clone()
		moved.Args = []string{"--v2"}
		u.Reconfigure(moved) // a clean reconnect with the new config
		waitState(t, u, Connected)
		mcptest.PassTime(refreshDelay)
		synctest.Wait()
		mu.Lock()
		last := dialed[len(dialed)-1]
		mu.Unlock()
		if srv.Counts().Starts != 2 || !slices.Equal(last, []string{"--v2"}) {
			t.Errorf("new args: %d handshakes, last dial with %v; want 2, --v2", srv.Counts().Starts, last)
		}
		if diff := cmp.Diff([]string{"mem://a"}, srv.Subscriptions()); diff != "" {
			t.Errorf("subscriptions after Reconfigure (-want +got):\n%s", diff)
		}

		off := moved.Clone()
		off.Enabled = new(bool)
		u.Reconfigure(off)
		synctest.Wait()
		if got := u.State(); got != Disabled || srv.OpenSessions() != 0 {
			t.Errorf("disabled: state %v, %d sessions; want disabled, 0", got, srv.OpenSessions())
		}
		if _, err := callTool(t.Context(), u, "echo", nil); !errors.Is(err, ErrNotConnected) || !strings.Contains(err.Error(), "disabled") {
			t.Errorf("call when disabled = %v, want ErrNotConnected saying so", err)
		}
		u.Start(nil)
		if got := u.State(); got != Disabled {
			t.Errorf("Start on a disabled server: %v", got)
		}

		u.Reconfigure(moved) // enabled again: disconnected, to be started
		if got := u.State(); got != Disconnected {
			t.Errorf("enabled again: %v, want disconnected", got)
		}
		if err := u.Connect(t.Context()); err != nil {
			t.Fatal(err)
		}
		mcptest.PassTime(refreshDelay)
		synctest.Wait()
		if diff := cmp.Diff([]string{"mem://a"}, srv.Subscriptions()); diff != "" {
			t.Errorf("subscriptions after disabling and enabling (-want +got):\n%s", diff)
		}
	})
}

// TestSubscriptionsSurviveEveryReconnect: a subscription belongs to the
// upstream, so every new session subscribes again, however it came.
func TestSubscriptionsSurviveEveryReconnect(t *testing.T) {
	script := mcptest.Script{Resources: []mcptest.ResourceSpec{{URI: "mem://a", Name: "a"}}}
	for _, tc := range []struct {
		name      string
		reconnect func(t *testing.T, u *Upstream, sw *switchable)
	}{
		{"automatic", func(t *testing.T, u *Upstream, sw *switchable) {
			restartServer(t, u, sw.srv)
		}},
		{"manual", func(t *testing.T, u *Upstream, sw *switchable) {
			if err := reconnect(t.Context(), u); err != nil {
				t.Fatal(err)
			}
		}},
		{"after failing", func(t *testing.T, u *Upstream, sw *switchable) {
			sw.crash()
			waitState(t, u, Reconnecting)
			mcptest.PassTime(time.Minute) // past the ladder
			waitState(t, u, Failed)
			sw.revive()
			if err := reconnect(t.Context(), u); err != nil {
				t.Fatal(err)
			}
		}},
		{"reconfigure", func(t *testing.T, u *Upstream, sw *switchable) {
			cfg := u.Config()
			cfg.Args = append(cfg.Args, "--changed")
			u.Reconfigure(cfg)
			waitState(t, u, Connected)
		}},
		{"disconnect and connect", func(t *testing.T, u *Upstream, sw *switchable) {
			if err := u.Disconnect(t.Context()); err != nil {
				t.Fatal(err)
			}
			if err := u.Connect(t.Context()); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				sw := newSwitchable(t, script)
				u := sw.connectedUpstream(t)
				if err := u.Subscribe(t.Context(), "mem://a"); err != nil {
					t.Fatal(err)
				}
				tc.reconnect(t, u, sw)
				mcptest.PassTime(refreshDelay)
				synctest.Wait()
				if diff := cmp.Diff([]string{"mem://a"}, sw.srv.Subscriptions()); diff != "" {
					t.Errorf("server subscriptions (-want +got):\n%s", diff)
				}
				if got := sw.srv.Counts().Subscribes; got != 2 {
					t.Errorf("%d subscribe requests, want 2: one per session", got)
				}
			})
		})
	}
}

// TestResourceListChangeDoesNotResubscribe: a resources list_changed
// reloads the list, and sends no subscription again.
func TestResourceListChangeDoesNotResubscribe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		u, srv := connectedInMemory(t, mcptest.Script{Resources: []mcptest.ResourceSpec{{URI: "mem://a", Name: "a"}}}, config.Server{}, nil)
		if err := u.Subscribe(t.Context(), "mem://a"); err != nil {
			t.Fatal(err)
		}
		for range 3 {
			srv.SetResources([]mcptest.ResourceSpec{{URI: "mem://a", Name: "a"}, {URI: "mem://b", Name: "b"}})
			settle(t)
		}
		if got := len(u.Snapshot().Resources); got != 2 {
			t.Fatalf("%d resources, want the reloaded 2", got)
		}
		if got := srv.Counts().Subscribes; got != 1 {
			t.Errorf("%d subscribe requests after 3 list changes, want the first only", got)
		}
	})
}

// TestProbeWaitHonoursTheCallersDeadline: a request that waits for
// another's probe of an idle session gives up at its own deadline, not the
// probe's.
func TestProbeWaitHonoursTheCallersDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		u, _ := connectedInMemory(t, mcptest.Script{Ping: mcptest.PingHang}, config.Server{}, nil)
		mcptest.PassTime(time.Minute)
		first := make(chan error, 1)
		go func() {
			_, err := callTool(context.Background(), u, "echo", nil) // probes: the ping hangs for its 1 s
			first <- err
		}()
		synctest.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := callTool(ctx, u, "echo", nil)
		if took := time.Since(start); took != 100*time.Millisecond || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("a call behind a probe = %v after %v, want its own deadline after 100ms", err, took)
		}
		if err := <-first; err != nil {
			t.Errorf("the probing call = %v, want success on a fresh session", err)
		}
	})
}

func TestSeedListsCachedToolsUntilTheServerDoes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		u, _ := inMemory(t, mcptest.Script{Tools: specs("live")}, config.Server{Timeout: ms(0)}, nil)
		u.Seed([]*mcp.Tool{{Name: "cached"}}, nil, "")
		if snap := u.Snapshot(); !snap.Cached || len(snap.Tools) != 1 || snap.Tools[0].Name != "cached" {
			t.Errorf("seeded: cached %v, tools %v", snap.Cached, toolNames(snap.Tools))
		}
		if err := u.Connect(t.Context()); err != nil {
			t.Fatal(err)
		}
		u.Seed([]*mcp.Tool{{Name: "stale"}}, nil, "") // too late: the server has listed its own
		if snap := u.Snapshot(); snap.Cached || len(snap.Tools) != 1 || snap.Tools[0].Name != "live" {
			t.Errorf("connected: cached %v, tools %v; want the server's", snap.Cached, toolNames(snap.Tools))
		}
	})
}

// TestSeedReportsCachedServerInfo: the serverInfo and instructions seeded
// with the tools are the snapshot's while it shows them, and the server's
// own replace them once it connects.
func TestSeedReportsCachedServerInfo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		u, _ := inMemory(t, mcptest.Script{Name: "live", Description: "Live words.", Instructions: "Live instructions.", Tools: specs("live")}, config.Server{Timeout: ms(0)}, nil)
		info := &mcp.Implementation{Name: "cached", Description: "Cached words.", Version: "1"}
		u.Seed([]*mcp.Tool{{Name: "cached"}}, info, "Cached instructions.")
		info.Description = "changed by the caller"
		snap := u.Snapshot()
		if snap.ServerInfo == nil || snap.ServerInfo.Description != "Cached words." || snap.Instructions != "Cached instructions." {
			t.Errorf("seeded: serverInfo %+v, instructions %q; want the cached ones", snap.ServerInfo, snap.Instructions)
		}
		if err := u.Connect(t.Context()); err != nil {
			t.Fatal(err)
		}
		snap = u.Snapshot()
		if snap.ServerInfo == nil || snap.ServerInfo.Name != "live" || snap.ServerInfo.Description != "Live words." || snap.Instructions != "Live instructions." {
			t.Errorf("connected: serverInfo %+v, instructions %q; want the server's", snap.ServerInfo, snap.Instructions)
		}

		// Nothing seeded: nothing reported before the server connects.
		v, _ := inMemory(t, mcptest.Script{Tools: specs("live")}, config.Server{Timeout: ms(0)}, nil)
		v.Seed(nil, info, "ignored")
		if snap := v.Snapshot(); snap.ServerInfo != nil || snap.Instructions != "" {
			t.Errorf("seeded no tools: serverInfo %+v, instructions %q; want none", snap.ServerInfo, snap.Instructions)
		}
	})
}

// TestSeedKeptWhenTheServerListsTheSame: a server that lists what was
// seeded keeps the seeded definitions, so that nothing downstream sees a
// change.
func TestSeedKeptWhenTheServerListsTheSame(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		u, ms := inMemory(t, mcptest.Script{Tools: specs("a", "b")}, config.Server{}, nil)
		probe, _ := connectedInMemory(t, mcptest.Script{Tools: specs("a", "b")}, config.Server{Name: "probe"}, nil)
		seeded := probe.Snapshot().Tools // as a cache would hold them
		u.Seed(seeded, nil, "")
		if err := u.Connect(t.Context()); err != nil {
			t.Fatal(err)
		}
		snap := u.Snapshot()
		if snap.Cached || len(snap.Tools) != 2 || &snap.Tools[0] != &seeded[0] {
			t.Errorf("after listing the same tools: cached %v, tools %v; want the seeded slice, listed", snap.Cached, toolNames(snap.Tools))
		}
		if ms.Counts().ListTools != 1 {
			t.Errorf("%d lists, want 1", ms.Counts().ListTools)
		}
	})
}

// TestStartBeginHoldsTheFirstAttempt: a server started with a begin signal is
// connecting at once, and dialed only once the signal comes.
func TestStartBeginHoldsTheFirstAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := mcptest.NewServer(mcptest.Script{Tools: specs("t")})
		defer srv.Close()
		var dials atomic.Int32
		u := New(config.Server{Name: "held", Command: "in-memory"}, &Options{
			Dial: func(ctx context.Context, _ config.Server) (mcp.Transport, error) {
				dials.Add(1)
				return srv.ConnectInMemory(ctx)
			},
		})
		defer u.Close(time.Time{})
		begin := make(chan struct{})
		done := u.Start(begin)
		synctest.Wait()
		if got := u.State(); got != Connecting {
			t.Errorf("state before the signal = %v, want connecting", got)
		}
		if got := dials.Load(); got != 0 {
			t.Fatalf("dialed %d times before the signal, want 0", got)
		}
		close(begin)
		<-done
		if got, n := u.State(), dials.Load(); got != Connected || n != 1 {
			t.Errorf("after the signal: state %v, %d dials; want connected, 1", got, n)
		}
	})
}

// TestCloseWhileStartIsHeld: Close does not wait for a signal that never
// comes, and nothing is dialed.
func TestCloseWhileStartIsHeld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var dials atomic.Int32
		u := New(config.Server{Name: "held", Command: "in-memory"}, &Options{
			Dial: func(context.Context, config.Server) (mcp.Transport, error) {
				dials.Add(1)
				return nil, errors.New("dialed")
			},
		})
		done := u.Start(make(chan struct{}))
		synctest.Wait() // the owner waits for the signal
		if err := u.Close(time.Time{}); err != nil {
			t.Errorf("Close = %v", err)
		}
		<-done
		if got, n := u.State(), dials.Load(); got != Closed || n != 0 {
			t.Errorf("state %v, %d dials; want closed, none", got, n)
		}
	})
}
