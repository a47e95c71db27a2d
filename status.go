package switchboard

import (
	"encoding/json"
	"regexp"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/oauth"
	"github.com/switchboard-mcp/switchboard/mcpconn"
)

// State is a server's connectivity state.
type State = mcpconn.State

// The states of a server; see [mcpconn.State].
const (
	StateDisconnected = mcpconn.StateDisconnected
	StateConnecting   = mcpconn.StateConnecting
	StateConnected    = mcpconn.StateConnected
	StateReconnecting = mcpconn.StateReconnecting
	StateFailed       = mcpconn.StateFailed
	StateCrashLoop    = mcpconn.StateCrashLoop
	StateDisabled     = mcpconn.StateDisabled
	StateClosed       = mcpconn.StateClosed
	StateNeedsAuth    = mcpconn.StateNeedsAuth
)

// ServerStatus is a snapshot of one configured server. It never holds a URL,
// a header or a substituted value.
type ServerStatus struct {
	Name      string
	State     State
	Since     time.Time // when State began
	Transport config.Transport
	Source    string // the config file the server came from
	Required  bool   // whether it counts for readiness
	// Rejected reports an entry that the config rejected: nothing runs,
	// and Err says why.
	Rejected bool
	// Active reports whether an agent works with the server: see
	// [Status.Active].
	Active bool
	// Tools, Prompts and Resources count what the server exposes, after
	// filters and collisions. A server that is down keeps its last lists.
	Tools, Prompts, Resources int
	// Deferred reports tools served from the persistent cache until the
	// server lists its own.
	Deferred bool
	// Collisions lists resource URIs that this server offers but another
	// one, configured first, serves.
	Collisions []string
	// Trespasses lists the public names of the tools and prompts that this
	// server lists in another server's namespace (`victim__echo`, from a
	// server with no prefix, while a server has the prefix "victim"),
	// sorted: they
	// are not exposed, and the name keeps meaning the other server's.
	Trespasses []string
	// Pinning is the server's tool pinning mode: off, warn or enforce.
	Pinning config.PinningMode
	// PinChanges are the server's tools that are not as pinned: changed,
	// new, removed, or that cannot be pinned, without their definitions
	// (see [Manager.Pins]). Under enforce all but the removed ones are
	// Held, except the cached tools of a server not pinned yet, which it
	// pins when it lists its own. Empty when every tool is as pinned.
	PinChanges []ToolPin
	// Reconnects counts the connections made after the first.
	Reconnects uint64
	// Err is the last failure, redacted; nil while connected.
	Err error
	// Instructions are the server's initialize instructions. While its
	// tools are Deferred and it has not connected yet, they are the ones it
	// reported when its tools were cached (see ServerInfo).
	Instructions string
	// ServerInfo is the implementation the server reported, if any. While
	// its tools are Deferred (shown from the persistent cache) and it has
	// not connected yet, it is the one the cache kept with those tools
	// (without icons), so that tool search and gateways' search_tools
	// describe the server as when it is connected; its own replaces it
	// when it connects.
	ServerInfo *mcp.Implementation
	// Capabilities are what the server said it offers in its last
	// handshake; nil before the first.
	Capabilities *mcp.ServerCapabilities
	// PID is the process ID of a connected stdio server, or 0.
	PID int
	// SessionProcesses counts the processes of a processPerSession server
	// that client sessions have of their own, besides the shared one.
	SessionProcesses int
	// FailedBefore, while the server makes its first connection, is the
	// error (as ErrorText shows it) with which it failed the last time it
	// was started with the same config, within the hour, before it listed
	// any tool, as the persistent cache kept it: a host that would wait
	// for a server with nothing to show (no Deferred tools) knows that
	// this one may fail again. "" if it did not, or nothing is cached.
	FailedBefore string
	// SkippedLines counts the lines the server's processes wrote to stdout
	// that were not JSON-RPC messages (a banner, a stray print, a log
	// line), since the manager was created: they were skipped, and the
	// session went on, as the official TypeScript and Python SDKs do.
	SkippedLines uint64
}

// Held returns the public names of the server's held tools (see
// Options.Pinning).
func (s ServerStatus) Held() []string {
	var out []string
	for _, tp := range s.PinChanges {
		if tp.Held {
			out = append(out, tp.Name)
		}
	}
	return out
}

// LoginCommand returns the command line that logs in to the server, for
// one in StateNeedsAuth: its name, and its config file unless that is
// found without a flag.
func (s ServerStatus) LoginCommand() string {
	return oauth.LoginCommand(s.Name, s.Source, nil)
}

// ErrorText returns the text of s.Err for people (status tables and pages),
// "" if none: redacted, as every error is, and with every URL, network
// address and looked-up host name replaced, for a status shows no server
// address.
func (s ServerStatus) ErrorText() string {
	if s.Err == nil {
		return ""
	}
	return scrubAddresses(s.Err.Error())
}

// scrubAddresses replaces in text, an error's, every URL, network address
// and looked-up host name.
func scrubAddresses(text string) string {
	text = urlPattern.ReplaceAllString(text, "<url>")
	text = dialPattern.ReplaceAllString(text, "$1 <address>: ")
	return lookupPattern.ReplaceAllString(text, "lookup <host>: ")
}

var (
	// urlPattern matches a URL, up to a quote or a space.
	urlPattern = regexp.MustCompile(`[a-zA-Z][a-zA-Z0-9+.-]*://[^\s"'<>]+`)
	// dialPattern matches the address of a net.OpError: "dial tcp HOST:PORT: ".
	dialPattern = regexp.MustCompile(`\b((?:dial|read|write) (?:tcp|udp|unix)[46]?) \S+?: `)
	// lookupPattern matches a DNS failure: "lookup HOST on RESOLVER:".
	lookupPattern = regexp.MustCompile(`\blookup \S+?(?: on \S+)?: `)
)

// clone returns a copy of s that shares nothing with it.
func (s ServerStatus) clone() ServerStatus {
	s.Collisions = append([]string(nil), s.Collisions...)
	s.Trespasses = append([]string(nil), s.Trespasses...)
	s.PinChanges = slices.Clone(s.PinChanges)
	for i := range s.PinChanges {
		s.PinChanges[i] = s.PinChanges[i].clone()
	}
	if s.ServerInfo != nil {
		info := *s.ServerInfo
		info.Icons = append([]mcp.Icon(nil), info.Icons...)
		s.ServerInfo = &info
	}
	s.Capabilities = cloneCapabilities(s.Capabilities)
	return s
}

// cloneCapabilities returns a deep copy of c: capabilities are small, and
// hold maps of anything.
func cloneCapabilities(c *mcp.ServerCapabilities) *mcp.ServerCapabilities {
	if c == nil {
		return nil
	}
	data, err := json.Marshal(c)
	var out mcp.ServerCapabilities
	if err != nil || json.Unmarshal(data, &out) != nil {
		return &mcp.ServerCapabilities{}
	}
	return &out
}

// Status returns a snapshot of every configured server, in configured order,
// followed by the entries the config rejected (as failed). Its methods
// answer the usual questions of it: which are connected, which failed,
// whether the manager is ready.
func (m *Manager) Status() Status {
	v := m.view.Load()
	out := make(Status, len(v.statuses))
	for i, s := range v.statuses {
		out[i] = s.clone()
		out[i].Active = s.active(m.opts.KeepFailed)
		up := v.byName[s.Name]
		if up == nil {
			continue // an entry the config rejected
		}
		if up.PerSession() {
			out[i].SessionProcesses = len(m.perSession.ofServer(s.Name))
		}
		n := m.notes.of(s.Name)
		out[i].SkippedLines = n.lines.Load()
		if f := n.failedBefore.Load(); f != nil && s.State == StateConnecting {
			out[i].FailedBefore = *f
		}
	}
	return out
}

// Status is a snapshot of every configured server, as [Manager.Status]
// returns it. The name lists it gives keep its order.
type Status []ServerStatus

// Names returns the name of every server: enabled, disabled and rejected.
func (st Status) Names() []string { return st.names(func(ServerStatus) bool { return true }) }

// Connected returns the names of the connected servers.
func (st Status) Connected() []string {
	return st.names(func(s ServerStatus) bool { return s.State == StateConnected })
}

// Failed returns the names of the servers that failed: including
// crash-loop, needs-auth, entries the config rejected, and servers
// disconnected after a failure.
func (st Status) Failed() []string { return st.names(ServerStatus.failed) }

// Active returns the names of the servers an agent works with: the enabled
// ones, less those that failed unless Options.KeepFailed is set, less
// those disconnected.
func (st Status) Active() []string { return st.names(func(s ServerStatus) bool { return s.Active }) }

// Errors returns the last error of every server that has one, by name.
func (st Status) Errors() map[string]error {
	out := make(map[string]error)
	for _, s := range st {
		if s.Err != nil {
			out[s.Name] = s.Err
		}
	}
	return out
}

// Ready reports whether every required server that is not disabled is
// connected; a required entry that the config rejected keeps it from being
// ready.
func (st Status) Ready() bool {
	for _, s := range st {
		if s.Required && s.State != StateDisabled && s.State != StateConnected {
			return false
		}
	}
	return true
}

// Server returns the status of the server called name.
func (st Status) Server(name string) (ServerStatus, bool) {
	for _, s := range st {
		if s.Name == name {
			return s, true
		}
	}
	return ServerStatus{}, false
}

func (st Status) names(keep func(ServerStatus) bool) []string {
	var out []string
	for _, s := range st {
		if keep(s) {
			out = append(out, s.Name)
		}
	}
	return out
}

func (s ServerStatus) failed() bool {
	return s.State == StateFailed || s.State == StateCrashLoop || s.State == StateNeedsAuth || s.Err != nil && s.State != StateConnected && s.State != StateReconnecting
}

// active reports whether an agent works with the server: see
// [Status.Active].
func (s ServerStatus) active(keepFailed bool) bool {
	switch {
	case s.State == StateDisabled || s.State == StateDisconnected || s.State == StateClosed:
		return false
	case s.failed():
		return keepFailed
	}
	return true
}
