package upstream

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// TestStaleHTTPSession restarts an HTTP server under a connected upstream.
// The next call finds its session gone (404, or the 400 that TypeScript
// servers answer), opens a new session and replays the call once: the
// server never ran it, so nothing runs twice.
func TestStaleHTTPSession(t *testing.T) {
	for _, mode := range []mcptest.UnknownSessionMode{mcptest.UnknownSession404, mcptest.UnknownSession400, mcptest.UnknownSession400Text} {
		t.Run(mode.String(), func(t *testing.T) {
			srv := mcptest.NewServer(mcptest.Script{LegacyOnly: true})
			srv.SetUnknownSession(mode)
			hs, err := mcptest.StartHTTP(srv)
			if err != nil {
				t.Fatal(err)
			}
			defer hs.Close()
			defer srv.Close()
			var log eventLog
			u := New(config.Server{Name: "web", URL: hs.URL}, &Options{OnEvent: log.add})
			defer u.Close(time.Time{})
			if err := u.Connect(t.Context()); err != nil {
				t.Fatal(err)
			}
			if res, err := callTool(t.Context(), u, "increment", nil); err != nil || mcptest.Text(res) != "1" {
				t.Fatalf("first increment = %v, %v", res, err)
			}
			// The server restarts behind its listener: every session is
			// forgotten, as behind a proxy that kept the connections.
			srv.Restart()
			res, err := callTool(t.Context(), u, "increment", nil)
			if err != nil || mcptest.Text(res) != "2" {
				t.Fatalf("increment after the restart = %v, %v; want 2, replayed on a new session", res, err)
			}
			if got := srv.Counts().ByTool["increment"]; got != 2 {
				t.Errorf("increment ran %d times, want 2: the stale call never ran", got)
			}
			if got := srv.Counts().Starts; got != 2 {
				t.Errorf("%d sessions, want 2", got)
			}
		})
	}
}

// TestHTTPServerProcessRestart stops and starts a real listener: the
// connections die with the sessions. A read-only call just works; a call
// that is not idempotent either works or, if it raced the restart on a
// connection that died after it was written, fails as ambiguous. It never
// runs twice.
func TestHTTPServerProcessRestart(t *testing.T) {
	srv := mcptest.NewServer(mcptest.Script{LegacyOnly: true})
	hs, err := mcptest.StartHTTP(srv)
	if err != nil {
		t.Fatal(err)
	}
	defer hs.Close()
	defer srv.Close()
	u := New(config.Server{Name: "web", URL: hs.URL}, nil)
	defer u.Close(time.Time{})
	if err := u.Connect(t.Context()); err != nil {
		t.Fatal(err)
	}
	// Few restarts: more than six connection attempts in 30 s would trip
	// the breaker, as a crash loop should.
	if err := hs.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := hs.Start(); err != nil {
		t.Fatal(err)
	}
	if res, err := callTool(t.Context(), u, "echo", map[string]any{"x": 1.0}); err != nil || mcptest.Text(res) != `{"x":1}` {
		t.Fatalf("echo after a restart = %v, %v", res, err)
	}
	calls, ok := 0, 0
	for range 2 {
		if err := hs.Stop(); err != nil {
			t.Fatal(err)
		}
		if err := hs.Start(); err != nil {
			t.Fatal(err)
		}
		calls++
		_, err := callTool(t.Context(), u, "increment", nil)
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, ErrAmbiguous):
			t.Errorf("increment after a restart = %v, want success or ErrAmbiguous", err)
		}
	}
	if got := srv.Counts().ByTool["increment"]; got < ok || got > calls {
		t.Errorf("increment ran %d times for %d calls (%d succeeded): a call ran twice", got, calls, ok)
	}
}

// The KA scenarios (kagent PR #1418, seed-behaviours §4.3) map onto these
// tests as follows; KA validated the session on every call with a ping and
// a tools/list, where Switchboard probes only a session idle for 30 s and
// learns of a stale session from the request itself:
//
//  1. ping and list succeed: same session         TestIdleSessionProbe "ping succeeds"
//  2. ping fails ("Session terminated"): fresh    TestIdleSessionProbe "ping fails"
//  3. server truly down: the error propagates     TestProbeFailsWhenServerDown
//  4. ping hangs: 1 s timeout, fresh session      TestIdleSessionProbe "ping hangs"
//  5. ping -32601: alive, same session            TestIdleSessionProbe "method not found"
//  6. a request finds the session terminated      TestStaleHTTPSession (400 naming it)
//  7. a request gets 404: fresh session           TestStaleHTTPSession (404)
//  8. a request times out: no new session         TestCallTimeoutDoesNotRecreateSession
//
// Closing the stale session never delays or fails the recovery: it is
// closed in the background (TestHungDeleteDelaysNothing).
func TestIdleSessionProbe(t *testing.T) {
	for _, tc := range []struct {
		name      string
		ping      mcptest.PingMode
		idle      time.Duration
		wantStart int // handshakes: 1 reuses the session, 2 makes a fresh one
	}{
		{"recent session is not probed", mcptest.PingHang, 10 * time.Second, 1},
		{"ping succeeds: same session", mcptest.PingAnswer, time.Minute, 1},
		{"ping fails: fresh session", mcptest.PingFail, time.Minute, 2},
		{"ping hangs: timeout, fresh session", mcptest.PingHang, time.Minute, 2},
		{"ping method not found: alive", mcptest.PingMethodNotFound, time.Minute, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				u, srv := connectedInMemory(t, mcptest.Script{Ping: tc.ping}, config.Server{}, nil)
				mcptest.PassTime(tc.idle)
				start := time.Now()
				res, err := callTool(t.Context(), u, "increment", nil)
				if err != nil || mcptest.Text(res) != "1" {
					t.Fatalf("call = %v, %v", res, err)
				}
				if got := srv.Counts().Starts; got != tc.wantStart {
					t.Errorf("%d handshakes, want %d", got, tc.wantStart)
				}
				if tc.ping == mcptest.PingHang && tc.wantStart == 2 {
					if waited := time.Since(start); waited != probeTimeout {
						t.Errorf("the probe waited %v, want its 1 s timeout", waited)
					}
				}
			})
		})
	}
}

// TestProbeFailsWhenServerDown: the probe fails and the server cannot be
// reached again: the error propagates (KA: a server truly down).
func TestProbeFailsWhenServerDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sw := newSwitchable(t, mcptest.Script{Ping: mcptest.PingFail})
		u := sw.upstream(t, nil)
		if err := u.Connect(t.Context()); err != nil {
			t.Fatal(err)
		}
		mcptest.PassTime(time.Minute)
		sw.mu.Lock()
		sw.down = true
		sw.mu.Unlock()
		_, err := callTool(t.Context(), u, "increment", nil)
		if !errors.Is(err, errRefused) {
			t.Errorf("call = %v, want the refusal", err)
		}
		if got := sw.srv.Counts().ByTool["increment"]; got != 0 {
			t.Errorf("increment ran %d times, want 0", got)
		}
	})
}

// TestCallTimeoutDoesNotRecreateSession: a request that times out says so;
// the session stays (KA: a list_tools timeout is not a stale session).
func TestCallTimeoutDoesNotRecreateSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		u, srv := connectedInMemory(t, mcptest.Script{CallDelay: time.Minute}, config.Server{Timeout: ms(1000)}, nil)
		_, err := callTool(context.Background(), u, "increment", nil)
		if !errors.Is(err, ErrTimeout) || !errors.Is(err, ErrAmbiguous) {
			t.Errorf("call = %v, want a timeout reported as ambiguous", err)
		}
		if got := srv.Counts().Starts; got != 1 {
			t.Errorf("%d handshakes, want the session kept", got)
		}
		if u.State() != Connected {
			t.Errorf("state %v, want connected", u.State())
		}
	})
}

// TestModernSessionProbedWithDiscover: a stateless-era session has no ping;
// when idle it is probed with server/discover.
func TestModernSessionProbedWithDiscover(t *testing.T) {
	srv := mcptest.NewServer(mcptest.Script{})
	hs, err := mcptest.StartHTTP(srv)
	if err != nil {
		t.Fatal(err)
	}
	defer hs.Close()
	defer srv.Close()
	u := New(config.Server{Name: "modern", URL: hs.StatelessURL}, nil)
	defer u.Close(time.Time{})
	if err := u.Connect(t.Context()); err != nil {
		t.Fatal(err)
	}
	if v := u.Snapshot().ProtocolVersion; v < modernProtocolVersion {
		t.Fatalf("protocol %q, want the stateless era", v)
	}
	idle := func() {
		u.sup.mu.Lock()
		u.sup.sess.lastUsed.Store(time.Now().Add(-2 * idleProbe).UnixNano())
		u.sup.mu.Unlock()
	}
	idle()
	before := srv.Counts().Starts
	if _, err := callTool(t.Context(), u, "echo", nil); err != nil {
		t.Fatalf("call after idling = %v", err)
	}
	if got := srv.Counts().Starts - before; got != 1 {
		t.Errorf("%d discover probes, want 1", got)
	}
	if _, err := callTool(t.Context(), u, "echo", nil); err != nil || srv.Counts().Starts-before != 1 {
		t.Errorf("a call right after = %v, with %d probes; want no new probe", err, srv.Counts().Starts-before)
	}
}
