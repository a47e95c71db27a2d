package upstream

import (
	"context"
	"errors"
	"fmt"
	"slices"
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

// The reconnect policy under traffic (design §3): calls never add attempts
// beyond the schedule but one early attempt per step, the breaker counts
// crashes and not failed attempts, and crash-loop is not terminal.

// callAll makes n concurrent calls of echo and returns their errors.
func callAll(u *Upstream, n int) []error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			_, errs[i] = callTool(context.Background(), u, "echo", nil)
		})
	}
	wg.Wait()
	return errs
}

// A callResult is when a call was made, when it ended, and its error.
type callResult struct {
	start, end time.Duration
	err        error
}

// TestShortOutageUnderTraffic: a server is down for 3 s while clients call
// it once a second. A call waits for the next attempt: an early one, if it
// is the first to ask in its step, else the scheduled one; calls that end
// before the server is back fail, naming the state and the cause. The
// server is connected by the first scheduled attempt after it is back, and
// the calls waiting for it succeed. However many callers there are, the
// attempts are the schedule's plus at most one early attempt per step, and
// the breaker never opens.
func TestShortOutageUnderTraffic(t *testing.T) {
	for _, callers := range []int{1, 100} {
		t.Run(fmt.Sprintf("%d callers", callers), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				sw := newSwitchable(t, mcptest.Script{})
				var log eventLog
				u, lost := sw.crashedAfterAMinute(t, &log)
				since := func() time.Duration { return time.Since(sw.start) - lost }
				at := func(d time.Duration) { mcptest.PassTime(d - since()) }

				var (
					mu      sync.Mutex
					results []callResult
					wg      sync.WaitGroup
				)
				callEach := func() {
					for range callers {
						wg.Go(func() {
							start := since()
							_, err := callTool(context.Background(), u, "echo", nil)
							mu.Lock()
							results = append(results, callResult{start, since(), err})
							mu.Unlock()
						})
					}
				}
				for _, d := range []time.Duration{250 * time.Millisecond, 1250 * time.Millisecond, 2250 * time.Millisecond} {
					at(d)
					callEach()
				}
				at(3 * time.Second)
				sw.revive()
				at(3250 * time.Millisecond)
				callEach()
				wg.Wait()

				back := 3500 * time.Millisecond // the first scheduled attempt after the server is back
				for _, r := range results {
					switch {
					case r.end > back:
						t.Errorf("a call made at %v ended at %v, after the server was connected at %v", r.start, r.end, back)
					case r.end == back && r.err != nil:
						t.Errorf("a call made at %v ended at %v with %v, want success: the server was connected", r.start, r.end, r.err)
					case r.end < back && (!errors.Is(r.err, ErrReconnecting) || !errors.Is(r.err, errRefused)):
						t.Errorf("a call made at %v during the outage = %v, want ErrReconnecting with the cause", r.start, r.err)
					case r.start == 3250*time.Millisecond && r.end != back:
						t.Errorf("a call made at %v after the server was back ended at %v, want %v", r.start, r.end, back)
					}
				}
				// Scheduled at 0, 0.5, 1.5 and 3.5 s; early at 0.25, 1.25 and
				// 2.25 s, one per step, whatever the number of callers.
				want := []time.Duration{0, 250 * time.Millisecond, 500 * time.Millisecond, 1250 * time.Millisecond,
					1500 * time.Millisecond, 2250 * time.Millisecond, back}
				if diff := cmp.Diff(want, sw.nextDials(len(sw.dials), lost)); diff != "" {
					t.Errorf("attempts (-want +got):\n%s", diff)
				}
				if u.State() != Connected || len(log.errs(CrashLoop)) != 0 {
					t.Errorf("state %v, %d crash-loops; want connected, none", u.State(), len(log.errs(CrashLoop)))
				}
			})
		})
	}
}

// TestLongOutageFollowsTheScheduleForever: a server down for half an hour,
// called every 10 s, is never left alone: the attempts follow the ladder,
// then the background schedule (15 s doubling to 5 min), with at most one
// early attempt between two scheduled ones; the breaker never opens, and
// the server is connected by the first scheduled attempt after it is back.
func TestLongOutageFollowsTheScheduleForever(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sw := newSwitchable(t, mcptest.Script{})
		var log eventLog
		u, lost := sw.crashedAfterAMinute(t, &log)
		for range 180 { // 30 min
			mcptest.PassTime(10 * time.Second)
			for _, err := range callAll(u, 10) {
				if err == nil {
					t.Fatal("a call succeeded while the server is down")
				}
			}
		}
		sw.revive()
		waitState(t, u, Connected)
		dials := sw.nextDials(len(sw.dials), lost)

		var scheduled []time.Duration // at once, then after each failure
		var next time.Duration
		for n := 1; next <= dials[len(dials)-1]; n++ {
			scheduled = append(scheduled, next)
			d, _ := reconnectDelay(n, func() float64 { return 0.5 })
			next += d
		}
		if last := scheduled[len(scheduled)-1]; dials[len(dials)-1] != last {
			t.Errorf("connected by an attempt at %v, want the scheduled one at %v", dials[len(dials)-1], last)
		}
		for i := 1; i < len(scheduled); i++ {
			var between int
			for _, d := range dials {
				if d > scheduled[i-1] && d < scheduled[i] {
					between++
				}
			}
			if between > 1 {
				t.Errorf("%d attempts between the scheduled ones at %v and %v, want at most one", between, scheduled[i-1], scheduled[i])
			}
		}
		for _, s := range scheduled {
			if !slices.Contains(dials, s) {
				t.Errorf("no attempt at %v, as scheduled", s)
			}
		}
		if n := len(log.errs(CrashLoop)); n != 0 {
			t.Errorf("%d crash-loops for a server that was down, want none", n)
		}
	})
}

// TestFixedCrashLoopRecoversUnattended: a server that crashes on start
// ends in crash-loop; once it is fixed, the next attempt, at the background
// maximum, connects it, with no manual reconnect. After a stable minute
// the breaker is closed: a later crash is an ordinary reconnect.
func TestFixedCrashLoopRecoversUnattended(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		crashing := mcptest.NewServer(mcptest.Script{ExitAfterListTools: true})
		defer crashing.Close()
		good := mcptest.NewServer(mcptest.Script{})
		defer good.Close()
		var fixed atomic.Bool
		var log eventLog
		u := New(config.Server{Name: "loop", Command: "in-memory"}, &Options{
			OnEvent: log.add,
			Rand:    func() float64 { return 0.5 },
			Dial: func(ctx context.Context, _ config.Server) (mcp.Transport, error) {
				if fixed.Load() {
					return good.ConnectInMemory(ctx)
				}
				return crashing.ConnectInMemory(ctx)
			},
		})
		defer u.Close(time.Time{})
		u.Start(nil)
		waitState(t, u, CrashLoop)
		looped := time.Now()
		fixed.Store(true)
		waitState(t, u, Connected)
		if took := time.Since(looped); took != backgroundMax {
			t.Errorf("recovered %v after the crash-loop began, want %v", took, backgroundMax)
		}
		if got := crashing.Counts().Starts; got != breakerLimit {
			t.Errorf("the crashing server was started %d times, want %d", got, breakerLimit)
		}
		mcptest.PassTime(stablePeriod)
		restartServer(t, u, good)
		synctest.Wait()
		if n := len(log.errs(CrashLoop)); n != 1 {
			t.Errorf("%d crash-loops, want only the first: a stable connection closes the breaker", n)
		}
	})
}
