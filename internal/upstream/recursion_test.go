package upstream

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// refuser is a server that refuses to run, as a Switchboard started on a
// config that starts it does, until told otherwise; it counts the dials.
type refuser struct {
	srv *mcptest.Server

	mu      sync.Mutex
	refuse  bool
	dialed  int
	lastCfg config.Server
}

func (r *refuser) dial(ctx context.Context, srv config.Server) (mcp.Transport, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.dialed++
	r.lastCfg = srv
	if r.refuse {
		return nil, fmt.Errorf("%w (process exited with status %d)", ErrRecursion, config.ChainExitCode)
	}
	return r.srv.ConnectInMemory(ctx)
}

func (r *refuser) dials() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.dialed
}

func (r *refuser) set(refuse bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.refuse = refuse
}

// TestRefusalIsHeld: a server that refused to run inside the gateway
// (ErrRecursion) is failed and stays so, with no attempt on the schedule,
// early or checked, and calls fail at once with the reason; a manual
// reconnect tries it again, and so does a change of its config that
// concerns the connection, but not one that does not.
func TestRefusalIsHeld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &refuser{srv: mcptest.NewServer(mcptest.Script{}), refuse: true}
		defer r.srv.Close()
		srv := config.Server{Name: "sb", Command: "switchboard", Args: []string{"serve", "--stdio"}}
		u := New(srv, &Options{Dial: r.dial, Rand: func() float64 { return 0.5 }, Check: func(context.Context) error { return nil }})
		defer u.Close(time.Time{})

		if err := u.Connect(t.Context()); !errors.Is(err, ErrRecursion) {
			t.Fatalf("Connect = %v, want ErrRecursion", err)
		}
		held := func(when string, dials int) {
			t.Helper()
			mcptest.PassTime(time.Hour)
			synctest.Wait()
			if got := r.dials(); got != dials {
				t.Errorf("%s: %d dials in an hour, want %d", when, got, dials)
			}
			if s := u.Snapshot(); s.State != Failed || !errors.Is(s.Err, ErrRecursion) {
				t.Errorf("%s: state %v, error %v; want failed with ErrRecursion", when, s.State, s.Err)
			}
		}
		held("after the refusal", 1)

		start := time.Now()
		_, err := callTool(t.Context(), u, "echo", nil)
		if !errors.Is(err, ErrNotConnected) || !errors.Is(err, ErrRecursion) || time.Since(start) != 0 {
			t.Errorf("a call = %v after %v; want ErrNotConnected with ErrRecursion, at once", err, time.Since(start))
		}
		held("after a call", 1)

		if err := reconnect(t.Context(), u); !errors.Is(err, ErrRecursion) {
			t.Errorf("reconnect = %v, want ErrRecursion", err)
		}
		held("after a reconnect", 2)

		prefixed := srv.Clone()
		prefixed.Prefix = new(string)
		u.Reconfigure(prefixed)
		held("after a change of prefix", 2)

		r.set(false)
		changed := prefixed.Clone()
		changed.Args = append(changed.Args, "--config", "own.json")
		u.Reconfigure(changed)
		waitState(t, u, Connected)
		if got := r.dials(); got != 3 {
			t.Errorf("a change of its args: %d dials, want 3", got)
		}
	})
}

// TestRefusalWhileReconnecting: a server that refuses to run after it had
// connected (its process exited; its config changed meanwhile) leaves the
// ladder of quick attempts: it is failed, and held.
func TestRefusalWhileReconnecting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &refuser{srv: mcptest.NewServer(mcptest.Script{})}
		defer r.srv.Close()
		u := New(config.Server{Name: "sb", Command: "switchboard"}, &Options{Dial: r.dial, Rand: func() float64 { return 0.5 }})
		defer u.Close(time.Time{})
		if err := u.Connect(t.Context()); err != nil {
			t.Fatal(err)
		}
		r.set(true)
		r.srv.Restart() // the session is lost
		waitState(t, u, Failed)
		mcptest.PassTime(time.Hour)
		synctest.Wait()
		if got := r.dials(); got != 2 {
			t.Errorf("%d dials, want 2: the first, and the one at once after the loss", got)
		}
		if err := u.Snapshot().Err; !errors.Is(err, ErrRecursion) {
			t.Errorf("error %v, want ErrRecursion", err)
		}
	})
}
