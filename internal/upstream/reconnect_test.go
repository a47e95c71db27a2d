package upstream

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

var errRefused = errors.New("connection refused")

// switchable is an in-memory server that can be taken down: while down,
// dialing it is refused. Every dial is reported, with its (fake) time.
// With checked set, its upstreams check whether it is back (Options.Check),
// and the checks are recorded.
type switchable struct {
	srv     *mcptest.Server
	start   time.Time
	dials   chan time.Duration // buffered; the time of each dial since start
	checked bool

	mu       sync.Mutex
	down     bool
	answered bool            // a check finds it back even while it is down
	checks   []time.Duration // the time of each check since start
}

func newSwitchable(t *testing.T, script mcptest.Script) *switchable {
	s := &switchable{srv: mcptest.NewServer(script), start: time.Now(), dials: make(chan time.Duration, 100)}
	t.Cleanup(func() { s.srv.Close() })
	return s
}

func (s *switchable) dial(ctx context.Context, _ config.Server) (mcp.Transport, error) {
	// Whether the server is down is settled before the dial is reported, so
	// that a test that reacts to the report cannot change this dial's fate.
	s.mu.Lock()
	down := s.down
	s.mu.Unlock()
	s.dials <- time.Since(s.start)
	if down {
		return nil, errRefused
	}
	return s.srv.ConnectInMemory(ctx)
}

// crash takes the server down and drops its sessions.
func (s *switchable) crash() {
	s.mu.Lock()
	s.down = true
	s.mu.Unlock()
	s.srv.Restart()
}

func (s *switchable) revive() {
	s.mu.Lock()
	s.down = false
	s.mu.Unlock()
}

// check is the check of whether s is back: it is unless it is down, or
// when something answers for it.
func (s *switchable) check(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.checks = append(s.checks, time.Since(s.start))
	if s.down && !s.answered {
		return errRefused
	}
	return nil
}

// upstream returns an upstream on s, without jitter.
func (s *switchable) upstream(t *testing.T, log *eventLog) *Upstream {
	opts := &Options{Dial: s.dial, Rand: func() float64 { return 0.5 }}
	if log != nil {
		opts.OnEvent = log.add
	}
	if s.checked {
		opts.Check = s.check
	}
	u := New(config.Server{Name: "sw", Command: "in-memory"}, opts)
	t.Cleanup(func() { u.Close(time.Time{}) })
	return u
}

// connectedUpstream returns an upstream on s, connected.
func (s *switchable) connectedUpstream(t *testing.T) *Upstream {
	u := s.upstream(t, nil)
	if err := u.Connect(t.Context()); err != nil {
		t.Fatal(err)
	}
	return u
}

// reconnectingUpstream returns an upstream on s that connected, lost its
// server, and had its immediate attempt refused: it is reconnecting, and s
// is down. Call it in a synctest bubble.
func (s *switchable) reconnectingUpstream(t *testing.T) *Upstream {
	u := s.connectedUpstream(t)
	<-s.dials
	s.crash()
	<-s.dials // the immediate attempt, refused
	waitState(t, u, Reconnecting)
	synctest.Wait() // the refusal is published
	return u
}

// nextDials reads n dial times, as offsets from base.
func (s *switchable) nextDials(n int, base time.Duration) []time.Duration {
	var out []time.Duration
	for range n {
		out = append(out, <-s.dials-base)
	}
	return out
}

// crashedAfterAMinute returns an upstream on s, logged to log, whose server
// ran a stable minute and then went down: the loss is no crash for the
// breaker. It also returns when the loss happened, since s started.
func (s *switchable) crashedAfterAMinute(t *testing.T, log *eventLog) (*Upstream, time.Duration) {
	t.Helper()
	u := s.upstream(t, log)
	if err := u.Connect(t.Context()); err != nil {
		t.Fatal(err)
	}
	<-s.dials
	mcptest.PassTime(time.Minute)
	lost := time.Since(s.start)
	s.crash()
	return u, lost
}

func TestReconnectLadderThenBackground(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sw := newSwitchable(t, mcptest.Script{})
		var log eventLog
		u, lostAt := sw.crashedAfterAMinute(t, &log)

		// The ladder: at once, then after 0.5, 1, 2 and 4 s.
		got := sw.nextDials(5, lostAt)
		want := []time.Duration{0, 500 * time.Millisecond, 1500 * time.Millisecond, 3500 * time.Millisecond, 7500 * time.Millisecond}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("ladder attempts (-want +got):\n%s", diff)
		}
		waitState(t, u, Failed)
		snap := u.Snapshot()
		if !errors.Is(snap.Err, errRefused) || len(snap.Tools) == 0 {
			t.Errorf("after the ladder: err %v, %d tools; want the refusal and the stale tools still listed", snap.Err, len(snap.Tools))
		}

		// Then quietly in the background: 15 s later, then 30 s.
		got = sw.nextDials(2, lostAt+7500*time.Millisecond)
		want = []time.Duration{15 * time.Second, 45 * time.Second}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("background attempts (-want +got):\n%s", diff)
		}
		sw.revive()
		<-sw.dials // 60 s after the last: 2 min after the ladder
		waitState(t, u, Connected)
		wantT := []string{"disconnected>connecting", "connecting>connected", "connected>reconnecting", "reconnecting>failed", "failed>connected"}
		synctest.Wait() // events are delivered just after the state changes
		if diff := cmp.Diff(wantT, log.transitions()); diff != "" {
			t.Errorf("transitions (-want +got):\n%s", diff)
		}
	})
}

func TestLadderJitter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sw := newSwitchable(t, mcptest.Script{})
		u := New(config.Server{Name: "sw", Command: "in-memory"}, &Options{Dial: sw.dial}) // real jitter
		defer u.Close(time.Time{})
		if err := u.Connect(t.Context()); err != nil {
			t.Fatal(err)
		}
		<-sw.dials
		sw.crash()
		prev := <-sw.dials
		for _, step := range ladder[1:] {
			at := <-sw.dials
			gap := at - prev
			if lo, hi := step*8/10, step*12/10; gap < lo || gap > hi {
				t.Errorf("ladder step %v waited %v, outside ±20%%", step, gap)
			}
			prev = at
		}
	})
}

func TestStaleToolsStayListedWhileReconnecting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sw := newSwitchable(t, mcptest.Script{})
		u := sw.connectedUpstream(t)
		before := len(u.Snapshot().Tools)
		sw.crash()
		waitState(t, u, Reconnecting)
		if snap := u.Snapshot(); len(snap.Tools) != before {
			t.Errorf("reconnecting: %d tools listed, want the %d stale ones", len(snap.Tools), before)
		}
		// A call waits for the attempt it asks for, and says the server is
		// reconnecting when that fails.
		_, err := callTool(t.Context(), u, "echo", nil)
		if !errors.Is(err, ErrReconnecting) || !errors.Is(err, errRefused) {
			t.Errorf("call while down = %v, want ErrReconnecting with the cause", err)
		}
	})
}

func TestCallDuringReconnectWaitsAndSucceeds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sw := newSwitchable(t, mcptest.Script{})
		u := sw.reconnectingUpstream(t)
		sw.revive()
		// The ladder would wait 0.5 s; a call asks for an attempt now.
		start := time.Now()
		res, err := callTool(t.Context(), u, "add", map[string]any{"a": 1, "b": 2})
		if err != nil || mcptest.Text(res) != "3" {
			t.Fatalf("call after the server came back = %v, %v", res, err)
		}
		if waited := time.Since(start); waited != 0 {
			t.Errorf("the call waited %v for the ladder, want an attempt at once", waited)
		}
	})
}

func TestConcurrentCallsShareOneAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sw := newSwitchable(t, mcptest.Script{})
		u := sw.reconnectingUpstream(t)
		sw.revive()
		var wg sync.WaitGroup
		for range 10 {
			wg.Go(func() {
				if _, err := callTool(context.Background(), u, "echo", nil); err != nil {
					t.Errorf("call: %v", err)
				}
			})
		}
		wg.Wait()
		if n := len(sw.dials); n != 1 {
			t.Errorf("%d attempts for 10 waiting calls, want 1", n)
		}
	})
}

func TestManualReconnect(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := mcptest.NewServer(mcptest.Script{})
		defer srv.Close()
		gate := make(chan struct{})
		dials := 0
		u := New(config.Server{Name: "m", Command: "in-memory"}, &Options{
			Dial: func(ctx context.Context, _ config.Server) (mcp.Transport, error) {
				dials++ // only the owner goroutine dials
				if dials > 1 {
					<-gate // hold the reconnect until every caller has asked
				}
				return srv.ConnectInMemory(ctx)
			},
		})
		defer u.Close(time.Time{})
		if err := u.Connect(t.Context()); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for range 5 {
			wg.Go(func() {
				if err := reconnect(t.Context(), u); err != nil {
					t.Errorf("reconnect: %v", err)
				}
			})
		}
		synctest.Wait()
		close(gate)
		wg.Wait()
		if dials != 2 {
			t.Errorf("%d dials for 5 concurrent reconnects, want 2 (they share one)", dials)
		}
		if u.State() != Connected {
			t.Errorf("state = %v", u.State())
		}
	})
}

func TestBreakerTripsToCrashLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// A server that dies right after every tools/list.
		sw := newSwitchable(t, mcptest.Script{ExitAfterListTools: true})
		var log eventLog
		u := sw.upstream(t, &log)
		u.Start(nil)
		waitState(t, u, CrashLoop)
		if got := sw.srv.Counts().Starts; got != breakerLimit {
			t.Errorf("%d connections before the breaker opened, want %d", got, breakerLimit)
		}
		if snap := u.Snapshot(); len(snap.Tools) == 0 {
			t.Error("crash-loop: the tools are gone, want the last ones still listed")
		}
		_, err := callTool(t.Context(), u, "echo", nil)
		if !errors.Is(err, ErrCircuitOpen) || !strings.Contains(err.Error(), "crash-loop") || !strings.Contains(err.Error(), "server closed the connection") {
			t.Errorf("call in crash-loop = %v, want ErrCircuitOpen naming the state and the last cause", err)
		}
		// Crash-loop is not terminal: an attempt every 5 min, each of which
		// crashes again and keeps the breaker open.
		mcptest.PassTime(time.Hour)
		if got, want := sw.srv.Counts().Starts, breakerLimit+11; got != want {
			t.Errorf("%d connections an hour later, want %d: one every 5 min", got, want)
		}
		if u.State() != CrashLoop {
			t.Errorf("state %v an hour later, want still crash-loop", u.State())
		}
		// A manual reconnect closes the breaker: the server gets as many
		// crashes again.
		before := sw.srv.Counts().Starts
		if err := reconnect(t.Context(), u); err != nil {
			t.Errorf("reconnect = %v", err)
		}
		waitState(t, u, CrashLoop)
		if got := sw.srv.Counts().Starts - before; got != breakerLimit {
			t.Errorf("%d connections after a manual reconnect, want %d", got, breakerLimit)
		}
	})
}

func TestConnectAfterCloseIsNeverResurrected(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := mcptest.NewServer(mcptest.Script{})
		defer srv.Close()
		release := make(chan struct{})
		dialing := make(chan struct{})
		u := New(config.Server{Name: "slow", Command: "in-memory"}, &Options{
			Dial: func(ctx context.Context, _ config.Server) (mcp.Transport, error) {
				close(dialing)
				<-release // a dial that does not watch its context
				return srv.ConnectInMemory(context.Background())
			},
		})
		u.Start(nil)
		<-dialing
		closed := make(chan error)
		go func() { closed <- u.Close(time.Time{}) }()
		synctest.Wait()
		close(release)
		if err := <-closed; err != nil {
			t.Errorf("Close = %v", err)
		}
		if got := u.State(); got != Closed {
			t.Errorf("state = %v, want closed", got)
		}
		synctest.Wait()
		if n := srvSessions(srv); n != 0 {
			t.Errorf("%d server sessions left open, want the late connection closed", n)
		}
	})
}

// srvSessions returns how many sessions srv has open.
func srvSessions(srv *mcptest.Server) int { return srv.OpenSessions() }

func TestCrashLoopEventNamesTheCause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sw := newSwitchable(t, mcptest.Script{ExitAfterListTools: true})
		var log eventLog
		u := sw.upstream(t, &log)
		u.Start(nil)
		waitState(t, u, CrashLoop)
		errs := log.errs(CrashLoop)
		if len(errs) != 1 || !strings.Contains(errs[0].Error(), `server "sw": session: server closed the connection`) {
			t.Errorf("crash-loop events = %v, want one with the last crash's cause", errs)
		}
	})
}

// TestReconnectRefreshesTools: a server that comes back with other tools is
// listed again after its first answer; until then the stale list serves.
func TestReconnectRefreshesTools(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sw := newSwitchable(t, mcptest.Script{Tools: []mcptest.ToolSpec{{Name: "old"}}})
		u := sw.connectedUpstream(t)
		sw.srv.SetTools([]mcptest.ToolSpec{{Name: "old"}, {Name: "new"}})
		sw.srv.Restart() // it comes back at once, with two tools
		synctest.Wait()  // the reconnect is made; the list waits for an answer
		if diff := cmp.Diff([]string{"old"}, toolNames(u.Snapshot().Tools)); diff != "" {
			t.Errorf("tools before the first answer (-want +got):\n%s", diff)
		}
		if _, err := callTool(t.Context(), u, "old", nil); err != nil {
			t.Fatalf("call across the restart = %v", err)
		}
		synctest.Wait()
		if diff := cmp.Diff([]string{"new", "old"}, toolNames(u.Snapshot().Tools)); diff != "" {
			t.Errorf("tools after the reconnect (-want +got):\n%s", diff)
		}
	})
}

// TestReconnectRefreshesToolsWithoutCalls: with no call to wait for, the
// list is refreshed after a moment.
func TestReconnectRefreshesToolsWithoutCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sw := newSwitchable(t, mcptest.Script{Tools: []mcptest.ToolSpec{{Name: "old"}}})
		u := sw.connectedUpstream(t)
		sw.srv.SetTools([]mcptest.ToolSpec{{Name: "new"}})
		sw.srv.Restart()
		mcptest.PassTime(refreshDelay + time.Millisecond)
		synctest.Wait()
		if diff := cmp.Diff([]string{"new"}, toolNames(u.Snapshot().Tools)); diff != "" {
			t.Errorf("tools after the reconnect (-want +got):\n%s", diff)
		}
	})
}

// TestNoGoroutineGrowthOverReconnects: a thousand restarts of a server,
// each followed by a reconnect and a call, leave no goroutine behind.
func TestNoGoroutineGrowthOverReconnects(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		u, srv := connectedInMemory(t, mcptest.Script{}, config.Server{}, nil)
		defer u.Close(time.Time{})
		cycle := func() {
			srv.Restart()
			// Far apart enough that no crash loop is seen.
			mcptest.PassTime(time.Hour)
			synctest.Wait()
			if u.State() != Connected {
				t.Fatalf("after a restart: %v, want connected", u.State())
			}
			if _, err := callTool(t.Context(), u, "add", map[string]any{"a": 1, "b": 2}); err != nil {
				t.Fatal(err)
			}
		}
		for range 10 {
			cycle()
		}
		synctest.Wait()
		before := runtime.NumGoroutine()
		for range 1000 {
			cycle()
		}
		synctest.Wait()
		if after := runtime.NumGoroutine(); after > before {
			t.Errorf("goroutines: %d after 10 reconnects, %d after 1,010", before, after)
		}
		if got := u.Snapshot().Reconnects; got != 1010 {
			t.Errorf("reconnects = %d, want 1010", got)
		}
	})
}
