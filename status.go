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

// The states of a server. They are the words of /readyz.
const (
	StateConnecting State = iota
	StateConnected
	StateReconnecting
	StateFailed
	StateCrashLoop
	StateDisabled
	StateClosed
)

var stateNames = [...]string{
	StateConnecting:   "connecting",
	StateConnected:    "connected",
	StateReconnecting: "reconnecting",
	StateFailed:       "failed",
	StateCrashLoop:    "crash-loop",
	StateDisabled:     "disabled",
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
	// Tools is how many tools the server exposes after filters.
	Tools int
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
	counts := m.view().Counts()
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
		default:
			snap := s.up.Snapshot()
			st.State, st.Since, st.Err = stateOf(snap.State), snap.Since, snap.Err
			st.Instructions, st.ServerInfo = snap.Instructions, snap.ServerInfo
			st.Tools = counts[s.cfg.Name]
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
