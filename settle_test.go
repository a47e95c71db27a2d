package switchboard

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// connectInBackground starts m.Connect and returns once every goroutine of
// the bubble is blocked: the servers are started and Connect waits at its
// gate. Connect's error is checked when the test ends.
func connectInBackground(t *testing.T, m *Manager) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- m.Connect(context.Background()) }()
	synctest.Wait()
	t.Cleanup(func() {
		if err := <-done; err != nil {
			t.Errorf("Connect = %v", err)
		}
	})
}

// settleTook runs m.settle and returns how long it took, on the bubble's
// clock.
func settleTook(t *testing.T, m *Manager) time.Duration {
	t.Helper()
	start := time.Now()
	m.settle(t.Context())
	return time.Since(start)
}

// reconnectSlowly makes m's server s connecting again, with a manual
// reconnect whose dial takes a second.
func reconnectSlowly(t *testing.T, f *fleet, m *Manager) {
	t.Helper()
	f.delay("s", time.Second)
	go m.Reconnect(context.Background(), "s")
	synctest.Wait()
	if st := m.Status()[0].State; st != StateConnecting {
		t.Fatalf("state = %v, want connecting", st)
	}
}

// TestSettleWaitsNoLongerThanTheGate: a request that settles waits for the
// servers making their first connection, never past the startup gate of
// each; a server that connects within it is in the view, and one that
// takes longer is not waited for, nor is a hanging one.
func TestSettleWaitsNoLongerThanTheGate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t)
		f.add("hang", mcptest.Script{HangOnInitialize: true})
		f.add("quick", mcptest.Script{Tools: tools("q")})
		f.delay("quick", 100*time.Millisecond)
		f.add("late", mcptest.Script{Tools: tools("l")})
		f.delay("late", time.Second)
		m := f.managerWith(&Options{StartupGate: DefaultStartupGate, Cache: CacheOff}, server("hang"), server("quick"), server("late"))
		connectInBackground(t, m)

		if took := settleTook(t, m); took != DefaultStartupGate {
			t.Errorf("Settle during the gate took %v, want the rest of the %v gate", took, DefaultStartupGate)
		}
		if diff := cmp.Diff([]string{"quick__q"}, names(m.Tools(t.Context(), nil))); diff != "" {
			t.Errorf("tools after Settle (-want +got):\n%s", diff)
		}
		if took := settleTook(t, m); took != 0 {
			t.Errorf("Settle after the gate took %v, want no wait: every gate has passed", took)
		}
	})
}

// TestSettleNeverWaitsForAServerWithSomethingToShow: a server with tools in
// the persistent cache, or one that has failed once, is never waited for,
// even within its gate.
func TestSettleNeverWaitsForAServerWithSomethingToShow(t *testing.T) {
	t.Run("cached tools", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			dir := t.TempDir()
			f := newFleet(t)
			f.add("s", mcptest.Script{Tools: tools("t")})
			first := f.managerWith(&Options{CacheDir: dir}, server("s"))
			if err := first.Connect(t.Context()); err != nil {
				t.Fatal(err)
			}
			first.Close() // its cache write is done

			f = newFleet(t)
			f.add("s", mcptest.Script{HangOnInitialize: true})
			m := f.managerWith(&Options{CacheDir: dir, StartupGate: DefaultStartupGate}, server("s"))
			connectInBackground(t, m)
			if took := settleTook(t, m); took != 0 {
				t.Errorf("Settle took %v, want no wait for a server with cached tools", took)
			}
			if diff := cmp.Diff([]string{"s__t"}, names(m.Tools(t.Context(), nil))); diff != "" {
				t.Errorf("tools (-want +got):\n%s", diff)
			}
		})
	})
	t.Run("connected before", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			f := newFleet(t)
			f.add("s", mcptest.Script{Tools: tools("t")})
			m := f.managerWith(&Options{StartupGate: DefaultStartupGate, Cache: CacheOff}, server("s"))
			connectInBackground(t, m)
			synctest.Wait() // connected, lists loaded
			reconnectSlowly(t, f, m)
			if took := settleTook(t, m); took != 0 {
				t.Errorf("Settle took %v, want no wait for a server that has listed its tools before", took)
			}
		})
	})
	t.Run("failed once", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			f := newFleet(t)
			f.add("s", mcptest.Script{Tools: tools("t")})
			f.fail("s", errors.New("connection refused"))
			m := f.managerWith(&Options{StartupGate: DefaultStartupGate, Cache: CacheOff}, server("s"))
			connectInBackground(t, m) // the first attempt fails at once
			f.fail("s", nil)
			reconnectSlowly(t, f, m)
			if took := settleTook(t, m); took != 0 {
				t.Errorf("Settle took %v, want no wait for a server that has failed once", took)
			}
		})
	})
}

// TestWaitSettled: WaitSettled waits for the servers it names, each until
// it has connected and listed or failed, and no longer than its context: a
// server that hangs is still connecting when the context ends, and the
// others that settled meanwhile are in the views. It starts nothing, and a
// name that no server has is an error.
func TestWaitSettled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t)
		f.add("hang", mcptest.Script{HangOnInitialize: true})
		f.add("late", mcptest.Script{Tools: tools("l")})
		f.delay("late", 2*time.Second)
		f.add("idle", mcptest.Script{Tools: tools("i")})
		m := f.managerWith(&Options{Cache: CacheOff}, server("hang"), server("late"), server("idle"))
		m.view.Load().byName["hang"].Start(nil)
		m.view.Load().byName["late"].Start(nil)

		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		start := time.Now()
		err := m.WaitSettled(ctx, "late")
		if err != nil || time.Since(start) != 2*time.Second {
			t.Errorf("WaitSettled(late) = %v after %v, want nil after the 2s it takes to connect", err, time.Since(start))
		}
		if diff := cmp.Diff([]string{"late__l"}, names(m.Tools(t.Context(), nil))); diff != "" {
			t.Errorf("tools after WaitSettled (-want +got):\n%s", diff)
		}

		err = m.WaitSettled(ctx)
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != 5*time.Second {
			t.Errorf("WaitSettled() = %v after %v, want the context's deadline, at 5s", err, time.Since(start))
		}
		st := m.Status()
		for name, want := range map[string]State{"hang": StateConnecting, "late": StateConnected, "idle": StateDisconnected} {
			if s, _ := st.Server(name); s.State != want {
				t.Errorf("%s: state %v, want %v", name, s.State, want)
			}
		}

		if err := m.WaitSettled(t.Context(), "idle"); err != nil {
			t.Errorf("WaitSettled of a server not started = %v, want nil at once", err)
		}
		if err := m.WaitSettled(t.Context(), "late", "ghost"); !errors.Is(err, ErrUnknownServer) {
			t.Errorf("WaitSettled(ghost) = %v, want ErrUnknownServer", err)
		}
	})
}
