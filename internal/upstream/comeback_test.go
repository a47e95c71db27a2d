package upstream

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// A server that comes back is in use again at once (design §3b): while
// requests want a server that is down, a cheap check finds out, at most
// once a second, whether it is back, and an attempt follows at once.

// checkedSwitchable is a switchable server whose upstreams check whether
// it is back.
func checkedSwitchable(t *testing.T) *switchable {
	s := newSwitchable(t, mcptest.Script{})
	s.checked = true
	return s
}

// record returns the dials and checks since s started, as offsets from
// base.
func (s *switchable) record(base time.Duration) (dials, checks []time.Duration) {
	for len(s.dials) > 0 {
		dials = append(dials, <-s.dials-base)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.checks {
		if c >= base {
			checks = append(checks, c-base)
		}
	}
	return dials, checks
}

// A timedCall is when a call was made, when it ended, and whether it
// succeeded.
type timedCall struct {
	start, end time.Time
	ok         bool
}

// callFor calls echo on u every 250 ms for d, and returns the calls.
func callFor(t *testing.T, u *Upstream, d time.Duration) []timedCall {
	stop := make(chan struct{})
	wait := callEvery(u, 250*time.Millisecond, stop)
	mcptest.PassTime(d)
	close(stop)
	return wait()
}

// callEvery calls echo on u every interval until stop is closed, and
// returns a function that waits for the calls and returns them.
func callEvery(u *Upstream, interval time.Duration, stop <-chan struct{}) func() []timedCall {
	var (
		mu    sync.Mutex
		calls []timedCall
		wg    sync.WaitGroup
	)
	wg.Go(func() {
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			wg.Go(func() {
				start := time.Now()
				_, err := callTool(context.Background(), u, "echo", nil)
				mu.Lock()
				calls = append(calls, timedCall{start, time.Now(), err == nil})
				mu.Unlock()
			})
			select {
			case <-tick.C:
			case <-stop:
				return
			}
		}
	})
	return func() []timedCall {
		wg.Wait()
		return calls
	}
}

// TestInUseAgainSoonAfterAnOutage: with a call every 250 ms, the first call
// after the server is back succeeds within 2 s, whether it was down for
// 3 s (the ladder), 15 s or a minute (the background schedule, whose
// attempts are 15 s and more apart), and every call made after that
// succeeds.
func TestInUseAgainSoonAfterAnOutage(t *testing.T) {
	for _, outage := range []time.Duration{3 * time.Second, 15 * time.Second, time.Minute} {
		t.Run(fmt.Sprint(outage), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				sw := checkedSwitchable(t)
				u, _ := sw.crashedAfterAMinute(t, nil)
				stop := make(chan struct{})
				wait := callEvery(u, 250*time.Millisecond, stop)
				mcptest.PassTime(outage)
				sw.revive()
				back := time.Now()
				mcptest.PassTime(5 * time.Second)
				close(stop)
				calls := wait()

				var first time.Time // the end of the first call that succeeded
				failed := 0         // calls made 2 s after the server was back that failed
				for _, c := range calls {
					if c.ok && (first.IsZero() || c.end.Before(first)) {
						first = c.end
					}
					if !c.ok && c.start.After(back.Add(2*time.Second)) {
						failed++
					}
				}
				if failed > 0 {
					t.Errorf("%d calls made from 2 s after the server was back failed", failed)
				}
				switch {
				case first.IsZero():
					t.Fatal("no call succeeded")
				case first.Before(back):
					t.Errorf("a call succeeded %v before the server was back", back.Sub(first))
				case first.Sub(back) > 2*time.Second:
					t.Errorf("the first call succeeded %v after the server was back, want within 2 s", first.Sub(back))
				}
				if u.State() != Connected {
					t.Errorf("state %v, want connected", u.State())
				}
			})
		})
	}
}

// TestChecksBackOffWhileAttemptsFail: where something answers for a server
// that is down, so that every check finds it back while every attempt is
// refused, the checks do not make an attempt a second: the time between
// them doubles with each failed attempt, as the schedule's does.
func TestChecksBackOffWhileAttemptsFail(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sw := checkedSwitchable(t)
		sw.answered = true
		u, lost := sw.crashedAfterAMinute(t, nil)
		callFor(t, u, 2*time.Minute)
		dials, at := sw.record(lost)

		var gaps []time.Duration
		for i := 1; i < len(at); i++ {
			gaps = append(gaps, at[i]-at[i-1])
		}
		// At 0, 2, 6, 14, 30 and 62 s; the next would be at 126 s.
		want := []time.Duration{2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 32 * time.Second}
		if diff := cmp.Diff(want, gaps); diff != "" {
			t.Errorf("time between checks (-want +got):\n%s", diff)
		}
		// The schedule's 8 attempts in 2 min, at most one early attempt
		// between two of them, and one attempt per check.
		if n, most := len(dials), 8+8+len(at); n > most {
			t.Errorf("%d attempts in 2 min, want at most %d", n, most)
		}
	})
}

// TestChecksStartAfreshAfterAnOutage: the checks of an outage back off
// from 1 s again, whatever the attempts of the one before came to.
func TestChecksStartAfreshAfterAnOutage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sw := checkedSwitchable(t)
		sw.answered = true
		u, _ := sw.crashedAfterAMinute(t, nil)
		callFor(t, u, 40*time.Second) // the checks back off, to 32 s apart
		sw.revive()                   // and the schedule's next attempt connects it
		waitState(t, u, Connected)
		mcptest.PassTime(stablePeriod)

		sw.crash()
		lost := time.Since(sw.start)
		callFor(t, u, 10*time.Second)
		_, checks := sw.record(lost)
		if diff := cmp.Diff([]time.Duration{0, 2 * time.Second, 6 * time.Second}, checks); diff != "" {
			t.Errorf("checks in the 10 s after the second loss (-want +got):\n%s", diff)
		}
	})
}

// TestNoChecksWithoutDemand: a server that is down and that no request
// wants is never checked; its attempts follow the schedule alone. Nor is
// one in crash-loop, whatever the demand: the breaker rules.
func TestNoChecksWithoutDemand(t *testing.T) {
	t.Run("no request", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			sw := checkedSwitchable(t)
			_, lost := sw.crashedAfterAMinute(t, nil)
			mcptest.PassTime(2 * time.Minute)
			dials, checks := sw.record(lost)
			if n := len(checks); n != 0 {
				t.Errorf("%d checks without a request", n)
			}
			want := []time.Duration{0, 500 * time.Millisecond, 1500 * time.Millisecond, 3500 * time.Millisecond, 7500 * time.Millisecond,
				22500 * time.Millisecond, 52500 * time.Millisecond, 112500 * time.Millisecond}
			if diff := cmp.Diff(want, dials); diff != "" {
				t.Errorf("attempts (-want +got):\n%s", diff)
			}
		})
	})
	t.Run("crash-loop", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			crashing := mcptest.NewServer(mcptest.Script{ExitAfterListTools: true})
			defer crashing.Close()
			var mu sync.Mutex
			checks := 0
			u := New(config.Server{Name: "loop", Command: "in-memory"}, &Options{
				Dial: func(ctx context.Context, _ config.Server) (mcp.Transport, error) {
					return crashing.ConnectInMemory(ctx)
				},
				Check: func(context.Context) error {
					mu.Lock()
					defer mu.Unlock()
					checks++
					return nil
				},
			})
			defer u.Close(time.Time{})
			u.Start(nil)
			waitState(t, u, CrashLoop)
			callFor(t, u, time.Minute)
			mu.Lock()
			defer mu.Unlock()
			if checks != 0 {
				t.Errorf("%d checks of a server in crash-loop", checks)
			}
		})
	})
}

// TestReach: the check of an http server is a TCP connect, which finds a
// server that listens and one that does not; where something answered for
// the server with a 502, 503 or 504 (a load balancer, say, that accepts
// connections while the server behind it is down), it is a HEAD request,
// whose answer must be another.
func TestReach(t *testing.T) {
	ms := mcptest.NewServer(mcptest.Script{})
	defer ms.Close()
	hs, err := mcptest.StartHTTP(ms)
	if err != nil {
		t.Fatal(err)
	}
	defer hs.Close()

	u := New(config.Server{Name: "r", URL: hs.URL}, nil)
	defer u.Close(time.Time{})
	if err := u.Connect(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := u.dial.check()(t.Context()); err != nil {
		t.Errorf("reach of a server that listens = %v", err)
	}
	if err := hs.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := u.dial.check()(t.Context()); err == nil {
		t.Error("reach of a server that does not listen = nil")
	}

	var front struct {
		sync.Mutex
		down bool
	}
	lb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		front.Lock()
		down := front.down
		front.Unlock()
		if down {
			http.Error(w, "no healthy upstream", http.StatusServiceUnavailable)
			return
		}
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}))
	defer lb.Close()
	front.down = true
	behind := New(config.Server{Name: "lb", URL: lb.URL + "/mcp"}, nil)
	defer behind.Close(time.Time{})
	if err := behind.Connect(t.Context()); err == nil {
		t.Fatal("Connect through a front whose server is down = nil")
	}
	if err := behind.dial.check()(t.Context()); !errors.Is(err, errGatewayAnswer) {
		t.Errorf("reach through a front whose server is down = %v, want %v", err, errGatewayAnswer)
	}
	front.Lock()
	front.down = false
	front.Unlock()
	if err := behind.dial.check()(t.Context()); err != nil {
		t.Errorf("reach through a front whose server is back = %v", err)
	}
}

// TestCheckGap: the checks back off from a second, jittered, and never
// come closer than a second apart.
func TestCheckGap(t *testing.T) {
	for _, tt := range []struct {
		failed int
		rand   float64
		want   time.Duration
	}{
		{0, 0, time.Second}, // jittered to 0.8 s: a second at least
		{0, 0.5, time.Second},
		{0, 1, 1200 * time.Millisecond},
		{1, 0, 1600 * time.Millisecond},
		{3, 0.5, 8 * time.Second},
		{20, 0.5, backgroundMax},
	} {
		c := checks{failed: tt.failed, rand: func() float64 { return tt.rand }}
		if got := c.gap(); got != tt.want {
			t.Errorf("gap after %d failed attempts, rand %v = %v, want %v", tt.failed, tt.rand, got, tt.want)
		}
	}
}
