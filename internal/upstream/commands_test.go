package upstream

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// Commands that meet: each is answered, and none inherits what another
// left behind (a schedule, a breaker, a request for an early attempt).

// drain reads sw's dials until the test ends, for tests that do not count
// them.
func (s *switchable) drain(t *testing.T) {
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	go func() {
		for {
			select {
			case <-s.dials:
			case <-stop:
				return
			}
		}
	}()
}

// TestDisconnectOvertakenByClose: a Disconnect that the owner had not yet
// taken when Close came returns when Close has closed everything.
func TestDisconnectOvertakenByClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		u := New(config.Server{Name: "slow", Command: "in-memory"}, &Options{
			Dial: func(context.Context, config.Server) (mcp.Transport, error) {
				<-release // ignores its context, as a slow spawn does
				return nil, errRefused
			},
		})
		u.Start(nil)
		synctest.Wait() // the owner is in the dial
		disconnected := make(chan error, 1)
		go func() { disconnected <- u.Disconnect(context.Background()) }()
		synctest.Wait()
		closed := make(chan error, 1)
		go func() { closed <- u.Close(time.Time{}) }()
		synctest.Wait()
		close(release)
		if err := <-closed; err != nil {
			t.Errorf("Close = %v", err)
		}
		synctest.Wait()
		select {
		case err := <-disconnected:
			if err != nil {
				t.Errorf("Disconnect = %v, want nil: there was no session to close", err)
			}
		default:
			t.Error("Disconnect still waits after Close returned")
		}
	})
}

// TestStartAfterDisconnectTriesAtOnce: a server that failed for a while,
// then disconnected and started again, is tried at once, not when its old
// schedule said; whether the owner took the Disconnect before the Start or
// not.
func TestStartAfterDisconnectTriesAtOnce(t *testing.T) {
	for _, waited := range []bool{true, false} {
		name := "disconnect done"
		if !waited {
			name = "disconnect pending"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				sw := newSwitchable(t, mcptest.Script{})
				sw.down = true
				sw.drain(t)
				u := sw.upstream(t, nil)
				u.Start(nil)
				mcptest.PassTime(40 * time.Second) // on the background schedule: next attempt at 52.5 s
				ctx, cancel := context.WithCancel(context.Background())
				if !waited {
					cancel() // the Disconnect returns before the owner takes it
				}
				u.Disconnect(ctx)
				cancel()
				sw.revive()
				start := time.Now()
				ctx, cancel = context.WithTimeout(context.Background(), 10*time.Minute)
				defer cancel()
				if err := u.Connect(ctx); err != nil {
					t.Fatalf("Connect = %v", err)
				}
				if took := time.Since(start); took != 0 {
					t.Errorf("connected %v after the Start, want at once", took)
				}
			})
		})
	}
}

// TestReconfigureKeepsTheSlotsOfCallsInFlight: a serialized server stays
// serialized across a change that keeps its limits, whether it moves only
// the source or changes what the manager uses.
func TestReconfigureKeepsTheSlotsOfCallsInFlight(t *testing.T) {
	for _, change := range []struct {
		name  string
		apply func(*config.Server)
	}{
		{"source", func(s *config.Server) { s.Source = "/elsewhere/mcp.json" }},
		{"prefix", func(s *config.Server) { s.Prefix = new("p") }},
	} {
		t.Run(change.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				u, _ := connectedInMemory(t, mcptest.Script{CallDelay: time.Second}, config.Server{SerializeRequests: true}, nil)
				start := time.Now()
				var wg sync.WaitGroup
				ended := make([]time.Duration, 2)
				call := func(i int) {
					wg.Go(func() {
						if _, err := callTool(context.Background(), u, "echo", nil); err != nil {
							t.Errorf("call %d = %v", i, err)
						}
						ended[i] = time.Since(start)
					})
				}
				call(0)
				synctest.Wait() // the first call holds the slot
				cfg := u.Config()
				change.apply(&cfg)
				u.Reconfigure(cfg)
				call(1)
				wg.Wait()
				if ended[1] != 2*time.Second {
					t.Errorf("the second call of a serialized server ended at %v, want 2s: after the first", ended[1])
				}
			})
		})
	}
}

// TestReconnectSupersedesACrashLoopAttempt: a manual reconnect while a
// crash-loop attempt is in progress makes a fresh attempt at once, rather
// than sharing one whose failure would keep the server in crash-loop for
// another five minutes.
func TestReconnectSupersedesACrashLoopAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		crashing := mcptest.NewServer(mcptest.Script{ExitAfterListTools: true})
		defer crashing.Close()
		good := mcptest.NewServer(mcptest.Script{})
		defer good.Close()
		var mode atomic.Int32 // 0 crashing, 1 hanging, 2 good
		hanging := make(chan struct{}, 1)
		u := New(config.Server{Name: "loop", Command: "in-memory"}, &Options{
			Rand: func() float64 { return 0.5 },
			Dial: func(ctx context.Context, _ config.Server) (mcp.Transport, error) {
				switch mode.Load() {
				case 1:
					hanging <- struct{}{}
					<-ctx.Done()
					return nil, ctx.Err()
				case 2:
					return good.ConnectInMemory(ctx)
				}
				return crashing.ConnectInMemory(ctx)
			},
		})
		defer u.Close(time.Time{})
		u.Start(nil)
		waitState(t, u, CrashLoop)
		mode.Store(1)
		<-hanging // the background attempt, 5 min later, hangs
		mode.Store(2)
		start := time.Now()
		if err := reconnect(t.Context(), u); err != nil {
			t.Fatalf("reconnect = %v", err)
		}
		if took := time.Since(start); took != 0 {
			t.Errorf("reconnect took %v, want a fresh attempt at once", took)
		}
		if got := u.State(); got != Connected {
			t.Errorf("state %v after a reconnect, want connected", got)
		}
	})
}

// TestEarlyRequestRightAfterAFailedAttempt: by the time anyone hears that
// a scheduled attempt failed, the new step has begun: a request made at
// once may have its early attempt, and is not swept away with the old
// step's.
func TestEarlyRequestRightAfterAFailedAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sw := newSwitchable(t, mcptest.Script{})
		sw.down = true
		sw.drain(t)
		var u *Upstream
		var failures int
		u = New(config.Server{Name: "sw", Command: "in-memory"}, &Options{
			Dial: sw.dial,
			Rand: func() float64 { return 0.5 },
			OnEvent: func(ev Event) { // called under u.mu
				if ev.Kind != EventAttemptFailed {
					return
				}
				failures++
				// The first attempt, then an early one (below), then the
				// scheduled one at 0.5 s.
				if failures == 3 && (u.sup.earlyUsed || len(u.sup.early) != 0) {
					t.Errorf("as a scheduled attempt's failure is published: early attempt used %v, %d requests for one pending; want a new step", u.sup.earlyUsed, len(u.sup.early))
				}
			},
		})
		defer u.Close(time.Time{})
		u.Start(nil)
		synctest.Wait()
		callTool(context.Background(), u, "echo", nil) // the step's early attempt
		mcptest.PassTime(time.Second)                  // the scheduled attempt at 0.5 s has failed
		start := time.Now()
		callTool(context.Background(), u, "echo", nil)
		if waited := time.Since(start); waited != 0 {
			t.Errorf("a request in the new step waited %v, want its early attempt at once", waited)
		}
		if failures != 4 {
			t.Errorf("%d failed attempts, want 4", failures)
		}
	})
}

// TestFailedSubscribeKeepsTheSubscription: subscribing again to a resource
// while the server is down fails, and the first subscription still holds:
// it is renewed when the server is back.
func TestFailedSubscribeKeepsTheSubscription(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sw := newSwitchable(t, mcptest.Script{Resources: []mcptest.ResourceSpec{{URI: "mem://a", Name: "a"}}})
		sw.drain(t)
		u := sw.connectedUpstream(t)
		if err := u.Subscribe(t.Context(), "mem://a"); err != nil {
			t.Fatal(err)
		}
		sw.crash()
		waitState(t, u, Reconnecting)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		if err := u.Subscribe(ctx, "mem://a"); err == nil {
			t.Fatal("Subscribe while the server is down succeeded")
		}
		sw.revive()
		waitState(t, u, Connected)
		settle(t)
		if got := sw.srv.Subscriptions(); len(got) != 1 || got[0] != "mem://a" {
			t.Errorf("subscriptions after the server is back = %v, want [mem://a]", got)
		}
	})
}

// TestWaitErrorsSayWhatHappenedOnce: a request that waited for a
// connection says why it got none: the state once, and the last failure,
// even when its own time ran out first.
func TestWaitErrorsSayWhatHappenedOnce(t *testing.T) {
	t.Run("disconnected while waiting", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			u, _ := inMemory(t, mcptest.Script{HangOnInitialize: true}, config.Server{Timeout: ms(0)}, nil)
			u.Start(nil)
			called := make(chan error, 1)
			go func() { _, err := callTool(context.Background(), u, "echo", nil); called <- err }()
			synctest.Wait()
			u.Disconnect(t.Context())
			err := <-called
			if !errors.Is(err, ErrNotConnected) || strings.Count(err.Error(), "disconnected") != 1 {
				t.Errorf("call waiting when the server was disconnected = %q, want ErrNotConnected saying disconnected once", err)
			}
		})
	})
	t.Run("timed out while waiting", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			sw := newSwitchable(t, mcptest.Script{})
			sw.drain(t)
			u := New(config.Server{Name: "sw", Command: "in-memory", Timeout: ms(100)}, &Options{Dial: sw.dial, Rand: func() float64 { return 0.5 }})
			defer u.Close(time.Time{})
			if err := u.Connect(t.Context()); err != nil {
				t.Fatal(err)
			}
			sw.crash()
			waitState(t, u, Reconnecting)
			synctest.Wait()                                // the immediate attempt has failed
			callTool(context.Background(), u, "echo", nil) // has the step's early attempt
			_, err := callTool(context.Background(), u, "echo", nil)
			if !errors.Is(err, ErrTimeout) || !errors.Is(err, ErrReconnecting) || !errors.Is(err, errRefused) {
				t.Errorf("call that timed out waiting = %v, want ErrTimeout, ErrReconnecting and the cause", err)
			}
			if want := `server "sw": call tool "echo": timed out after 100ms: reconnecting; last error: connect: connection refused`; err.Error() != want {
				t.Errorf("call that timed out waiting says %q, want %q", err, want)
			}
		})
	})
	t.Run("connect stopped", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			u, _ := inMemory(t, mcptest.Script{HangOnInitialize: true}, config.Server{Timeout: ms(0)}, nil)
			connected := make(chan error, 1)
			go func() { connected <- u.Connect(context.Background()) }()
			synctest.Wait()
			u.Close(time.Time{})
			err := <-connected
			var e *Error
			if !errors.As(err, &e) || e.Server != "mem" || !errors.Is(err, ErrClosed) {
				t.Errorf("Connect stopped by Close = %v, want an *Error naming the server, wrapping ErrClosed", err)
			}
		})
	})
}

// TestConnectionKeyLeavesOutWhatOnlyTheHostUses: a change of prefix, tool
// filter, readiness, source, alwaysLoad, description, auditPayloads or pinning keeps the connection; one of the
// command does not.
func TestConnectionKeyLeavesOutWhatOnlyTheHostUses(t *testing.T) {
	base := config.Server{Name: "s", Command: "server"}
	for name, change := range map[string]func(*config.Server){
		"prefix":        func(s *config.Server) { s.Prefix = new("p") },
		"tools":         func(s *config.Server) { s.Tools.Allow = []string{"a*"} },
		"required":      func(s *config.Server) { s.Required = true },
		"source":        func(s *config.Server) { s.Source = "/elsewhere/mcp.json" },
		"alwaysLoad":    func(s *config.Server) { s.AlwaysLoad = true },
		"description":   func(s *config.Server) { s.Description = "Notes" },
		"auditPayloads": func(s *config.Server) { s.AuditPayloads = true },
		"pinning":       func(s *config.Server) { s.Pinning = config.PinningEnforce },
	} {
		changed := base.Clone()
		change(&changed)
		if connectionKey(changed) != connectionKey(base) {
			t.Errorf("a change of %s changes the connection", name)
		}
	}
	other := base.Clone()
	other.Command = "other-server"
	if connectionKey(other) == connectionKey(base) {
		t.Error("a change of command keeps the connection")
	}
}
