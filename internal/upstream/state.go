package upstream

import (
	"fmt"
)

// State is the connectivity state of an [Upstream].
type State int

// The states of an [Upstream]. The zero value, Disconnected, is the state of
// an upstream that is not running: created and not started yet, or stopped
// by [Upstream.Disconnect].
const (
	Disconnected State = iota
	Connecting
	Connected
	Reconnecting
	Failed
	CrashLoop
	Disabled
	Closed
	// NeedsAuth is a server that asks for a login that no stored token
	// answers: it waits for `switchboard login`.
	NeedsAuth
)

var stateNames = [...]string{
	Disconnected: "disconnected",
	Connecting:   "connecting",
	Connected:    "connected",
	Reconnecting: "reconnecting",
	Failed:       "failed",
	CrashLoop:    "crash-loop",
	Disabled:     "disabled",
	Closed:       "closed",
	NeedsAuth:    "needs-auth",
}

// String returns the state's name as shown by /readyz and the status page.
func (s State) String() string {
	if s >= 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// Down reports whether the state is one of a server that is wanted but
// cannot be reached now: its calls fail or wait, and its last lists stay.
func (s State) Down() bool {
	return s == Reconnecting || s == Failed || s == CrashLoop || s == NeedsAuth
}

// EventKind says what an [Event] reports.
type EventKind int

const (
	// EventState is a transition, From one state to Snapshot.State.
	EventState EventKind = iota
	// EventList says that one of the server's lists (List) was fetched and
	// replaced, or, with Err set, that it could not be fetched even after
	// retries: the previous list stays.
	EventList
	// EventAttemptFailed says that a connection attempt failed with Err. The
	// state may be unchanged: a server that stays down fails attempt after
	// attempt.
	EventAttemptFailed
	// EventResourceUpdated says that the subscribed resource URI changed.
	EventResourceUpdated
	// EventConfig says that the config changed (see [Upstream.Reconfigure]).
	EventConfig
)

// A List names one of a server's lists.
type List int

// The lists of a server.
const (
	Tools List = iota
	Prompts
	Resources // resources and resource templates
	numLists
)

var listNames = [...]string{Tools: "tools", Prompts: "prompts", Resources: "resources"}

// String returns "tools", "prompts" or "resources".
func (l List) String() string {
	if l >= 0 && l < numLists {
		return listNames[l]
	}
	return fmt.Sprintf("List(%d)", int(l))
}
