package switchboard

import (
	"sync"
	"sync/atomic"
)

// skippedLines counts, per server name, the lines its processes wrote to
// stdout that were not JSON-RPC messages (see ServerStatus.SkippedLines).
// A server's processes, shared or per session, share its count, which
// lives as long as the manager: a server removed and added again counts
// on.
type skippedLines struct {
	mu       sync.Mutex
	byServer map[string]*noise
}

// noise is what a manager knows of one server's skipped lines.
type noise struct {
	lines atomic.Uint64
	// known reports that the tool cache says a warning told of them, for
	// the config connected: the log tells of them at Info, not Warn.
	known atomic.Bool
	// recorded reports that the cache was asked to say so.
	recorded atomic.Bool
}

// of returns the noise of server, made on first use.
func (s *skippedLines) of(server string) *noise {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.byServer[server]
	if n == nil {
		if s.byServer == nil {
			s.byServer = make(map[string]*noise)
		}
		n = new(noise)
		s.byServer[server] = n
	}
	return n
}

// skipHook returns the OnSkippedLine of server's upstreams: it counts the
// line, and has the cache record the first that a warning tells of, so
// that the next manager on the same config (a one-shot command's next run)
// warns no more.
func (m *Manager) skipHook(server string) func() {
	n := m.skipped.of(server)
	return func() {
		n.lines.Add(1)
		if n.known.Load() || !n.recorded.CompareAndSwap(false, true) {
			return
		}
		if up := m.view.Load().byName[server]; up != nil {
			cfg := up.Config()
			m.writes.reportNoise(server, cfg.Fingerprint())
		}
	}
}

// quietNoise returns the QuietNoise of server's upstreams.
func (m *Manager) quietNoise(server string) func() bool { return m.skipped.of(server).known.Load }
