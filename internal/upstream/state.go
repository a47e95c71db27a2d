package upstream

import (
	"fmt"
	"time"
)

// State is the connectivity state of an [Upstream].
type State int

// The states of an [Upstream]. The zero value, Connecting, is the state of an
// upstream that has been created and is about to connect.
const (
	Connecting State = iota
	Connected
	Reconnecting
	Failed
	CrashLoop
	Closed
)

var stateNames = [...]string{
	Connecting:   "connecting",
	Connected:    "connected",
	Reconnecting: "reconnecting",
	Failed:       "failed",
	CrashLoop:    "crash-loop",
	Closed:       "closed",
}

// String returns the state's name as shown by /readyz and the status page.
func (s State) String() string {
	if s >= 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// Settled reports whether the state is one that a connection attempt ends in.
func (s State) Settled() bool {
	return s != Connecting && s != Reconnecting
}

// An Event reports one state transition of an upstream.
type Event struct {
	Server string
	From   State
	To     State
	At     time.Time
	// Err is the redacted cause of a transition to a failure state, or nil.
	Err error
}
