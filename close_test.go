package switchboard

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// Close: its order, its timeout, and the connects it stops.

// A close during connect stops the Connect, which says why, and is not held
// up by it.
func TestCloseStopsALongConnect(t *testing.T) {
	for _, opts := range []Options{{Strict: true, StartupGate: DefaultStartupGate}, {Sequential: true, StartupGate: DefaultStartupGate}, {StartupGate: -1}} {
		t.Run(fmt.Sprintf("strict=%v,sequential=%v", opts.Strict, opts.Sequential), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFleet(t)
				f.add("hang", mcptest.Script{HangOnInitialize: true}) // 30 s timeout
				opts.Cache = CacheOff
				m := f.managerWith(&opts, server("hang"))
				connected := make(chan error, 1)
				go func() { connected <- m.Connect(context.Background()) }()
				synctest.Wait()
				start := time.Now()
				if err := m.Close(); err != nil {
					t.Errorf("Close = %v", err)
				}
				if took := time.Since(start); took > time.Second {
					t.Errorf("Close took %v, waiting for the Connect", took)
				}
				if err := <-connected; !errors.Is(err, ErrClosed) {
					t.Errorf("the Connect that Close stopped = %v, want ErrClosed", err)
				}
				if err := m.Connect(t.Context()); !errors.Is(err, ErrClosed) {
					t.Errorf("Connect after Close = %v, want ErrClosed", err)
				}
			})
		})
	}
}

// TestCloseKeepsItsTimeout: Close returns within CloseTimeout, with every
// child it started gone, though one server's process ignores stdin's close
// and SIGTERM and another never answers the DELETE that ends its session.
func TestCloseKeepsItsTimeout(t *testing.T) {
	cmd, args, env := mcptest.StdioCommand(mcptest.Script{})
	stubborn := config.Server{Name: "stubborn", Command: "/bin/sh",
		Args: append([]string{"-c", `trap '' TERM; "$@"; sleep 300`, "sh", cmd}, args...), Env: env}
	web := mcptest.NewServer(mcptest.Script{LegacyOnly: true})
	defer web.Close()
	hs, err := mcptest.StartHTTP(web)
	if err != nil {
		t.Fatal(err)
	}
	defer hs.Close()
	web.HangDeletes()
	m := New(&config.Config{Servers: []config.Server{stubborn, {Name: "web", URL: hs.URL}}},
		&Options{Cache: CacheOff, StartupGate: -1, CloseTimeout: time.Second})
	if err := m.Connect(t.Context()); err != nil {
		t.Fatal(err)
	}
	pid := m.Status()[0].PID
	if pid == 0 {
		t.Fatalf("status %+v: no PID", m.Status()[0])
	}
	start := time.Now()
	err = m.Close()
	if took := time.Since(start); took > time.Second+300*time.Millisecond {
		t.Errorf("Close took %v with a 1 s timeout", took)
	}
	if err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("Close = %v, want it to report the kill", err)
	}
	if err := mcptest.Gone(pid); err != nil {
		t.Errorf("the stubborn server's process outlived Close: %v", err)
	}
}

// TestCloseKeepsItsTimeoutDuringHandshakes: Close stops the handshakes in
// progress of many stdio servers that never answer, and returns within
// CloseTimeout: a stopped handshake waits for nothing.
func TestCloseKeepsItsTimeoutDuringHandshakes(t *testing.T) {
	var servers []config.Server
	for i := range 8 {
		servers = append(servers, config.Server{Name: fmt.Sprintf("mute%d", i), Command: "/bin/sh", Args: []string{"-c", "exec sleep 300"}})
	}
	m := New(&config.Config{Servers: servers}, &Options{Cache: CacheOff, CloseTimeout: time.Second})
	if err := m.Connect(t.Context()); err != nil { // returns at the gate
		t.Fatal(err)
	}
	start := time.Now()
	m.Close()
	if took := time.Since(start); took > time.Second+300*time.Millisecond {
		t.Errorf("Close took %v with a 1 s timeout", took)
	}
}

func TestCloseReverseOrderAndEvents(t *testing.T) {
	f := newFleet(t)
	var servers []config.Server
	for _, n := range []string{"first", "second", "third"} {
		f.add(n, mcptest.Script{})
		servers = append(servers, server(n))
	}
	m := f.manager(servers...)
	var mu sync.Mutex
	var closed []string
	m.Subscribe(func(ev Event) {
		if ev.Kind == EventState && ev.State == StateClosed {
			mu.Lock()
			closed = append(closed, ev.Server)
			mu.Unlock()
		}
	})
	if err := m.Connect(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatalf("Close = %v", err)
	}
	if err := m.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff([]string{"third", "second", "first"}, closed); diff != "" {
		t.Errorf("close order (-want +got):\n%s", diff)
	}
	if err := m.Connect(t.Context()); !errors.Is(err, ErrClosed) {
		t.Errorf("Connect after Close = %v, want ErrClosed", err)
	}
}
