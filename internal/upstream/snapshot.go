package upstream

import (
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/config"
)

// Snapshot is a copy of an upstream's observable state.
type Snapshot struct {
	Name string
	// Config is the unresolved config, shared: treat it as read-only.
	Config config.Server
	State  State
	Since  time.Time
	// Err is the last failure, redacted; nil while connected.
	Err error
	// Tools is the server's raw, unfiltered tool list, shared: treat it as
	// read-only. Whatever the state, it holds the last list known: stale
	// tools stay listed while the server is down. Cached reports that it
	// came from Seed, and the server has not listed its own yet. Prompts,
	// Resources and Templates are the other lists, likewise shared.
	Tools     []*mcp.Tool
	Cached    bool
	Prompts   []*mcp.Prompt
	Resources []*mcp.Resource
	Templates []*mcp.ResourceTemplate
	// Instructions are the server's initialize instructions.
	Instructions string
	// ServerInfo is the implementation the server reported, if any.
	ServerInfo *mcp.Implementation
	// Capabilities are what the server said it offers, shared: treat them
	// as read-only. Nil before its first session.
	Capabilities *mcp.ServerCapabilities
	// ProtocolVersion is the negotiated protocol version.
	ProtocolVersion string
	// Reconnects counts the connections made after the first.
	Reconnects uint64
	// PID is the process ID of a stdio server's current process, or 0.
	PID int
}

// An Event reports a change in an upstream, with the upstream's state right
// after it.
type Event struct {
	Kind EventKind
	At   time.Time
	// Snapshot is the upstream as of the event: whoever hears it needs
	// nothing else, and never calls back into the upstream.
	Snapshot Snapshot
	// From is the state an EventState leaves.
	From State
	// Err is the redacted cause of an EventList that failed or of an
	// EventAttemptFailed. The cause of a transition is Snapshot.Err.
	Err error
	// List is the list of an EventList.
	List List
	// URI is the resource of an EventResourceUpdated.
	URI string
}
