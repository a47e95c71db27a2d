package upstream

import (
	"fmt"

	"github.com/switchboard-mcp/switchboard/mcpconn"
)

// State is the connectivity state of an [Upstream].
type State = mcpconn.State

// The states of an [Upstream]. The zero value, Disconnected, is the state of
// an upstream that is not running: created and not started yet, or stopped
// by [Upstream.Disconnect].
const (
	Disconnected = mcpconn.StateDisconnected
	Connecting   = mcpconn.StateConnecting
	Connected    = mcpconn.StateConnected
	Reconnecting = mcpconn.StateReconnecting
	Failed       = mcpconn.StateFailed
	CrashLoop    = mcpconn.StateCrashLoop
	Disabled     = mcpconn.StateDisabled
	Closed       = mcpconn.StateClosed
	NeedsAuth    = mcpconn.StateNeedsAuth
)

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
