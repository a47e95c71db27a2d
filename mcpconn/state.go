package mcpconn

import "fmt"

// State is a server's connectivity state.
type State int

// The states of a server. The zero value, StateDisconnected, is that of a
// server that is not running: not connected yet, or disconnected. All but
// disconnected and closed are the words of /readyz.
const (
	StateDisconnected State = iota
	StateConnecting
	StateConnected
	StateReconnecting // lost its connection; on the ladder of quick attempts
	StateFailed       // not connected; retried on the schedule, for ever
	StateCrashLoop    // crashed too often; retried every 5 min, for ever
	StateDisabled
	StateClosed
	StateNeedsAuth // asks for a login no stored token answers; run: switchboard login NAME
)

var stateNames = [...]string{
	StateDisconnected: "disconnected",
	StateConnecting:   "connecting",
	StateConnected:    "connected",
	StateReconnecting: "reconnecting",
	StateFailed:       "failed",
	StateCrashLoop:    "crash-loop",
	StateDisabled:     "disabled",
	StateClosed:       "closed",
	StateNeedsAuth:    "needs-auth",
}

// String returns the state's word, as used by /readyz and the status page.
func (s State) String() string {
	if s >= 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// MarshalText encodes the state as its word.
func (s State) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Down reports whether the state is one of a server that is wanted but
// cannot be reached now: its calls fail or wait, and its last lists stay.
func (s State) Down() bool {
	return s == StateReconnecting || s == StateFailed || s == StateCrashLoop || s == StateNeedsAuth
}
