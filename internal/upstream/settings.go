package upstream

import (
	"sync/atomic"

	"github.com/switchboard-mcp/switchboard/config"
)

// settings are a config entry and what it decides for requests.
type settings struct {
	cfg    config.Server // unresolved; never mutated
	slots  chan struct{} // one per call in flight; see config.Server.MaxInFlight
	serial chan struct{} // size 1 when requests are serialized, else nil
}

func newSettings(srv config.Server) *settings {
	s := &settings{cfg: srv.Clone(), slots: make(chan struct{}, srv.InFlightLimit())}
	if srv.SerializeRequests {
		s.serial = make(chan struct{}, 1)
	}
	return s
}

// A settingsRef holds the settings of an upstream. Reconfigure replaces them
// whole; every part reads them once per request or attempt.
type settingsRef = atomic.Pointer[settings]
