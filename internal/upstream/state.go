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

// EventKind says what an [Event] reports.
type EventKind int

const (
	// EventState is a transition, From one state To another.
	EventState EventKind = iota
	// EventList says that one of the server's lists (List) was replaced.
	EventList
	// EventReloadFailed says that List could not be reloaded after the
	// server said it changed, even after retries; the previous list stays.
	EventReloadFailed
	// EventResourceUpdated says that the subscribed resource URI changed.
	EventResourceUpdated
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

// An Event reports a change in an upstream.
type Event struct {
	Kind   EventKind
	Server string
	At     time.Time
	// From and To are the states of an EventState.
	From State
	To   State
	// Err is the redacted cause of a transition to a failure state, or of
	// an EventReloadFailed.
	Err error
	// List is the list of an EventList or EventReloadFailed.
	List List
	// URI is the resource of an EventResourceUpdated.
	URI string
}
