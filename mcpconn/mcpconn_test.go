package mcpconn

import (
	"errors"
	"fmt"
	"testing"
)

// TestStateWords: every state has the word /readyz and the status page show,
// and a state out of range says so instead of passing for another.
func TestStateWords(t *testing.T) {
	want := []string{"disconnected", "connecting", "connected", "reconnecting", "failed", "crash-loop", "disabled", "closed", "needs-auth"}
	for s := StateDisconnected; s <= StateNeedsAuth; s++ {
		if got := s.String(); got != want[s] {
			t.Errorf("State(%d) = %q, want %q", int(s), got, want[s])
		}
		if text, _ := s.MarshalText(); string(text) != want[s] {
			t.Errorf("State(%d) marshals as %q, want %q", int(s), text, want[s])
		}
	}
	if got := State(len(want)).String(); got != fmt.Sprintf("State(%d)", len(want)) {
		t.Errorf("a state out of range shows as %q", got)
	}
}

// TestUnavailableErrorWrapsItsStatesSentinel: a caller branches on the
// sentinel of the state the server was in, and still finds the cause.
func TestUnavailableErrorWrapsItsStatesSentinel(t *testing.T) {
	cause := &ServerError{Server: "web", Op: "connect", Err: errors.New("connection refused")}
	for state, sentinel := range map[State]error{
		StateConnecting:   ErrReconnecting,
		StateReconnecting: ErrReconnecting,
		StateCrashLoop:    ErrCircuitOpen,
		StateClosed:       ErrClosed,
		StateFailed:       ErrNotConnected,
		StateDisabled:     ErrNotConnected,
		StateNeedsAuth:    ErrNotConnected,
	} {
		err := error(&ServerError{Server: "web", Op: "call tool \"x\"", Err: &UnavailableError{State: state, Err: cause}})
		if !errors.Is(err, sentinel) {
			t.Errorf("%v: %v does not wrap %v", state, err, sentinel)
		}
		if !errors.Is(err, cause) {
			t.Errorf("%v: %v does not wrap its cause", state, err)
		}
	}
}

// TestErrorTexts: the texts name the server once, and say why a call was
// not replayed.
func TestErrorTexts(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{{
		&ServerError{Server: "web", Op: `call tool "x"`, Err: &UnavailableError{State: StateFailed, Err: &ServerError{Server: "web", Op: "connect", Err: errors.New("refused")}}},
		`server "web": call tool "x": failed; last error: connect: refused`,
	}, {
		&UnavailableError{State: StateCrashLoop},
		"crash-loop (circuit open: the server crashed too often)",
	}, {
		&AmbiguousError{Tool: "pay", Err: ErrTimeout},
		`the call may have run: tool "pay" is not marked idempotent or read-only, so it was not retried: timed out`,
	}} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("got  %s\nwant %s", got, tc.want)
		}
	}
	if err := (&AmbiguousError{Tool: "pay", Err: ErrTimeout}); !errors.Is(err, ErrAmbiguous) || !errors.Is(err, ErrTimeout) {
		t.Errorf("%v wraps neither ErrAmbiguous nor its cause", err)
	}
}
