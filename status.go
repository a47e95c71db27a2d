package switchboard

import (
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/upstream"
)

// State is a server's state as the manager shows it.
type State int

// The states of a server. All but disconnected and closed are the words of
// /readyz.
const (
	StateConnecting State = iota
	StateConnected
	StateReconnecting
	StateFailed
	StateCrashLoop
	StateDisabled
	StateDisconnected
	StateClosed
)

var stateNames = [...]string{
	StateConnecting:   "connecting",
	StateConnected:    "connected",
	StateReconnecting: "reconnecting",
	StateFailed:       "failed",
	StateCrashLoop:    "crash-loop",
	StateDisabled:     "disabled",
	StateDisconnected: "disconnected",
	StateClosed:       "closed",
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

func stateOf(s upstream.State) State {
	switch s {
	case upstream.Connecting:
		return StateConnecting
	case upstream.Connected:
		return StateConnected
	case upstream.Reconnecting:
		return StateReconnecting
	case upstream.Failed:
		return StateFailed
	case upstream.CrashLoop:
		return StateCrashLoop
	default:
		return StateClosed
	}
}

// ServerStatus is a snapshot of one configured server. It never holds a URL,
// a header or a substituted value.
type ServerStatus struct {
	Name      string
	State     State
	Since     time.Time // when State began
	Transport config.Transport
	Source    string // the config file the server came from
	Required  bool   // whether it counts for readiness
	// Tools, Prompts and Resources count what the server exposes, after
	// filters and collisions.
	Tools, Prompts, Resources int
	// Deferred reports tools served from the persistent cache while the
	// server connects for the first time.
	Deferred bool
	// Collisions lists resource URIs that this server offers but another
	// one, configured first, serves.
	Collisions []string
	// Reconnects counts the connections made after the first.
	Reconnects uint64
	// Err is the last failure, redacted; nil while connected.
	Err error
	// Instructions are the server's initialize instructions.
	Instructions string
	// ServerInfo is the implementation the server reported, if any.
	ServerInfo *mcp.Implementation
}

// Status returns a snapshot of every configured server, in configured order,
// followed by the entries the config rejected (as failed).
func (m *Manager) Status() []ServerStatus {
	m.mu.Lock()
	defer m.mu.Unlock()
	v := m.viewsLocked()
	tools, prompts := v.tools.Counts(), v.prompts.Counts()
	resources, lost := v.resources.Counts(), make(map[string][]string)
	for _, c := range v.resources.Collisions() {
		for _, loser := range c.Losers {
			lost[loser] = append(lost[loser], c.URI)
		}
	}
	out := make([]ServerStatus, 0, len(m.servers))
	for _, s := range m.servers {
		st := ServerStatus{
			Name:      s.cfg.Name,
			Transport: s.cfg.TransportType(),
			Source:    s.cfg.Source,
			Required:  s.cfg.Required,
		}
		switch {
		case s.rejected != nil:
			st.State, st.Err, st.Since = StateFailed, s.rejected, m.created
		case s.up == nil:
			st.State, st.Since = StateDisabled, m.created
		case !s.started && s.failure != nil:
			st.State, st.Err, st.Since = StateFailed, s.failure, m.created
		case !s.started:
			st.State, st.Since = StateDisconnected, m.created
		default:
			snap := s.up.Snapshot()
			st.State, st.Since, st.Err = stateOf(snap.State), snap.Since, snap.Err
			if s.disconnected {
				st.State = StateDisconnected
			}
			st.Instructions, st.ServerInfo, st.Reconnects = snap.Instructions, snap.ServerInfo, snap.Reconnects
			st.Tools, st.Prompts, st.Resources = tools[s.cfg.Name], prompts[s.cfg.Name], resources[s.cfg.Name]
			st.Deferred = len(snap.Tools) == 0 && snap.State == upstream.Connecting && len(s.deferred) > 0
			st.Collisions = lost[s.cfg.Name]
			if s.cleanupErr != nil {
				st.Err = s.cleanupErr
			}
		}
		out = append(out, st)
	}
	return out
}

// Ready reports whether every required server is connected. A disabled
// server never counts; a required entry that the config rejected keeps the
// manager from being ready.
func (m *Manager) Ready() bool {
	return Ready(m.Status())
}

// Ready reports whether statuses, as returned by [Manager.Status], make a
// ready set: every required server that is not disabled is connected.
func Ready(statuses []ServerStatus) bool {
	for _, s := range statuses {
		if s.Required && s.State != StateDisabled && s.State != StateConnected {
			return false
		}
	}
	return true
}

// Servers returns the names of every configured server, in configured order:
// enabled, disabled and rejected.
func (m *Manager) Servers() []string {
	return m.names(func(ServerStatus) bool { return true })
}

// Connected returns the names of the connected servers, in configured order.
func (m *Manager) Connected() []string {
	return m.names(func(s ServerStatus) bool { return s.State == StateConnected })
}

// Failed returns the names of the servers that failed (including crash-loop,
// entries the config rejected, and servers that could not be closed), in
// configured order.
func (m *Manager) Failed() []string {
	return m.names(failed)
}

func failed(s ServerStatus) bool {
	return s.State == StateFailed || s.State == StateCrashLoop || s.Err != nil && s.State != StateConnected && s.State != StateReconnecting
}

// Active returns the names of the servers an agent works with, in
// configured order: the enabled ones, less those that failed unless
// Options.KeepFailed is set, less those disconnected.
func (m *Manager) Active() []string {
	return m.names(func(s ServerStatus) bool {
		switch {
		case s.State == StateDisabled || s.State == StateDisconnected || s.State == StateClosed:
			return false
		case failed(s):
			return m.opts.KeepFailed
		}
		return true
	})
}

// Errors returns the last error of every server that has one, by name. The
// map is a copy.
func (m *Manager) Errors() map[string]error {
	out := make(map[string]error)
	for _, s := range m.Status() {
		if s.Err != nil {
			out[s.Name] = s.Err
		}
	}
	return out
}

func (m *Manager) names(keep func(ServerStatus) bool) []string {
	var out []string
	for _, s := range m.Status() {
		if keep(s) {
			out = append(out, s.Name)
		}
	}
	return out
}
